"""`--help` as a user reads it: every option's default is said, and a description is a whole sentence
(issue 26 item 6: `toolrec bench --help` showed no defaults, `python -m infra.deploy --help` ended mid-sentence)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

TOOLREC = str(Path(sys.executable).parent / "toolrec")


def help_text(*command: str) -> str:
    ran = subprocess.run([*command, "--help"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=60, check=True)
    return " ".join(ran.stdout.split())  # argparse wraps lines at the terminal's width


def test_bench_help_says_each_default() -> None:
    said = help_text(TOOLREC, "bench")
    assert "catalog sizes, comma-separated (default: 1000,10000,100000)" in said
    assert "queries per measurement (default: 500)" in said


@pytest.mark.parametrize("module", ["infra.deploy", "infra.package", "infra.publish", "infra.smoke"])
def test_each_infra_command_describes_itself_in_a_whole_sentence(module: str) -> None:
    said = help_text(sys.executable, "-m", module)
    description = said.split(" options: ")[0].split("] ")[-1]
    assert description.endswith("."), description
