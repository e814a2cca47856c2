"""A catalog row with a field the format does not know fails `toolrec build` and `toolrec lint` with its file, line and
the known field it most likely meant (issue 33 item 6): a misspelled ``executor`` or ``requirements`` used to be
dropped without a word, building a tool that had lost its executor or its authorization requirement."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
GOOD = {
    "name": "Slack.SendMessage",
    "description": "Send a message to a Slack channel.",
    "input_schema": {"type": "object"},
    "app": "Slack",
}
ROWS = [
    GOOD,
    {**GOOD, "name": "Slack.ListChannels", "executer": {"kind": "http", "target": "http://127.0.0.1:9/"}},
    {**GOOD, "name": "Slack.PinMessage", "requirments": {"authorization": "Slack"}},
    {**GOOD, "name": "Slack.Archive", "executor": {"kind": "http", "target": "http://127.0.0.1:9/", "timeout": 5}},
]


def toolrec(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "build_index.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT, timeout=120, check=False)


@pytest.mark.parametrize("command", ["build", "lint"])
def test_an_unknown_field_is_refused_with_the_nearest_known_one(tmp_path: Path, command: str) -> None:
    catalog = tmp_path / "tools.jsonl"
    catalog.write_text("".join(json.dumps(row) + "\n" for row in ROWS), encoding="utf-8")
    out = tmp_path / "index"
    extra = ["--out", str(out), "--quiet"] if command == "build" else []

    result = toolrec(command, "--catalog", str(catalog), *extra)

    assert result.returncode == 2, result.stderr
    assert f"{catalog}:2: unknown field 'executer' — did you mean 'executor'?" in result.stderr
    assert f"{catalog}:3: unknown field 'requirments' — did you mean 'requirements'?" in result.stderr
    assert f"{catalog}:4: executor: unknown field 'timeout' — did you mean 'timeout_s'?" in result.stderr
    assert f"{catalog}:1:" not in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()
