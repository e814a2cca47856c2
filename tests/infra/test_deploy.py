"""Per-tenant deploys: the dry run prints the full sequence for both example tenants, its parameters fit the
template, and the steps that do not need AWS run for real: build, publish (to moto_server), smoke (against the
app served on loopback, reading that index)."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from handler.composition import build_app
from handler.inference.embedder import OnnxEmbedder
from infra.deploy import API_URL, parameter_overrides, plan
from infra.smoke import run_smoke
from infra.tenant import load_tenant, tenant_names
from tests.infra.conftest import REPO_ROOT
from tests.support.moto_server import CREDENTIALS, moto_server
from tests.support.servers import serve
from tests.support.serving import API_KEY, file_settings, write_test_policy

EXPECTED_ACME = [
    "make package",
    ".venv/bin/toolrec build --catalog build_index/demo/tools.jsonl --out build/index/acme --quiet",
    ".venv-sam/bin/sam deploy --template-file template.yaml --stack-name toolrec-acme-prod --region eu-west-1"
    " --capabilities CAPABILITY_IAM --resolve-s3 --no-confirm-changeset --no-fail-on-empty-changeset"
    " --parameter-overrides TenantName=acme Stage=prod IndexBucketName=toolrec-acme-prod-index"
    " CreateIndexBucket=true IndexPrefix=index LogLevel=INFO ExecutorFunctionPrefix=acme-tool- EnableTracing=false"
    " 'UpstreamServers=[]' LearnFromUse=true 'RefreshSchedule=rate(1\\ hour)' --tags toolrec:tenant=acme"
    " toolrec:stage=prod",
    ".venv/bin/python -m infra.publish --from build/index/acme --to s3://toolrec-acme-prod-index/index",
    ".venv-sam/bin/sam list stack-outputs --stack-name toolrec-acme-prod --region eu-west-1 --output json",
    ".venv/bin/python -m infra.smoke --url '{ApiUrl}' --tenant acme --expect-build-from build/index/acme",
]
EXPECTED_GLOBEX = [
    "make package",
    ".venv/bin/toolrec build --catalog build_index/demo/tools.jsonl --out build/index/globex --quiet",
    ".venv-sam/bin/sam deploy --template-file template.yaml --stack-name toolrec-globex-staging --region us-east-2"
    " --capabilities CAPABILITY_IAM --resolve-s3 --no-confirm-changeset --no-fail-on-empty-changeset"
    " --parameter-overrides TenantName=globex Stage=staging IndexBucketName=globex-shared-artifacts"
    " CreateIndexBucket=false IndexPrefix=toolrec/index LogLevel=DEBUG ExecutorFunctionPrefix=globex-tools-"
    " EnableTracing=true 'UpstreamServers=[]' LearnFromUse=true 'RefreshSchedule=rate(1\\ hour)'"
    " --tags toolrec:tenant=globex toolrec:stage=staging",
    ".venv/bin/python -m infra.publish --from build/index/globex --to s3://globex-shared-artifacts/toolrec/index",
    ".venv-sam/bin/sam list stack-outputs --stack-name toolrec-globex-staging --region us-east-2 --output json",
    ".venv/bin/python -m infra.smoke --url '{ApiUrl}' --tenant globex --expect-build-from build/index/globex",
]


def _dry_run(tenant: str) -> list[str]:
    result = subprocess.run(
        [sys.executable, "-m", "infra.deploy", "--tenant", tenant, "--dry-run"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return [line for line in result.stdout.splitlines() if not line.startswith("#")]


@pytest.mark.parametrize(("tenant", "expected"), [("acme", EXPECTED_ACME), ("globex", EXPECTED_GLOBEX)])
def test_dry_run_prints_the_full_sequence(tenant: str, expected: list[str]) -> None:
    assert _dry_run(tenant) == expected


def test_unknown_tenant_is_refused() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "infra.deploy", "--tenant", "nobody", "--dry-run"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2
    assert "acme" in result.stderr


@pytest.mark.parametrize("name", tenant_names())
def test_parameters_fit_the_template(name: str, translated: dict[str, Any]) -> None:
    declared = translated["Parameters"]
    overrides = dict(item.split("=", 1) for item in parameter_overrides(load_tenant(name)))
    assert set(overrides) <= set(declared)
    assert {p for p, spec in declared.items() if "Default" not in spec} <= set(overrides)
    for parameter, value in overrides.items():
        spec = declared[parameter]
        if "AllowedValues" in spec:
            assert value in spec["AllowedValues"], parameter
        if "AllowedPattern" in spec:
            assert re.fullmatch(spec["AllowedPattern"], value), parameter
    for catalog in load_tenant(name).catalogs:
        assert (REPO_ROOT / catalog).is_file(), catalog


UPSTREAMS = """
[[upstreams]]
url = "https://crm.example.test/mcp"
app = "Crm"
headers = { Authorization = "Bearer ${secretsmanager:toolrec/acme/crm-token}" }
"""
SAM_PARSE = """
import json, sys
from samcli.cli.types import CfnParameterOverridesType
print(json.dumps(CfnParameterOverridesType().convert(tuple(sys.argv[1:]), None, None)))
"""


def test_a_tenant_with_upstreams_adds_their_tools_and_schedules_their_refresh(
    tmp_path: Path, sam_venv: Path, translated: dict[str, Any]
) -> None:
    text = (REPO_ROOT / "infra" / "tenants" / "acme.toml").read_text()
    (tmp_path / "acme.toml").write_text('refresh_schedule = "rate(15 minutes)"\n' + text + UPSTREAMS)
    tenant = load_tenant("acme", tmp_path)
    steps = plan(tenant)
    refresh = next(step for step in steps if step.argv[1:2] == ("refresh",))
    assert steps[steps.index(refresh) - 1].name == "build the index"
    expected = [{"url": "https://crm.example.test/mcp", "app": "Crm",
                 "headers": {"Authorization": "Bearer ${secretsmanager:toolrec/acme/crm-token}"}}]  # fmt: skip
    assert json.loads(refresh.argv[refresh.argv.index("--upstreams") + 1]) == expected
    # What `sam deploy` itself makes of the overrides (its own parser, in its own environment).
    parsed = subprocess.run(
        [str(sam_venv / "bin" / "python"), "-c", SAM_PARSE, *parameter_overrides(tenant)],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    values = json.loads(parsed.stdout)
    assert json.loads(values["UpstreamServers"]) == expected
    assert values["RefreshSchedule"] == "rate(15 minutes)"
    assert re.fullmatch(translated["Parameters"]["RefreshSchedule"]["AllowedPattern"], values["RefreshSchedule"])


def test_a_tenant_with_a_bad_upstream_is_refused(tmp_path: Path) -> None:
    text = (REPO_ROOT / "infra" / "tenants" / "acme.toml").read_text()
    (tmp_path / "acme.toml").write_text(text + UPSTREAMS.replace("https://", "ftp://"))
    with pytest.raises(ValueError, match="upstream list is not valid"):
        load_tenant("acme", tmp_path)


@pytest.fixture
def aws_on_loopback(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    with moto_server() as url:
        env = {**CREDENTIALS, "AWS_ENDPOINT_URL": url}
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        yield env


def _run(step_line: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    argv = shlex.split(step_line)
    argv[0] = str(REPO_ROOT / argv[0]) if argv[0].startswith(".venv/") else argv[0]
    if argv[0].endswith("/toolrec") and not Path(argv[0]).is_file():
        argv[0] = str(Path(sys.executable).parent / "toolrec")
    if argv[0].endswith("/python"):
        argv[0] = sys.executable
    return subprocess.run(
        argv, cwd=REPO_ROOT, env={**os.environ, **env}, capture_output=True, text=True, timeout=300, check=False
    )


def test_build_publish_and_smoke_steps_run_against_a_local_stack(
    aws_on_loopback: dict[str, str], tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    tenant = load_tenant("acme")
    steps = {step.name: step.line() for step in plan(tenant)}
    boto3.client("s3").create_bucket(Bucket=tenant.index_bucket)
    for name in ["build the index", "publish the index"]:
        result = _run(steps[name], aws_on_loopback)
        assert result.returncode == 0, result.stdout + result.stderr

    settings = file_settings(tenant.index_location, write_test_policy(tmp_path / "policy.json"), tmp_path / "cache")
    smoke_env = {**aws_on_loopback, tenant.smoke.api_key_env: API_KEY}
    with serve(build_app(settings, embedder=embedder)) as url:
        result = _run(steps["smoke test"].replace(shlex.quote(API_URL), url), smoke_env)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "ok   healthz: serving" in result.stdout
        assert "ok   select:" in result.stdout

        wrong_key = run_smoke(url, "trk_not-a-key", tenant.smoke)
        assert [c.ok for c in wrong_key] == [True, False]
        assert "HTTP 401" in wrong_key[1].detail
        stale = run_smoke(url, API_KEY, tenant.smoke, expect_build="20990101T000000Z-000000000000", wait_s=0)
        assert [c.ok for c in stale] == [False]


def test_a_tenant_that_does_not_learn_from_use_says_so_to_the_stack(tmp_path: Path) -> None:
    text = (REPO_ROOT / "infra" / "tenants" / "acme.toml").read_text()
    (tmp_path / "acme.toml").write_text("learn_from_use = false\n" + text)
    overrides = parameter_overrides(load_tenant("acme", tmp_path))
    assert "LearnFromUse=false" in overrides
    assert not any(o.startswith("'RefreshSchedule") for o in overrides)  # no upstreams either: no refresh function
    assert "LearnFromUse=true" in parameter_overrides(load_tenant("acme"))
