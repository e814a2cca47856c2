"""The deployed shape under moto: index from S3 (cold start, then a swap on a new LATEST), policy from DynamoDB
written by `toolrec policy`, the query log in DynamoDB with its TTL attribute, all through the Mangum handler."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from mangum import Mangum
from moto import mock_aws

from build_index.cli import main as toolrec
from handler.catalog.tool import Tool
from handler.composition import build_app
from handler.inference.embedder import OnnxEmbedder
from handler.policy.keys import hash_key
from handler.settings import Settings
from tests.support.serving import API_KEY, apigw_event, demo_tools, invoke, lambda_thread_loop, publish_tools

BUCKET, PREFIX = "toolrec-index", "tenant-a"
TABLES = {
    "TOOLREC_POLICY_TABLE": "toolrec-policy",
    "TOOLREC_CONNECTIONS_TABLE": "toolrec-connections",
    "TOOLREC_API_KEYS_TABLE": "toolrec-api-keys",
    "TOOLREC_QUERY_LOG_TABLE": "toolrec-query-log",
}
ROCKET = Tool(
    name="Acme.LaunchRocket",
    description="Launch an Acme rocket to orbit.",
    input_schema={"type": "object", "properties": {"pad": {"type": "string"}}},
    app="Acme",
)


def write_policy_with_cli() -> None:
    """The production policy tables, filled by the same CLI an operator uses."""
    for args in [
        ["create-tables"],
        ["gateway", "put", "default", "--allow", "*"],
        ["gateway", "put", "crm", "--allow", "Salesforce.*", "HubSpot.*", "--recommendation", "on"],
        ["rule", "put", "--subject", "*", "--rule-id", "everyone", "--effect", "allow", "--tools", "*"],
        ["rule", "put", "--subject", "intern", "--rule-id", "no-money", "--effect", "deny", "--tools", "Stripe.*"],
        ["app", "put", "Slack", "--name", "Slack", "--authorize-url", "https://auth.example.test/slack"],
        ["connection", "put", "ana", "Slack", "--account", "ana@acme.test", "--scope", "chat:write"],
        ["key", "create", "--key", API_KEY, "--key-id", "ci"],
    ]:
        assert toolrec(["policy", "--dynamodb", *args]) == 0


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    for name, value in TABLES.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws(), lambda_thread_loop():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket=BUCKET)
        write_policy_with_cli()
        yield {"s3": s3, "dynamodb": boto3.client("dynamodb", region_name="us-east-1")}


def lambda_function(tmp_path: Path, embedder: OnnxEmbedder, **overrides: Any) -> Mangum:
    """What the Lambda init does: settings from the environment, clients created by the composition root."""
    settings = Settings(
        index_location=f"s3://{BUCKET}/{PREFIX}",
        index_cache_dir=tmp_path / "cache",
        policy_backend="dynamodb",
        **overrides,
    )
    return Mangum(build_app(settings, embedder=embedder), lifespan="off")


def select(handler: Mangum, task: str, **fields: Any) -> tuple[int, Any]:
    status, _, body = invoke(handler, apigw_event("POST", "/v1/tools/select", {"tasks": [task], **fields}))
    return status, body


def test_cold_start_from_s3_and_policy_from_dynamodb(
    aws: dict[str, Any], tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    build_id = publish_tools(demo_tools(), f"s3://{BUCKET}/{PREFIX}", embedder, aws["s3"])
    handler = lambda_function(tmp_path, embedder)

    _, _, health = invoke(handler, apigw_event("GET", "/healthz", key=None))
    assert (health["build_id"], health["tool_count"]) == (build_id, 96)
    assert (tmp_path / "cache" / build_id / "manifest.json").is_file()  # downloaded once into the /tmp cache

    status, body = select(handler, "update the stage of a sales opportunity", user_id="ana", gateway_id="crm")
    assert status == 200
    found = [s["tool_name"] for s in body["results"][0]["suggestions"]]
    assert found[0] == "Salesforce.UpdateOpportunityStage"
    assert all(n.startswith(("Salesforce.", "HubSpot.")) for n in found)

    _, body = select(handler, "refund a payment", user_id="intern", top_k=20)
    assert not any(s["tool_name"].startswith("Stripe.") for s in body["results"][0]["suggestions"])

    logged = aws["dynamodb"].get_item(
        TableName=TABLES["TOOLREC_QUERY_LOG_TABLE"], Key={"query_id": {"S": body["query_id"]}}
    )
    item = logged["Item"]
    assert item["user_id"] == {"S": "intern"}
    assert abs(int(item["expires_at"]["N"]) - (time.time() + 30 * 86_400)) < 120
    ttl = aws["dynamodb"].describe_time_to_live(TableName=TABLES["TOOLREC_QUERY_LOG_TABLE"])
    assert ttl["TimeToLiveDescription"]["AttributeName"] == "expires_at"

    _, _, apps = invoke(handler, apigw_event("GET", "/v1/apps", query={"user_id": "ana"}))
    slack = next(a for a in apps["apps"] if a["app_id"] == "Slack")
    # chat:write alone does not run every Slack tool of the demo catalog: not connected, and what is missing is named.
    assert (slack["connected"], slack["account"], slack["permissions"]) == (False, "ana@acme.test", ["chat:write"])
    pending = {p["tool_name"] for p in slack["needs_authorization"]}
    assert "Slack.AddReaction" in pending and "Slack.SendMessage" not in pending


def test_a_warm_instance_swaps_to_a_new_latest(aws: dict[str, Any], tmp_path: Path, embedder: OnnxEmbedder) -> None:
    first = publish_tools(demo_tools(), f"s3://{BUCKET}/{PREFIX}", embedder, aws["s3"])
    handler = lambda_function(tmp_path, embedder, index_refresh_seconds=0)
    _, body = select(handler, "launch a rocket to orbit", user_id="ana")
    assert "Acme.LaunchRocket" not in [s["tool_name"] for s in body["results"][0]["suggestions"]]

    second = publish_tools([*demo_tools(), ROCKET], f"s3://{BUCKET}/{PREFIX}", embedder, aws["s3"])
    assert second != first
    status, body = select(handler, "launch a rocket to orbit", user_id="ana")
    assert status == 200
    assert body["results"][0]["suggestions"][0]["tool_name"] == "Acme.LaunchRocket"
    _, _, health = invoke(handler, apigw_event("GET", "/healthz", key=None))
    assert (health["build_id"], health["tool_count"]) == (second, 97)
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [second]  # the old copy left /tmp


def test_a_broken_new_build_keeps_the_old_one_serving(
    aws: dict[str, Any], tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    first = publish_tools(demo_tools(), f"s3://{BUCKET}/{PREFIX}", embedder, aws["s3"])
    handler = lambda_function(tmp_path, embedder, index_refresh_seconds=0)
    aws["s3"].put_object(Bucket=BUCKET, Key=f"{PREFIX}/LATEST", Body=b"20990101T000000Z-missing\n")

    status, body = select(handler, "send a slack message", user_id="ana")
    assert status == 200 and body["results"][0]["suggestions"][0]["tool_name"] == "Slack.SendMessage"
    _, _, health = invoke(handler, apigw_event("GET", "/healthz", key=None))
    assert health["build_id"] == first


def test_keys_and_policy_changes_in_dynamodb(aws: dict[str, Any], tmp_path: Path, embedder: OnnxEmbedder) -> None:
    publish_tools(demo_tools(), f"s3://{BUCKET}/{PREFIX}", embedder, aws["s3"])
    handler = lambda_function(tmp_path, embedder, policy_cache_seconds=0)
    status, _ = select(handler, "send a slack message", user_id="ana", gateway_id="crm")
    assert status == 200

    assert toolrec(["policy", "--dynamodb", "gateway", "delete", "crm"]) == 0
    status, body = select(handler, "send a slack message", user_id="ana", gateway_id="crm")
    assert (status, body["name"]) == (404, "not_found")

    stored = aws["dynamodb"].get_item(
        TableName=TABLES["TOOLREC_API_KEYS_TABLE"], Key={"key_hash": {"S": hash_key(API_KEY)}}
    )
    assert API_KEY not in str(stored["Item"])  # only the hash is stored
    assert toolrec(["policy", "--dynamodb", "key", "revoke", API_KEY]) == 0
    status, body = select(handler, "send a slack message", user_id="ana")
    assert (status, body["name"]) == (401, "unauthorized")


def test_storage_failures(aws: dict[str, Any], tmp_path: Path, embedder: OnnxEmbedder) -> None:
    publish_tools(demo_tools(), f"s3://{BUCKET}/{PREFIX}", embedder, aws["s3"])
    handler = lambda_function(tmp_path, embedder, policy_cache_seconds=0)

    # Losing the query log loses only the log entry: the recommendation is still answered.
    aws["dynamodb"].delete_table(TableName=TABLES["TOOLREC_QUERY_LOG_TABLE"])
    status, body = select(handler, "send a slack message", user_id="ana")
    assert status == 200 and body["results"][0]["suggestions"]

    # Without the policy (keys, gateways, rules) nothing can be decided: 503, a retry may succeed.
    aws["dynamodb"].delete_table(TableName=TABLES["TOOLREC_API_KEYS_TABLE"])
    status, body = select(handler, "send a slack message", user_id="ana")
    assert (status, body["name"]) == (503, "service_unavailable")
    assert set(body) == {"name", "message"}
