"""The CI workflow: valid for GitHub's schema, deploys every tenant after the tests, drift-checks every stage
nightly, and only calls commands and files that exist here."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.tenant import load_tenant, tenant_names
from tests.infra.conftest import REPO_ROOT

WORKFLOW = REPO_ROOT / ".github" / "workflows" / "ci.yml"


@pytest.fixture(scope="module")
def workflow() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text())
    return document


def test_matches_the_github_workflow_schema(python_bin: Path) -> None:
    result = subprocess.run(
        [str(python_bin / "check-jsonschema"), "--builtin-schema", "vendor.github-workflows", str(WORKFLOW)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_deploys_every_tenant_after_the_tests(workflow: dict[str, Any]) -> None:
    deploy = workflow["jobs"]["deploy"]
    assert deploy["needs"] == "test"
    assert deploy["strategy"]["matrix"]["tenant"] == tenant_names()
    assert "github.ref == 'refs/heads/main'" in deploy["if"]
    runs = [step["run"] for step in deploy["steps"] if "run" in step]
    assert '.venv/bin/python -m infra.deploy --tenant "$TENANT"' in runs


def test_nightly_drift_check_of_every_stage(workflow: dict[str, Any]) -> None:
    assert workflow[True]["schedule"]  # YAML 1.1 reads the key `on` as True
    drift = workflow["jobs"]["drift"]
    assert "schedule" in drift["if"]
    assert drift["strategy"]["matrix"]["tenant"] == tenant_names()
    (script,) = [step["run"] for step in drift["steps"] if "toolrec drift" in step.get("run", "")]
    golden = re.search(r'--golden "([^"]+)"', script)
    assert golden is not None
    for name in tenant_names():  # the path the job builds is the one each tenant file names
        assert golden.group(1).replace("$TENANT", name) == str(load_tenant(name).drift.golden)


def test_make_targets_it_calls_exist(workflow: dict[str, Any]) -> None:
    makefile = (REPO_ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([\w./-]+|\$\(\w+\)/[\w./-]+):", makefile, flags=re.MULTILINE))
    targets = {t.replace("$(BIN)", ".venv/bin").replace("$(SAM_VENV)", ".venv-sam") for t in targets}
    runs = [step["run"] for job in workflow["jobs"].values() for step in job["steps"] if "run" in step]
    for run in runs:
        for line in run.splitlines():
            if line.startswith("make "):
                assert set(line.split()[1:]) <= targets, line
