"""The scheduled refresh function (``build_index.refresh.lambda_entry.handler``), cold-started from the environment the
template gives it and invoked as its EventBridge schedule does: S3 and Secrets Manager on moto, a real upstream
MCP server behind a bearer token on loopback."""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto import mock_aws
from pydantic import ValidationError

from build_index.build import index_tools
from build_index.ingest.mcp_tools import ingest
from build_index.model_prepare import MODEL_ID
from build_index.publish import publish
from handler.errors import CatalogError
from handler.index.store import S3IndexStore
from handler.inference.embedder import OnnxEmbedder
from handler.inference.model_files import default_model_dir
from tests.support.moto_server import CREDENTIALS
from tests.support.servers import serve
from tests.support.workers import bearer_protected, upstream_mcp_server

BUCKET, TOKEN, SECRET = "toolrec-acme-index", "scheduled-token", "toolrec/acme/upstream"
SCHEDULED_EVENT = {"source": "aws.scheduler", "detail-type": "Scheduled Event", "detail": {}}


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    with mock_aws():
        yield


def cold_start(monkeypatch: pytest.MonkeyPatch, env: dict[str, str]):  # type: ignore[no-untyped-def]
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delitem(sys.modules, "build_index.refresh.lambda_entry", raising=False)
    return importlib.import_module("build_index.refresh.lambda_entry")


def test_a_scheduled_run_publishes_only_after_the_upstream_changed(
    aws: None, monkeypatch: pytest.MonkeyPatch, embedder: OnnxEmbedder
) -> None:
    server = upstream_mcp_server()
    app = server.streamable_http_app(json_response=True, stateless_http=True)
    with serve(bearer_protected(app, TOKEN)) as base:
        url = base + "/mcp"
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket=BUCKET)
        boto3.client("secretsmanager").create_secret(Name=SECRET, SecretString=TOKEN)
        tools = ingest(url, "Crm", headers={"Authorization": f"Bearer {TOKEN}"})
        first = publish(index_tools(tools, embedder, MODEL_ID, progress=False), f"s3://{BUCKET}/index", s3).build_id
        upstreams = [{"url": url, "app": "Crm", "headers": {"Authorization": f"Bearer ${{secretsmanager:{SECRET}}}"}}]
        entry = cold_start(
            monkeypatch,
            {
                "TOOLREC_INDEX_LOCATION": f"s3://{BUCKET}/index",
                "TOOLREC_MODEL_DIR": str(default_model_dir()),
                "TOOLREC_REFRESH_UPSTREAMS": json.dumps(upstreams),
            },
        )
        store = S3IndexStore(s3, BUCKET, "index")

        unchanged = entry.handler(SCHEDULED_EVENT, None)
        assert unchanged["published"] is False and unchanged["build_id"] == first == store.latest_build_id()

        @server.tool(description="Create a lead in the CRM.")
        def create_lead(name: str) -> dict[str, str]:
            return {"lead": name}

        published = entry.handler(SCHEDULED_EVENT, None)
        assert published["published"] is True and published["tool_count"] == len(tools) + 1
        assert store.latest_build_id() == published["build_id"] != first

        server.remove_tool("create_lead")
        boto3.client("secretsmanager").put_secret_value(SecretId=SECRET, SecretString="rotated-away")
        with pytest.raises(CatalogError, match=r"HTTP 401"):  # a failed run is an error the schedule retries
            entry.handler(SCHEDULED_EVENT, None)
        assert store.latest_build_id() == published["build_id"]  # nothing published by a failed run


def test_a_bad_upstream_list_fails_the_cold_start(aws: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    env = {"TOOLREC_INDEX_LOCATION": f"s3://{BUCKET}/index", "TOOLREC_REFRESH_UPSTREAMS": '[{"url": "ftp://x"}]'}
    with pytest.raises(CatalogError, match="upstream list is not valid"):
        cold_start(monkeypatch, env)
    monkeypatch.delenv("TOOLREC_REFRESH_UPSTREAMS")
    with pytest.raises(ValidationError, match="refresh_upstreams"):
        cold_start(monkeypatch, {})
