"""The Lambda package (infra/package.py): under the size limit, only runtime code, and a clean python3.12 with
only the package on its path answers every event in events/ end to end (index in moto S3, policy in moto
DynamoDB, both served over HTTP by moto_server)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from build_index.cli import main as toolrec
from handler.index.store import parse_s3_url
from handler.inference.embedder import OnnxEmbedder
from handler.inference.model_files import read_spec
from infra.package import (
    EXCLUDED,
    LAMBDA_TASK_ROOT,
    MAX_UNZIPPED_BYTES,
    build,
    lambda_python,
    locked,
    runtime_requirements,
)
from infra.package import unzipped_size as package_size
from tests.infra.conftest import REPO_ROOT
from tests.support.moto_server import CREDENTIALS, moto_server
from tests.support.serving import demo_tools, publish_tools

EVENTS = REPO_ROOT / "events"
EVENTS_KEY = "trk_local-events-key"  # the bearer token in events/*.json
NOT_IN_PACKAGE = ["torch", "pytest", "moto", "uvicorn", "tests", "onnx", "hypothesis", "mypy", "build_index/model",
                  "build_index/demo", "build_index/bench", "build_index/cli.py",
                  "build_index/quality/finetune.py"]  # fmt: skip
# The scheduled refresh's modules, imported in a clean interpreter: what the refresh function needs is packaged.
REFRESH_PROBE = """
import json, sys, sysconfig
sys.path.insert(0, sys.argv[1])
import build_index.refresh.run, build_index.ingest.upstream_headers, build_index.model_prepare
files = [m.__file__ for m in list(sys.modules.values()) if getattr(m, "__file__", None)]
print(json.dumps([f for f in files if not f.startswith((sys.argv[1], sysconfig.get_paths()["stdlib"]))]))
"""


@pytest.fixture(scope="session")
def lambda_package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build(tmp_path_factory.mktemp("lambda") / "package")


def test_lock_pins_every_runtime_dependency() -> None:
    pins = {canonicalize_name(Requirement(line).name): Requirement(line) for line in locked()}
    for requirement in runtime_requirements():
        pin = pins.get(canonicalize_name(requirement.name))
        assert pin is not None, f"{requirement.name} is missing from the lock: python -m infra.package --lock"
        (version,) = [spec.version for spec in pin.specifier]
        assert requirement.specifier.contains(version), f"locked {pin} does not satisfy {requirement}"
    assert not EXCLUDED & set(pins)


def test_package_size_and_contents(lambda_package: Path) -> None:
    size = package_size(lambda_package)
    print(f"lambda package: {size / 2**20:.1f} MB unzipped")
    assert size < MAX_UNZIPPED_BYTES
    assert (lambda_package / "handler" / "lambda_entry.py").is_file()
    for name in NOT_IN_PACKAGE:
        assert not (lambda_package / name).exists(), name
    entry_pyc = lambda_package / "handler" / "__pycache__" / "lambda_entry.cpython-312.pyc"
    assert entry_pyc.is_file()  # compiled in: /var/task is read-only, so Lambda could not cache it
    assert f"{LAMBDA_TASK_ROOT}/handler/lambda_entry.py".encode() in entry_pyc.read_bytes()
    assert str(lambda_package).encode() not in entry_pyc.read_bytes()
    read_spec(lambda_package / "model")  # every model file present with its pinned sha256


def test_clean_interpreter_imports_the_refresh_from_the_package(lambda_package: Path) -> None:
    probe = [lambda_python(), "-I", "-S", "-B", "-c", REFRESH_PROBE, str(lambda_package)]
    result = subprocess.run(probe, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr[-4000:]
    assert json.loads(result.stdout) == []  # nothing came from outside the package


@pytest.fixture
def local_aws(monkeypatch: pytest.MonkeyPatch, embedder: OnnxEmbedder) -> Iterator[dict[str, str]]:
    """moto_server seeded the way an operator seeds a stack: index published, tables filled by `toolrec policy`.
    Yields the function's environment: events/env.json pointed at this moto_server."""
    env: dict[str, str] = json.loads((EVENTS / "env.json").read_text())["Function"]
    with moto_server() as url:
        for name, value in {**CREDENTIALS, "AWS_ENDPOINT_URL": url}.items():
            monkeypatch.setenv(name, value)
        for name, value in env.items():
            if name.startswith("TOOLREC_") and name.endswith("_TABLE"):
                monkeypatch.setenv(name, value)
        bucket, _ = parse_s3_url(env["TOOLREC_INDEX_LOCATION"])
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket=bucket)
        publish_tools(demo_tools(), env["TOOLREC_INDEX_LOCATION"], embedder, s3)
        for args in [
            ["create-tables"],
            ["gateway", "put", "default", "--allow", "*", "--recommendation", "on"],
            ["rule", "put", "--subject", "*", "--rule-id", "everyone", "--effect", "allow", "--tools", "*"],
            ["app", "put", "Slack", "--name", "Slack", "--authorize-url", "https://auth.example.test/slack"],
            ["connection", "put", "ana", "Slack", "--account", "ana@acme.test", "--scope", "chat:write"],
            ["key", "create", "--key", EVENTS_KEY, "--key-id", "events"],
        ]:
            assert toolrec(["policy", "--dynamodb", *args]) == 0
        yield {**env, **CREDENTIALS, "AWS_ENDPOINT_URL": url}


def _invoke_all(package: Path, env: dict[str, str]) -> dict[str, Any]:
    script = Path(__file__).with_name("lambda_invoke.py")
    result = subprocess.run(
        [lambda_python(), "-I", "-S", "-B", str(script), str(package), str(EVENTS)],
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"], **env},
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    output: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return output


def _body(response: dict[str, Any]) -> Any:
    return json.loads(response["body"])


def test_clean_interpreter_answers_every_event(lambda_package: Path, local_aws: dict[str, str], tmp_path: Path) -> None:
    env = {**local_aws, "TOOLREC_MODEL_DIR": str(lambda_package / "model"), "TOOLREC_INDEX_CACHE_DIR": str(tmp_path)}
    output = _invoke_all(lambda_package, env)
    print(f"cold start (import + init): {output['init_ms']:.0f} ms")
    assert output["imported_from_outside"] == []
    responses = output["responses"]
    assert set(responses) == {p.name for p in EVENTS.glob("*.json")} - {"env.json"}

    assert responses["healthz.json"]["statusCode"] == 200
    select = responses["select.json"]
    assert select["statusCode"] == 200, select
    results = _body(select)["results"]
    assert [r["task"] for r in results] == json.loads(json.loads((EVENTS / "select.json").read_text())["body"])["tasks"]
    assert any(s["tool_name"].startswith("Slack.") for s in results[0]["suggestions"])
    assert results[1]["suggestions"][0]["tool_name"].startswith("GitHub.")
    assert responses["search.json"]["statusCode"] == 200
    assert _body(responses["search.json"])["results"][0]["tool_name"].startswith("Jira.")
    apps = _body(responses["apps.json"])
    assert responses["apps.json"]["statusCode"] == 200
    slack = next(app for app in apps["apps"] if app["app_id"] == "Slack")  # ana holds chat:write only
    assert slack["account"] == "ana@acme.test" and not slack["connected"]
    assert "Slack.SendMessage" not in {p["tool_name"] for p in slack["needs_authorization"]}
    execute = responses["execute.json"]  # bob has no Slack connection: nothing runs, authorization is required
    assert execute["statusCode"] == 403, execute
    assert _body(execute)["name"] == "authorization_required"
    for provider in ("anthropic", "openai"):
        listed = responses[f"{provider}_tools.json"]
        assert listed["statusCode"] == 200, listed
        assert (len(_body(listed)["tools"]), _body(listed)["total"]) == (96, 96)  # every demo tool, deferred
    claude = responses["anthropic_search.json"]
    assert claude["statusCode"] == 200, claude
    assert _body(claude)["tool_result"]["content"][0]["tool_name"].startswith("Slack_")
    gpt = responses["openai_search.json"]
    assert gpt["statusCode"] == 200, gpt
    assert _body(gpt)["tool_search_output"]["tools"][0]["name"].startswith("GitHub_")
    mcp = responses["mcp_tools_list.json"]
    assert mcp["statusCode"] == 200, mcp
    names = [tool["name"] for tool in _body(mcp)["result"]["tools"]]
    assert names == ["Toolrec_SelectTools", "Toolrec_UseTool", "Toolrec_ListApps"]
    # The console's page and files ship in the package (handler/console/static) and its usage view reads the
    # DynamoDB query log the selects above wrote (events run in name order: usage.json after select.json).
    for name, media_type in [("console.json", "text/html"), ("console_js.json", "text/javascript")]:
        page = responses[name]
        headers = {key.lower(): value for key, value in page["headers"].items()}
        assert page["statusCode"] == 200, page
        assert headers["content-type"].startswith(media_type)
        assert "default-src 'self'" in headers["content-security-policy"]
    usage = responses["usage.json"]
    assert usage["statusCode"] == 200, usage
    assert len(_body(usage)["days"]) == 7 and _body(usage)["recommendations"] >= 1
