"""A rule, gateway or pin that names no tool or app of the served catalog is reported at load (a warning), on
``/healthz`` and by ``toolrec policy check``, each with the nearest name (issue 33 item 7, PRODUCT.md §4). Before, a
hand-edited deny of ``Slack.SendMesage`` loaded silently and the tool stayed usable; nothing said so."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from mangum import Mangum
from moto import mock_aws

from build_index.ops.loopback import serve_subprocess
from handler.composition import build_app
from handler.policy.dynamodb_store import DynamoPolicyStore, TableNames
from handler.policy.model import AccessRule, Gateway
from handler.ranking.query import Embedder
from handler.settings import Settings
from tests.support.servers import serve
from tests.support.serving import (
    API_KEY,
    apigw_event,
    demo_tools,
    file_settings,
    invoke,
    lambda_thread_loop,
    publish_tools,
    write_test_policy,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
SLACK_TYPO = {"record": "access rule no-slack-typo", "field": "tools", "name": "Slack.SendMesage"}
STRIPE_TYPO = {"record": "gateway pay", "field": "allowed", "name": "Strpe.*"}
GITHUB_TYPO = {"record": "gateway default", "field": "pinned", "name": "GitHub.CreateIsue"}


def _unknown(base: str) -> list[dict[str, Any]]:
    health = httpx.get(f"{base}/healthz", timeout=30)
    assert health.status_code == 200, health.text
    names: list[dict[str, Any]] = health.json()["policy_unknown_names"]
    return names


def _policy_check(policy: Path, index: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "build_index.cli", "policy", "--file", str(policy), "check", "--index", str(index)]
    return subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT, timeout=120, check=False)


def _wait_for(log: Path, text: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while text not in (printed := log.read_text(errors="replace")):
        assert time.monotonic() < deadline, f"{text!r} never logged: {printed[-2000:]}"
        time.sleep(0.1)


def test_names_no_tool_holds_are_reported_at_load_on_healthz_and_by_the_cli(demo_index: Path, tmp_path: Path) -> None:
    policy, log = write_test_policy(tmp_path / "policy.json"), tmp_path / "serve.log"
    document = json.loads(policy.read_text(encoding="utf-8"))  # edited by hand, as toolrec policy would refuse it
    deny = {"rule_id": "no-slack-typo", "subject": "demo-user", "effect": "deny", "tools": [SLACK_TYPO["name"]]}
    document["access_rules"].append(deny)
    document["gateways"].append({"gateway_id": "pay", "allowed": [STRIPE_TYPO["name"]]})
    policy.write_text(json.dumps(document), encoding="utf-8")

    args = ["--root", str(tmp_path), "--index", str(demo_index), "--policy", str(policy)]
    with serve_subprocess(args, {"TOOLREC_API_KEY": API_KEY}, log_path=log) as (base, _):
        _wait_for(log, "'Slack.SendMesage' names no tool or app of the catalog — did you mean 'Slack.SendMessage'?")
        _wait_for(log, "'Strpe.*' names no tool or app of the catalog — did you mean 'Stripe.*'?")
        assert _unknown(base) == [
            {**STRIPE_TYPO, "nearest": "Stripe.*"},
            {**SLACK_TYPO, "nearest": "Slack.SendMessage"},
        ]

        # A hand edit while serving is checked when the file is read again.
        document["gateways"][0]["pinned"] = [GITHUB_TYPO["name"]]
        policy.write_text(json.dumps(document), encoding="utf-8")
        assert {**GITHUB_TYPO, "nearest": "GitHub.CreateIssue"} in _unknown(base)
        _wait_for(log, "'GitHub.CreateIsue' names no tool or app of the catalog — did you mean 'GitHub.CreateIssue'?")

        checked = _policy_check(policy, demo_index)
        assert checked.returncode == 1, checked.stderr
        assert "3 name(s) match no tool or app of the index" in checked.stderr
        assert (
            "access rule no-slack-typo tools: 'Slack.SendMesage' names no tool or app of the catalog" in checked.stderr
        )
        assert "— did you mean 'Slack.SendMessage'?" in checked.stderr

        del document["gateways"][0]["pinned"], document["gateways"][-1], document["access_rules"][-1]
        policy.write_text(json.dumps(document), encoding="utf-8")
        assert _unknown(base) == []
    fixed = _policy_check(policy, demo_index)
    assert fixed.returncode == 0 and "every pattern and pin of the policy matches a tool" in fixed.stdout, fixed.stderr


TABLES = {
    "TOOLREC_POLICY_TABLE": "toolrec-policy",
    "TOOLREC_CONNECTIONS_TABLE": "toolrec-connections",
    "TOOLREC_API_KEYS_TABLE": "toolrec-api-keys",
    "TOOLREC_QUERY_LOG_TABLE": "toolrec-query-log",
}
BUCKET = "toolrec-index"


@pytest.fixture
def dynamo_policy(monkeypatch: pytest.MonkeyPatch) -> Iterator[DynamoPolicyStore]:
    for name, value in TABLES.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws(), lambda_thread_loop():
        from handler.policy.dynamodb_schema import create_tables

        boto3.client("s3").create_bucket(Bucket=BUCKET)
        client = boto3.client("dynamodb")
        tables = TableNames.of(Settings(index_location="unused", policy_backend="dynamodb"))
        create_tables(client, tables)
        yield DynamoPolicyStore(client, tables)


def test_a_dynamodb_policy_is_checked_on_healthz(
    dynamo_policy: DynamoPolicyStore, embedder: Embedder, tmp_path: Path
) -> None:
    publish_tools(demo_tools(), f"s3://{BUCKET}/demo", embedder, boto3.client("s3"))
    dynamo_policy.put_gateway(Gateway(gateway_id="pay", allowed=("Strpe.*",)))  # as the console would write it
    settings = Settings(
        index_location=f"s3://{BUCKET}/demo",
        index_cache_dir=tmp_path / "cache",
        policy_backend="dynamodb",
        policy_cache_seconds=0,
    )
    handler = Mangum(build_app(settings, embedder=embedder), lifespan="off")
    _, _, health = invoke(handler, apigw_event("GET", "/healthz", key=None))
    assert health["policy_unknown_names"] == [{**STRIPE_TYPO, "nearest": "Stripe.*"}]

    dynamo_policy.put_rule(
        AccessRule(rule_id="no-slack-typo", subject="ana", effect="deny", tools=("Slack.SendMesage",))
    )
    _, _, health = invoke(handler, apigw_event("GET", "/healthz", key=None))
    assert {**SLACK_TYPO, "nearest": "Slack.SendMessage"} in health["policy_unknown_names"]


@contextmanager
def _warnings() -> Iterator[list[str]]:
    """The service's warnings (its JSON handler does not pass them on to pytest's capture)."""
    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    collector = Collect(level=logging.WARNING)
    logging.getLogger("handler").addHandler(collector)
    try:
        yield messages
    finally:
        logging.getLogger("handler").removeHandler(collector)


def test_a_new_build_that_drops_a_named_app_is_reported_when_it_is_swapped_in(
    embedder: Embedder, tmp_path: Path
) -> None:
    index = tmp_path / "index"
    publish_tools(demo_tools(), str(index), embedder)
    policy = write_test_policy(tmp_path / "policy.json")  # gateway support allows Zendesk.* and Slack.SendMessage
    settings = file_settings(str(index), policy, tmp_path / "cache", index_refresh_seconds=0)
    app = build_app(settings, embedder=embedder)
    with serve(app) as base:
        assert _unknown(base) == []
        publish_tools([t for t in demo_tools() if t.app != "Zendesk"], str(index), embedder)
        with _warnings() as logged:
            select = {"tasks": ["send a Slack message"], "user_id": "demo-user"}
            answer = httpx.post(f"{base}/v1/tools/select", json=select, headers={"Authorization": f"Bearer {API_KEY}"})
            assert answer.status_code == 200, answer.text  # the request that swapped the new build in
        assert any("gateway support allowed: 'Zendesk.*' names no tool" in message for message in logged), logged
        unknown = _unknown(base)
        assert [(u["record"], u["field"], u["name"]) for u in unknown] == [("gateway support", "allowed", "Zendesk.*")]
