"""An infra command whose tool fails shows that tool's error, then one line saying what to do, and exits 1: never a
traceback (issue 26 item 2). Each runs the command as a user would, with the tool failing for a real reason: no
stack behind moto_server, no `make` on PATH, no package index for pip."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.infra.conftest import REPO_ROOT
from tests.support.moto_server import CREDENTIALS, moto_server


def run(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=REPO_ROOT, env={**os.environ, **env}, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip


def assert_said_what_to_do(ran: subprocess.CompletedProcess[str], program: str, tool: str) -> str:
    assert ran.returncode == 1, ran.stdout + ran.stderr
    assert "Traceback" not in ran.stderr, ran.stderr
    last = ran.stderr.strip().splitlines()[-1]
    assert last.startswith(f"{program}: `") and f"{tool}` " in last, ran.stderr
    return last


@pytest.mark.usefixtures("sam_venv")
def test_the_api_url_of_a_stack_that_is_not_there_shows_sams_error_and_what_to_do() -> None:
    with moto_server() as aws:
        ran = run("infra.deploy", "--tenant", "acme", "--api-url", env={**CREDENTIALS, "AWS_ENDPOINT_URL": aws})
    last = assert_said_what_to_do(ran, "python -m infra.deploy", "sam list stack-outputs")
    assert "toolrec-acme-prod does not exist" in ran.stderr  # SAM's own words, which were captured and dropped
    assert "is stack toolrec-acme-prod deployed in eu-west-1" in last and "python -m infra.deploy --tenant acme" in last


def test_a_deploy_step_whose_tool_is_missing_says_how_to_get_it(tmp_path: Path) -> None:
    ran = run("infra.deploy", "--tenant", "acme", env={"PATH": str(tmp_path)})  # no `make` anywhere
    last = assert_said_what_to_do(ran, "python -m infra.deploy", "make package")
    assert last.endswith("is not installed: install make"), last
    assert "[1/6] package the function: make package" in ran.stdout


def test_a_failing_deploy_step_shows_its_error_then_what_to_do(tmp_path: Path) -> None:
    fake_make = tmp_path / "make"
    fake_make.write_text('#!/bin/sh\necho "make: *** no python3.12 to compile with" >&2\nexit 2\n')
    fake_make.chmod(0o755)
    ran = run("infra.deploy", "--tenant", "acme", env={"PATH": f"{tmp_path}:{os.environ['PATH']}"})
    last = assert_said_what_to_do(ran, "python -m infra.deploy", "make package")
    assert "make: *** no python3.12 to compile with" in ran.stderr  # the tool's error, as it printed it
    assert "then run python -m infra.deploy --tenant acme again" in last, last


def test_packaging_without_a_package_index_shows_pips_error_and_what_to_do(tmp_path: Path) -> None:
    no_index = {"PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": ""}
    ran = run("infra.package", "--out", str(tmp_path / "lambda"), env=no_index)
    last = assert_said_what_to_do(ran, "python -m infra.package", "-m pip")
    assert "No matching distribution found" in ran.stderr
    assert "python -m infra.package --lock" in last
