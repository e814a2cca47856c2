"""A bad build published as LATEST on S3, at the serving level: each way a build can be broken (a file that fails
its checksum, a missing file, no manifest (half written), an unknown schema version, another model) is refused by a
warm instance, which keeps answering from the build it has; the next good build is picked up.

tests/integration covers the loader's refusals one by one (test_build_integrity) and a LATEST naming a build that
does not exist (test_serving_aws); this is every kind, through the Lambda handler, with recovery.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from mangum import Mangum
from moto import mock_aws

from handler.catalog.tool import Tool
from handler.composition import build_app
from handler.index.format import BUILDS, MANIFEST
from handler.inference.embedder import OnnxEmbedder
from handler.settings import Settings
from tests.integration.test_serving_aws import ROCKET
from tests.support.serving import (
    apigw_event,
    demo_tools,
    invoke,
    lambda_thread_loop,
    publish_tools,
    write_test_policy,
)

BUCKET, PREFIX = "bad-builds", "tenant"
COFFEE = Tool(
    name="Acme.OrderCoffee",
    description="Order a coffee from the Acme office kitchen.",
    input_schema={"type": "object", "properties": {"size": {"type": "string"}}},
    app="Acme",
)
Breaker = Callable[[Any, str], None]


def _key(build_id: str, name: str) -> str:
    return f"{PREFIX}/{BUILDS}/{build_id}/{name}"


def _edit_manifest(s3: Any, build_id: str, change: Callable[[dict[str, Any]], None]) -> None:
    manifest = json.loads(s3.get_object(Bucket=BUCKET, Key=_key(build_id, MANIFEST))["Body"].read())
    change(manifest)
    s3.put_object(Bucket=BUCKET, Key=_key(build_id, MANIFEST), Body=json.dumps(manifest).encode())


def bad_checksum(s3: Any, build_id: str) -> None:
    s3.put_object(Bucket=BUCKET, Key=_key(build_id, "tools.jsonl"), Body=b"")


def missing_file(s3: Any, build_id: str) -> None:
    s3.delete_object(Bucket=BUCKET, Key=_key(build_id, "bm25_weights.npy"))


def half_written(s3: Any, build_id: str) -> None:
    s3.delete_object(Bucket=BUCKET, Key=_key(build_id, MANIFEST))


def unknown_schema(s3: Any, build_id: str) -> None:
    _edit_manifest(s3, build_id, lambda m: m.update(schema_version=99))


def other_model(s3: Any, build_id: str) -> None:
    _edit_manifest(s3, build_id, lambda m: m["model"].update(fingerprint="0" * 64))


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws(), lambda_thread_loop():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def served_build(function: Mangum) -> tuple[str, list[str]]:
    """The build /healthz names, and the top suggestions for a task only the second catalog's rocket tool fits."""
    _, _, health = invoke(function, apigw_event("GET", "/healthz", key=None))
    body = {"tasks": ["launch a rocket to orbit"], "user_id": "u", "top_k": 1}
    status, _, selected = invoke(function, apigw_event("POST", "/v1/tools/select", body))
    assert status == 200, selected
    return health["build_id"], [s["tool_name"] for s in selected["results"][0]["suggestions"]]


@pytest.mark.parametrize("breaker", [bad_checksum, missing_file, half_written, unknown_schema, other_model])
def test_a_broken_latest_is_refused_and_the_previous_build_keeps_serving(
    s3: Any, tmp_path: Path, embedder: OnnxEmbedder, breaker: Breaker
) -> None:
    location = f"s3://{BUCKET}/{PREFIX}"
    first = publish_tools(demo_tools(), location, embedder, s3)
    settings = Settings(
        index_location=location,
        index_cache_dir=tmp_path / "cache",
        index_refresh_seconds=0,  # check LATEST on every request
        policy_backend="file",
        policy_file=write_test_policy(tmp_path / "policy.json"),
    )
    function = Mangum(build_app(settings, embedder=embedder, s3_client=s3), lifespan="off")
    assert served_build(function)[0] == first

    broken = publish_tools([*demo_tools(), ROCKET], location, embedder, s3)  # LATEST now names it
    breaker(s3, broken)
    for _ in range(3):  # refused on every check, not just once
        build_id, top = served_build(function)
        assert build_id == first and top != [ROCKET.name]

    # Another catalog, so another build id even within the same second (ids are a timestamp and a content hash).
    fixed = publish_tools([*demo_tools(), ROCKET, COFFEE], location, embedder, s3)
    assert fixed != broken
    assert served_build(function) == (fixed, [ROCKET.name])


@pytest.mark.parametrize("escape", ["../../outside/evil", "{outside}/absolute-evil"])
def test_a_manifest_naming_a_path_outside_the_cache_writes_nothing_and_the_previous_build_keeps_serving(
    s3: Any, tmp_path: Path, embedder: OnnxEmbedder, escape: str
) -> None:
    """Issue 15 item 10: the download wrote every name the manifest listed before checking any; the fetch stages
    under cache/.<build>-xxxx/, so ``../../outside/evil`` (and an absolute path) landed outside the cache."""
    location, outside = f"s3://{BUCKET}/{PREFIX}", tmp_path / "outside"
    outside.mkdir()
    name = escape.format(outside=outside)
    first = publish_tools(demo_tools(), location, embedder, s3)
    settings = Settings(
        index_location=location,
        index_cache_dir=tmp_path / "cache",
        index_refresh_seconds=0,
        policy_backend="file",
        policy_file=write_test_policy(tmp_path / "policy" / "policy.json"),
    )
    function = Mangum(build_app(settings, embedder=embedder, s3_client=s3), lifespan="off")
    assert served_build(function)[0] == first

    hostile = publish_tools([*demo_tools(), ROCKET], location, embedder, s3)
    s3.put_object(Bucket=BUCKET, Key=f"{PREFIX}/{BUILDS}/{hostile}/{name}", Body=b"planted")
    _edit_manifest(s3, hostile, lambda m: m.update(files={name: "0" * 64, **m["files"]}))  # listed first
    for _ in range(2):
        build_id, top = served_build(function)
        assert build_id == first and top != [ROCKET.name]
    assert list(outside.iterdir()) == []
    assert not (tmp_path / "cache" / hostile).exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cache", "outside", "policy"]
