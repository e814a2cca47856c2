"""``toolrec refresh``: a new build is published after the upstream server's tools change, and none while they do
not. A real upstream behind a bearer token on loopback; the index in a local directory (CLI) and in S3 (moto)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from pathlib import Path

import boto3
import httpx
import pytest
from mcp.server.mcpserver import MCPServer
from moto import mock_aws

from build_index import cli
from build_index.build import index_tools
from build_index.ingest.mcp_tools import ingest
from build_index.ingest.upstream_headers import Upstream, parse_upstreams, secrets_manager_reader
from build_index.model_prepare import MODEL_ID
from build_index.publish import publish
from build_index.refresh.run import moved_names, refresh
from handler.catalog.tool import Executor, Tool
from handler.composition import build_app
from handler.errors import CatalogError, IndexNotPublishedError
from handler.index.format import LATEST, MANIFEST
from handler.index.store import S3IndexStore
from handler.policy.keys import hash_key
from handler.ranking.query import Embedder
from tests.support.aio import in_thread
from tests.support.servers import serve
from tests.support.serving import file_settings
from tests.support.workers import bearer_protected, upstream_mcp_server

TOKEN = "refresh-token"
HEADER = "Authorization: Bearer ${UPSTREAM_TOKEN}"
STATIC = Tool(
    name="Weather.GetForecast",
    app="Weather",
    description="Get the weather forecast for a city.",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}},
)


@pytest.fixture
def upstream() -> Iterator[tuple[MCPServer, str]]:
    """A server of its own per test: the tests add and remove its tools."""
    server = upstream_mcp_server()
    app = server.streamable_http_app(json_response=True, stateless_http=True)
    with serve(bearer_protected(app, TOKEN)) as url:
        yield server, url + "/mcp"


def multiply(a: int, b: int) -> int:
    return a * b


def latest(index_dir: Path) -> str:
    return (index_dir / LATEST).read_text().strip()


def refresh_cli(
    index_dir: Path, url: str, capsys: pytest.CaptureFixture[str], app: str = "Upstream", header: str | None = HEADER
) -> str:
    argv = ["refresh", "--index", str(index_dir), "--from-mcp", url, "--mcp-app", app]
    assert in_thread(cli.main, [*argv, *(["--header", header] if header else [])]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def test_refresh_publishes_only_when_the_upstream_tools_change(
    upstream: tuple[MCPServer, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    embedder: Embedder,
) -> None:
    server, url = upstream
    monkeypatch.setenv("UPSTREAM_TOKEN", TOKEN)
    catalog, index_dir = tmp_path / "static.jsonl", tmp_path / "index"
    catalog.write_text(json.dumps(STATIC.model_dump(mode="json", exclude_none=True)) + "\n")
    argv = ["build", "--catalog", str(catalog), "--from-mcp", url, "--mcp-app", "Upstream", "--header", HEADER]
    assert in_thread(cli.main, [*argv, "--out", str(index_dir), "--quiet"]) == 0
    first = latest(index_dir)
    capsys.readouterr()

    assert f"tools unchanged, kept build {first} (5 tools" in refresh_cli(index_dir, url, capsys)
    assert latest(index_dir) == first and len(list((index_dir / "builds").iterdir())) == 1

    server.add_tool(multiply, description="Multiply two integers.")
    assert "published new build" in refresh_cli(index_dir, url, capsys)
    second = latest(index_dir)
    assert second != first
    built = [json.loads(line) for line in (index_dir / "builds" / second / "tools.jsonl").read_text().splitlines()]
    names = {row["name"] for row in built}
    assert names == {"Weather.GetForecast", "Upstream.add", "Upstream.shout", "Upstream.explode", "Upstream.dawdle",
                     "Upstream.multiply"}  # fmt: skip
    manifests = [json.loads((index_dir / "builds" / b / MANIFEST).read_text()) for b in (first, second)]
    assert manifests[0]["catalog_sha256"] != manifests[1]["catalog_sha256"]

    assert f"tools unchanged, kept build {second}" in refresh_cli(index_dir, url, capsys)
    server.remove_tool("explode")
    assert "published new build" in refresh_cli(index_dir, url, capsys)
    third = [
        json.loads(line) for line in (index_dir / "builds" / latest(index_dir) / "tools.jsonl").read_text().splitlines()
    ]
    assert "Upstream.explode" not in {row["name"] for row in third}
    assert "Weather.GetForecast" in {row["name"] for row in third}  # what the upstream did not list is kept


def _reports(upstream_name: str) -> Callable[[str], dict[str, str]]:
    def run(table: str) -> dict[str, str]:
        return {"ran": upstream_name, "table": table}

    return run


def test_a_name_keeps_its_upstream_tool_across_refreshes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], embedder: Embedder
) -> None:
    """Issue 22 item 5: a deny on ``Db.drop_table`` (upstream ``drop-table``); the upstream adds ``drop_table``. The
    refresh named the original ``Db.drop_table_0bf82b65`` and gave ``Db.drop_table`` to the newcomer: the denied
    user ran the original, and the deny guarded the newcomer. Now the newcomer gets the suffix."""
    server = MCPServer(name="db", log_level="WARNING")
    server.add_tool(_reports("drop-table"), name="drop-table", description="Drop a table from the database.")
    index = tmp_path / "index"
    with serve(server.streamable_http_app(json_response=True, stateless_http=True)) as base:
        url = base + "/mcp"
        assert in_thread(cli.main, ["build", "--from-mcp", url, "--mcp-app", "Db", "--out", str(index), "--quiet"]) == 0
        server.add_tool(_reports("drop_table"), name="drop_table", description="Empty a table, keeping its columns.")
        assert "published new build" in refresh_cli(index, url, capsys, app="Db", header=None)
        rows = [
            json.loads(line) for line in (index / "builds" / latest(index) / "tools.jsonl").read_text().splitlines()
        ]
        newcomer = f"Db.drop_table_{hashlib.sha256(b'drop_table').hexdigest()[:8]}"
        assert {row["name"]: row["executor"]["tool"] for row in rows} == {
            "Db.drop_table": "drop-table",
            newcomer: "drop_table",
        }
        (tmp_path / "policy.json").write_text(json.dumps(_deny_policy("Db.drop_table")))
        settings = file_settings(str(index), tmp_path / "policy.json", tmp_path / "cache", policy_cache_seconds=0)
        with serve(build_app(settings, embedder=embedder)) as served:

            def execute(user: str, tool: str) -> httpx.Response:
                body = {"tool_name": tool, "input": {"table": "users"}, "user_id": user}
                return httpx.post(f"{served}/v1/tools/execute", json=body, headers={"Authorization": "Bearer k"})

            assert execute("mallory", "Db.drop_table").status_code == 404  # the deny still guards drop-table
            assert execute("alice", "Db.drop_table").json()["output"] == {"ran": "drop-table", "table": "users"}
            assert execute("mallory", newcomer).json()["output"] == {"ran": "drop_table", "table": "users"}


def test_the_refresh_backstop_finds_a_name_given_to_another_tool() -> None:
    """What a refresh refuses to publish (build_index/refresh/run.py moved_names), whatever named the new tools."""
    upstream = "http://127.0.0.1:9/mcp"
    was = STATIC.model_copy(
        update={"name": "Db.drop_table", "executor": Executor(kind="mcp", target=upstream, tool="drop-table")}
    )
    now = was.model_copy(
        update={"name": "db_DROP_TABLE", "executor": Executor(kind="mcp", target=upstream, tool="drop_table")}
    )
    assert moved_names([was], [was, STATIC]) == []
    assert moved_names([was], [now]) == [f"db_DROP_TABLE: mcp {upstream} drop-table, now mcp {upstream} drop_table"]


def _deny_policy(denied: str) -> dict[str, object]:
    return {
        "version": 1,
        "access_rules": [
            {"rule_id": "all", "subject": "*", "effect": "allow", "tools": ["*"]},
            {"rule_id": "no-drop", "subject": "mallory", "effect": "deny", "tools": [denied]},
        ],
        "api_keys": [{"key_id": "k", "key_hash": hash_key("k")}],
    }


def test_refresh_to_s3_with_the_token_from_secrets_manager(upstream: tuple[MCPServer, str], embedder: Embedder) -> None:
    server, url = upstream
    location = "s3://toolrec-refresh/index"
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="toolrec-refresh")
        secrets = boto3.client("secretsmanager", region_name="us-east-1")
        secrets.create_secret(Name="toolrec/acme/upstream", SecretString=TOKEN)
        header = {"Authorization": "Bearer ${secretsmanager:toolrec/acme/upstream}"}
        upstreams = parse_upstreams(json.dumps([{"url": url, "app": "Crm", "headers": header}]))
        tools = ingest(url, "Crm", headers={"Authorization": f"Bearer {TOKEN}"})
        first = publish(index_tools([STATIC, *tools], embedder, MODEL_ID, progress=False), location, s3).build_id
        store = S3IndexStore(s3, "toolrec-refresh", "index")

        def run() -> bool:
            reader = secrets_manager_reader(secrets)
            return refresh(location, upstreams, embedder, MODEL_ID, {}, s3_client=s3, read_secret=reader).published

        assert not run() and store.latest_build_id() == first
        server.add_tool(multiply, description="Multiply two integers.")
        assert run() and store.latest_build_id() != first
        second = store.latest_build_id()
        assert not run() and store.latest_build_id() == second


def test_refresh_needs_a_published_index(upstream: tuple[MCPServer, str], tmp_path: Path, embedder: Embedder) -> None:
    _, url = upstream
    with pytest.raises(IndexNotPublishedError, match="run `toolrec build`"):
        refresh(str(tmp_path / "none"), [Upstream(url=url)], embedder, MODEL_ID, {})


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("not json", "not JSON"),
        ("[]", "non-empty JSON list"),
        ('[{"url": "ftp://x"}]', "0.url"),
        ('[{"url": "http://a"}, {"url": "http://a"}]', "twice"),
        ('[{"url": "http://a", "headers": {"Authorization": "Bearer ${bad name}"}}]', "neither"),
    ],
)
def test_bad_upstream_lists_are_refused(text: str, problem: str) -> None:
    with pytest.raises(CatalogError, match=problem):
        parse_upstreams(text)
