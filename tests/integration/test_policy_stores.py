"""Both policy backends (the JSON file and moto-backed DynamoDB) behave the same through the PolicyStore port."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws
from pydantic import ValidationError

from handler.errors import PolicyUnavailableError
from handler.policy import (
    AccessRule,
    ApiKeyRecord,
    AppInfo,
    CachedPolicyStore,
    Connection,
    ExecutionRecord,
    Gateway,
    QueryRecord,
)
from handler.policy.dynamodb_schema import create_tables
from handler.policy.dynamodb_store import DynamoPolicyStore, TableNames
from handler.policy.file_store import FilePolicyStore
from handler.policy.keys import generate_key, hash_key, same_hash

TABLES = TableNames("policy", "connections", "api-keys", "query-log")


@pytest.fixture(params=["file", "dynamodb"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Any]:
    if request.param == "file":
        yield FilePolicyStore(tmp_path / "policy.json")
        return
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_tables(client, TABLES)
        yield DynamoPolicyStore(client, TABLES)


def _query(query_id: str, expires_at: int) -> QueryRecord:
    return QueryRecord(
        query_id=query_id,
        user_id="ana",
        key_id="k1",
        gateway_id="default",
        tasks=("send a message", "open an issue"),
        recommended=(("Slack.SendMessage",), ()),
        created_at=datetime.now(UTC),
        expires_at=expires_at,
    )


def test_gateways_and_rules_round_trip(store: Any) -> None:
    store.put_gateway(Gateway(gateway_id="support", allowed=("Zendesk.*", "Slack.SendMessage"), recommendation="on"))
    store.put_rule(AccessRule(rule_id="all", subject="*", effect="allow", tools=("*",)))
    store.put_rule(AccessRule(rule_id="no-billing", subject="ana", effect="deny", tools=("Stripe.*",)))
    store.put_rule(AccessRule(rule_id="other", subject="bob", effect="deny", tools=("Slack.*",)))

    store.put_gateway(Gateway(gateway_id="sales"))
    assert sorted(store.gateway_ids()) == ["sales", "support"]  # the gateways alone, never a rule's id
    gateway = store.gateway("support")
    assert gateway is not None and gateway.allowed == ("Zendesk.*", "Slack.SendMessage")
    assert gateway.recommendation == "on"
    assert store.gateway("missing") is None
    assert sorted(r.rule_id for r in store.access_rules("ana")) == ["all", "no-billing"]

    store.delete_rule("ana", "no-billing")
    store.delete_gateway("support")
    assert list(store.gateway_ids()) == ["sales"]
    assert [r.rule_id for r in store.access_rules("ana")] == ["all"]
    assert store.gateway("support") is None


def test_apps_connections_and_keys_round_trip(store: Any) -> None:
    store.put_app(AppInfo(app_id="Slack", name="Slack", authorize_url="https://example.com/connect/slack"))
    store.put_app(AppInfo(app_id="GitHub", name="GitHub"))
    store.put_connection(Connection(user_id="ana", app_id="Slack", account="ana@acme.test", scopes=("chat:write",)))
    key = generate_key()
    store.put_api_key(ApiKeyRecord(key_id="k1", key_hash=hash_key(key), gateway_id="support"))

    assert [a.app_id for a in store.apps()] == ["GitHub", "Slack"]
    (connection,) = store.connections("ana")
    assert (connection.account, connection.scopes) == ("ana@acme.test", ("chat:write",))
    assert store.connections("bob") == []
    record = store.api_key(hash_key(key))
    assert record is not None and record.gateway_id == "support" and same_hash(key, record.key_hash)
    assert store.api_key(hash_key(key + "x")) is None

    store.delete_connection("ana", "Slack")
    store.delete_api_key(hash_key(key))
    assert store.connections("ana") == []
    assert store.api_key(hash_key(key)) is None


def test_query_log_links_executions(store: Any) -> None:
    store.put_query(_query("q-1", int(time.time()) + 3600))
    ran = ExecutionRecord(tool_name="Slack.SendMessage", user_id="ana", key_id="k1", at=datetime.now(UTC), outcome="ok")
    store.record_execution("q-1", ran)
    store.record_execution(
        "unknown", ExecutionRecord(tool_name="X.Y", user_id="ana", at=datetime.now(UTC), outcome="ok")
    )

    record = store.get_query("q-1")
    assert record is not None
    assert record.recommended == (("Slack.SendMessage",), ())
    assert [e.tool_name for e in record.executions] == ["Slack.SendMessage"]
    # The key that asked and the key that ran: learning from use counts evidence per key (build_index/usage/fold.py).
    assert record.key_id == "k1" and [e.key_id for e in record.executions] == ["k1"]
    assert store.get_query("unknown") is None


def test_file_store_drops_expired_queries(tmp_path: Path) -> None:
    store = FilePolicyStore(tmp_path / "policy.json")
    store.put_query(_query("old", int(time.time()) - 1))
    assert store.get_query("old") is None


def test_bad_patterns_are_refused() -> None:
    for pattern in ["Sla*", "*.Send", "Slack .Send", ""]:
        with pytest.raises(ValidationError):
            Gateway(gateway_id="g", allowed=(pattern,))


def test_file_store_reports_a_broken_file(tmp_path: Path) -> None:
    path = tmp_path / "policy.json"
    path.write_text('{"version": 1, "gateways": [{"gateway_id": "g", "allowed": ["Sla*"]}]}')
    with pytest.raises(PolicyUnavailableError, match=r"gateways\[0\]\.allowed\[0\]: 'Sla\*' is not a tool pattern"):
        FilePolicyStore(path).gateway("g")
    with pytest.raises(PolicyUnavailableError, match="no policy file"):
        FilePolicyStore(tmp_path / "absent.json").gateway("g")


def test_dynamodb_failure_is_policy_unavailable() -> None:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        store = DynamoPolicyStore(client, TABLES)  # tables never created
        with pytest.raises(PolicyUnavailableError, match="cannot read"):
            store.gateway("default")


def test_cache_serves_until_ttl(tmp_path: Path) -> None:
    now = [0.0]
    inner = FilePolicyStore(tmp_path / "policy.json")
    inner.put_gateway(Gateway(gateway_id="g", allowed=("Slack.*",)))
    cached = CachedPolicyStore(inner, ttl_seconds=30, clock=lambda: now[0])
    assert cached.gateway("g") is not None
    inner.delete_gateway("g")
    assert cached.gateway("g") is not None  # still cached
    now[0] = 31.0
    assert cached.gateway("g") is None


def test_the_whole_policy_reads_back_from_either_backend(store: Any) -> None:
    """What `toolrec policy list` and `show` print: every record of every kind, from the file or the tables."""
    gateway = Gateway(gateway_id="support", allowed=("Zendesk.*",), recommendation="on")
    rules = [AccessRule(rule_id="all", subject="*", effect="allow", tools=("*",)),
             AccessRule(rule_id="no-billing", subject="ana", effect="deny", tools=("Stripe.*",))]  # fmt: skip
    app = AppInfo(app_id="Slack", name="Slack")
    connection = Connection(user_id="ana", app_id="Slack", scopes=("chat:write",))
    key = ApiKeyRecord(key_id="k1", key_hash=hash_key(generate_key()))
    store.put_gateway(gateway)
    for rule in rules:
        store.put_rule(rule)
    store.put_app(app)
    store.put_connection(connection)
    store.put_api_key(key)

    document = store.document()
    assert document.gateways == [gateway] and document.apps == [app] and document.connections == [connection]
    assert sorted(document.access_rules, key=lambda r: r.rule_id) == rules
    assert document.api_keys == [key]
