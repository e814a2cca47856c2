"""API keys: stored only as their sha256 (file and DynamoDB, written by `toolrec policy` and `toolrec serve`),
checked with a constant-time comparison after a lookup keyed by the hash, accepted only as a bearer token, and
refused as soon as they are revoked. (Scoped keys on every entry point: test_policy_invariant.py.)"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
from starlette.testclient import TestClient

import handler.policy.keys as keys
from build_index.cli import main as toolrec
from build_index.ops.serve import ensure_policy
from handler.composition import build_app
from handler.inference.embedder import OnnxEmbedder
from handler.policy.keys import hash_key
from tests.integration.test_serving_aws import TABLES, write_policy_with_cli
from tests.support.servers import serve
from tests.support.serving import API_KEY, file_settings, lambda_thread_loop, write_test_policy

SELECT = {"tasks": ["send a message"], "user_id": "u"}


@pytest.fixture
def app(tmp_path: Path, embedder: OnnxEmbedder, demo_index: Path) -> Iterator[tuple[TestClient, Path]]:
    policy = write_test_policy(tmp_path / "policy.json")
    settings = file_settings(str(demo_index), policy, tmp_path / "cache", policy_cache_seconds=0)
    with TestClient(build_app(settings, embedder=embedder)) as client:
        yield client, policy


def test_the_policy_file_holds_only_hashes(tmp_path: Path) -> None:
    policy = tmp_path / "policy.json"
    serve_key = "trk_bootstrap-key-given-to-serve"
    ensure_policy(policy, serve_key)
    assert toolrec(["policy", "--file", str(policy), "key", "create", "--key", API_KEY, "--gateway", "default"]) == 0
    text = policy.read_text()
    assert serve_key not in text and API_KEY not in text
    assert hash_key(serve_key) in text and hash_key(API_KEY) in text


def test_the_dynamodb_table_holds_only_hashes(monkeypatch: pytest.MonkeyPatch) -> None:
    from moto import mock_aws

    for name, value in TABLES.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws(), lambda_thread_loop():
        write_policy_with_cli()  # creates API_KEY with `toolrec policy --dynamodb key create`
        items: list[Any] = []
        client = boto3.client("dynamodb", region_name="us-east-1")
        for table in TABLES.values():
            items += client.scan(TableName=table)["Items"]
    stored = json.dumps(items)
    assert API_KEY not in stored and hash_key(API_KEY) in stored


def test_keys_are_compared_in_constant_time(app: tuple[TestClient, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    client, _ = app
    compared: list[tuple[str, str]] = []
    real = keys.hmac.compare_digest

    def spy(a: str, b: str) -> bool:
        compared.append((a, b))
        return real(a, b)

    monkeypatch.setattr(keys.hmac, "compare_digest", spy)
    valid = client.post("/v1/tools/select", json=SELECT, headers={"Authorization": f"Bearer {API_KEY}"})
    assert valid.status_code == 200
    assert compared == [(hash_key(API_KEY), hash_key(API_KEY))]  # hashes, never the key, and via hmac
    wrong = API_KEY[:-1] + ("x" if API_KEY[-1] != "x" else "y")
    assert client.post("/v1/tools/select", json=SELECT, headers={"Authorization": f"Bearer {wrong}"}).status_code == 401


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": API_KEY},
        {"Authorization": f"Basic {base64.b64encode(f'x:{API_KEY}'.encode()).decode()}"},
        {"Authorization": f"Token {API_KEY}"},
        {"X-Api-Key": API_KEY},
        {"Authorization": f"Bearer {API_KEY.upper()}"},
        {"Authorization": f"Bearer {API_KEY[:-1]}"},
        {"Authorization": f"Bearer {API_KEY}x"},
        {"Authorization": f"Bearer {hash_key(API_KEY)}"},  # the stored hash is not a key
        {"Authorization": "Bearer "},
        {"Cookie": f"api_key={API_KEY}"},
    ],
)
def test_only_the_bearer_key_itself_authenticates(app: tuple[TestClient, Path], headers: dict[str, str]) -> None:
    client, _ = app
    for path in ("/v1/tools/select", f"/v1/tools/select?api_key={API_KEY}"):
        response = client.post(path, json=SELECT, headers=headers)
        assert response.status_code == 401, (headers, response.text)
        assert response.json()["name"] == "unauthorized"
        assert API_KEY not in response.text


def test_a_revoked_key_stops_working(app: tuple[TestClient, Path]) -> None:
    client, policy = app
    auth = {"Authorization": f"Bearer {API_KEY}"}
    assert client.post("/v1/tools/select", json=SELECT, headers=auth).status_code == 200
    assert toolrec(["policy", "--file", str(policy), "key", "revoke", API_KEY]) == 0
    assert client.post("/v1/tools/select", json=SELECT, headers=auth).status_code == 401


def test_changes_made_with_toolrec_policy_apply_to_the_local_file_at_once(
    tmp_path: Path, embedder: OnnxEmbedder, demo_index: Path
) -> None:
    """As `toolrec serve` runs (the policy cache at its default 30 s, which now holds only DynamoDB lookups): a
    deny and a key revocation written with `toolrec policy` apply from the next request. Before, both waited out
    the cache, and a revoked key kept working for up to 30 s (issue 22)."""
    policy = write_test_policy(tmp_path / "policy.json")
    settings = file_settings(str(demo_index), policy, tmp_path / "cache")
    assert settings.policy_cache_seconds == 30
    task = {"tasks": ["send a message to a Slack channel"], "user_id": "u"}
    with serve(build_app(settings, embedder=embedder)) as base:

        def select() -> httpx.Response:
            return httpx.post(f"{base}/v1/tools/select", json=task, headers={"Authorization": f"Bearer {API_KEY}"})

        def first() -> str:
            return str(select().json()["results"][0]["suggestions"][0]["tool_name"])

        assert first() == "Slack.SendMessage"
        deny = ["rule", "put", "--subject", "u", "--rule-id", "no-slack-u", "--effect", "deny", "--tools", "Slack.*"]
        assert toolrec(["policy", "--file", str(policy), *deny, "--index", str(demo_index)]) == 0
        assert not first().startswith("Slack.")
        assert toolrec(["policy", "--file", str(policy), "key", "revoke", API_KEY]) == 0
        assert select().status_code == 401
