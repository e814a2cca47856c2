"""The same flows over real HTTP end to end: S3 and DynamoDB from `moto_server` on 127.0.0.1, the app under
uvicorn on loopback, requests from an HTTP client. A new LATEST published while requests are in flight is
picked up without failing any of them."""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import boto3
import httpx
import pytest

from handler.composition import build_app
from handler.inference.embedder import OnnxEmbedder
from handler.settings import Settings
from tests.integration.test_serving_aws import BUCKET, PREFIX, ROCKET, TABLES, write_policy_with_cli
from tests.support.moto_server import CREDENTIALS
from tests.support.moto_server import moto_server as run_moto_server
from tests.support.servers import serve
from tests.support.serving import API_KEY, demo_tools, publish_tools

AUTH = {"Authorization": f"Bearer {API_KEY}"}


@pytest.fixture
def moto_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    with run_moto_server() as url:
        # Every boto3 client, the service's own included, talks to moto_server over HTTP.
        monkeypatch.setenv("AWS_ENDPOINT_URL", url)
        for name, value in {**CREDENTIALS, **TABLES}.items():
            monkeypatch.setenv(name, value)
        yield url


def test_s3_and_dynamodb_over_http_with_a_swap_under_load(
    moto_server: str, tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    write_policy_with_cli()
    location = f"s3://{BUCKET}/{PREFIX}"
    first = publish_tools(demo_tools(), location, embedder, s3)

    settings = Settings(
        index_location=location,
        index_cache_dir=tmp_path / "cache",
        policy_backend="dynamodb",
        index_refresh_seconds=0,
    )
    with serve(build_app(settings, embedder=embedder)) as base, httpx.Client(base_url=base, headers=AUTH) as client:
        assert client.get("/healthz").json()["build_id"] == first
        response = client.post("/v1/tools/select", json={"tasks": ["merge the pull request"], "user_id": "ana"})
        assert response.status_code == 200
        assert response.json()["results"][0]["suggestions"][0]["tool_name"] == "GitHub.MergePullRequest"
        search = client.post("/v1/tools/search", json={"query": "jira sprint", "user_id": "ana", "top_k": 3})
        assert search.json()["results"][0]["tool_name"] == "Jira.ListSprints"

        def ask(_: int) -> tuple[int, list[str]]:
            r = client.post("/v1/tools/select", json={"tasks": ["launch a rocket to orbit"], "user_id": "ana"})
            return r.status_code, [s["tool_name"] for s in r.json()["results"][0]["suggestions"]]

        with ThreadPoolExecutor(max_workers=4) as pool:
            before = pool.map(ask, range(8))
            second = publish_tools([*demo_tools(), ROCKET], location, embedder, s3)
            during = list(before) + list(pool.map(ask, range(8)))
        assert all(status == 200 for status, _ in during)
        assert ask(0)[1][0] == "Acme.LaunchRocket"
        health = client.get("/healthz").json()
        assert {k: health[k] for k in ("status", "build_id", "tool_count", "reason")} == {
            "status": "ok", "build_id": second, "tool_count": 97, "reason": None
        }  # fmt: skip
