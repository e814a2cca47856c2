"""Fixtures for the infrastructure tests: the SAM CLI's own virtual environment and the translated template."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = REPO_ROOT / "template.yaml"
# aws-sam-cli pins older pydantic and click than the service, so `make sam-venv` gives it its own environment.
SAM_VENV = REPO_ROOT / ".venv-sam"
REGION = "us-east-1"


def sam_env() -> dict[str, str]:
    return {**os.environ, "SAM_CLI_TELEMETRY": "0", "AWS_DEFAULT_REGION": REGION}


@pytest.fixture(scope="session")
def sam_venv() -> Path:
    if not (SAM_VENV / "bin" / "sam").is_file():
        pytest.fail(f"{SAM_VENV} has no sam: run `make sam-venv` (make test does)")
    return SAM_VENV


@pytest.fixture(scope="session")
def translated(sam_venv: Path) -> dict[str, Any]:
    """template.yaml as CloudFormation, after the SAM transform."""
    script = Path(__file__).with_name("sam_translate.py")
    result = subprocess.run(
        [str(sam_venv / "bin" / "python"), str(script), str(TEMPLATE)],
        capture_output=True,
        text=True,
        env=sam_env(),
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    document: dict[str, Any] = json.loads(result.stdout)
    return document


@pytest.fixture(scope="session")
def python_bin() -> Path:
    return Path(sys.executable).parent
