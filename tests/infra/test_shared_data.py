"""A clone without ../shared: the tests that read it skip and say why; CI (.ci/run) turns that skip into a failure."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT

# A test that needs the shared data (through the shared_dir fixture) and costs nothing once it is skipped.
NEEDS_SHARED = "tests/unit/test_bm25_baselines.py"


def run_without_shared(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    missing = tmp_path / "no-shared-here"
    inherited = {k: v for k, v in os.environ.items() if k != "TOOLREC_REQUIRE_SHARED"}  # CI sets it for us
    variables = {**inherited, "TOOLREC_SHARED_DIR": str(missing), **env}
    command = [sys.executable, "-m", "pytest", NEEDS_SHARED, "-q", "-p", "no:cacheprovider", "-rs"]
    return subprocess.run(
        command, cwd=REPO_ROOT, env=variables, capture_output=True, text=True, timeout=300, check=False
    )


def test_a_missing_shared_folder_skips_with_the_reason(tmp_path: Path) -> None:
    result = run_without_shared(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 skipped" in result.stdout and "no-shared-here is missing" in result.stdout
    assert "failed" not in result.stdout


def test_ci_requires_the_shared_folder(tmp_path: Path) -> None:
    result = run_without_shared(tmp_path, TOOLREC_REQUIRE_SHARED="1")
    assert result.returncode == 1 and "2 errors" in result.stdout, result.stdout + result.stderr
    assert "TOOLREC_REQUIRE_SHARED=1 says it must be there" in result.stdout
    assert "export TOOLREC_REQUIRE_SHARED=1" in (REPO_ROOT / ".ci" / "run").read_text()
