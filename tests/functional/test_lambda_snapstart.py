"""The SnapStart runtime hooks the entry module registers, called as the Lambda runtime calls them (before the
snapshot, after a restore), against a function whose index lives in S3 (moto_server over real HTTP)."""

from __future__ import annotations

import importlib
import random
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import snapshot_restore_py

from handler import snapstart
from handler.catalog.tool import Tool
from handler.policy.file_store import write_document
from handler.policy.model import PolicyDocument
from handler.ranking.query import Embedder
from tests.support.moto_server import CREDENTIALS, moto_server
from tests.support.serving import (
    apigw_event,
    demo_tools,
    invoke,
    lambda_thread_loop,
    policy_for_tests,
    publish_tools,
    write_test_policy,
)

BUCKET = "toolrec-snapstart"
ROCKET = Tool(
    name="Acme.LaunchRocket",
    app="Acme",
    description="Launch a rocket into orbit.",
    input_schema={"type": "object", "properties": {}},
)
SELECT = {"tasks": ["send an sms"], "user_id": "u"}
Hook = tuple[Callable[..., Any], tuple[Any, ...], dict[str, Any]]


@pytest.fixture(autouse=True)
def _loop() -> Iterator[None]:
    with lambda_thread_loop():
        yield


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_server() as url:
        yield url


def run_hooks(hooks: list[Hook]) -> None:
    for func, args, kwargs in hooks:  # what the runtime does with the registry
        func(*args, **kwargs)


def pooled_connections(client: Any) -> int:
    # botocore keeps its urllib3 pools here; no public API counts them.
    return sum(len(pool.pool.queue) for pool in client._endpoint.http_session._manager.pools._container.values())


def test_hooks_close_connections_reseed_and_reread_index_and_policy(
    endpoint: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, embedder: Embedder
) -> None:
    env = {**CREDENTIALS, "AWS_ENDPOINT_URL": endpoint}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    s3 = boto3.client("s3", endpoint_url=endpoint)
    s3.create_bucket(Bucket=BUCKET)
    first = publish_tools(demo_tools(), f"s3://{BUCKET}/index", embedder, s3)
    policy_file = write_test_policy(tmp_path / "policy.json")
    settings = {
        "TOOLREC_INDEX_LOCATION": f"s3://{BUCKET}/index",
        "TOOLREC_INDEX_CACHE_DIR": str(tmp_path / "cache"),
        "TOOLREC_INDEX_REFRESH_SECONDS": "3600",  # without the hooks, neither would be reread within the test
        "TOOLREC_POLICY_CACHE_SECONDS": "3600",
        "TOOLREC_POLICY_FILE": str(policy_file),
    }
    for name, value in settings.items():
        monkeypatch.setenv(name, value)
    before = len(snapshot_restore_py.get_before_snapshot())
    after = len(snapshot_restore_py.get_after_restore())
    monkeypatch.delitem(sys.modules, "handler.lambda_entry", raising=False)
    entry = importlib.import_module("handler.lambda_entry")  # the init phase, as at version publish
    before_snapshot: list[Hook] = snapshot_restore_py.get_before_snapshot()[before:]  # type: ignore[assignment]
    after_restore: list[Hook] = snapshot_restore_py.get_after_restore()[after:]  # type: ignore[assignment]
    assert [hook[0] for hook in before_snapshot] == [snapstart.before_snapshot]
    assert [hook[0] for hook in after_restore] == [snapstart.after_restore]

    (client,) = entry.app.state.aws_clients
    assert pooled_connections(client) > 0  # the init read LATEST and the build's files
    status, _, body = invoke(entry.handler, apigw_event("POST", "/v1/tools/select", SELECT))
    assert status == 200  # the API key is now cached for an hour

    run_hooks(before_snapshot)
    assert pooled_connections(client) == 0

    # While "frozen" in the snapshot: a new build is published and the API key is revoked.
    second = publish_tools([*demo_tools(), ROCKET], f"s3://{BUCKET}/index", embedder, s3)
    revoked = PolicyDocument.model_validate({**policy_for_tests().model_dump(mode="json"), "api_keys": []})
    write_document(policy_file, revoked)
    assert invoke(entry.handler, apigw_event("GET", "/healthz", key=None))[2]["build_id"] == first
    random.seed(1234)
    unseeded = random.random()

    random.seed(1234)
    run_hooks(after_restore)
    assert random.random() != unseeded  # every restored copy draws its own sequence
    status, _, health = invoke(entry.handler, apigw_event("GET", "/healthz", key=None))
    assert (status, health["build_id"], health["tool_count"]) == (200, second, len(demo_tools()) + 1)
    assert pooled_connections(client) > 0  # the closed client opened a fresh connection
    status, _, body = invoke(entry.handler, apigw_event("POST", "/v1/tools/select", SELECT))
    assert status == 401, body  # the revoked key was not served from the snapshot's cache
