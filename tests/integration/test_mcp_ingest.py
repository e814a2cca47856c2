"""``toolrec build --from-mcp URL``: an upstream MCP server's tools/list becomes catalog rows and an index whose
tools execute on that server."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import mcp_types as types
import pytest

from build_index import cli
from build_index.ingest.mcp_tools import app_name, catalog_entries, tool_part, tool_parts
from handler.catalog.names import describe_collisions
from handler.catalog.tool import APP_TOOL_NAME
from handler.execute.base import Dispatcher, ToolCall
from handler.execute.mcp_executor import McpExecutor
from handler.index.store import LocalIndexStore, load_latest
from handler.ranking.query import Embedder
from tests.support.aio import in_thread, run_async
from tests.support.servers import free_port, serve
from tests.support.workers import bearer_protected, upstream_mcp_app, upstream_mcp_server


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with serve(upstream_mcp_app()) as url:
        yield url + "/mcp"


def test_build_from_mcp_indexes_the_servers_tools_and_runs_them(
    upstream: str, tmp_path: Path, embedder: Embedder
) -> None:
    catalog_out, index_dir = tmp_path / "upstream.jsonl", tmp_path / "index"
    argv = ["build", "--from-mcp", upstream, "--mcp-app", "Upstream"]
    assert in_thread(cli.main, [*argv, "--catalog-out", str(catalog_out), "--out", str(index_dir), "--quiet"]) == 0

    rows = [json.loads(line) for line in catalog_out.read_text().splitlines()]
    assert {r["name"] for r in rows} == {"Upstream.add", "Upstream.shout", "Upstream.explode", "Upstream.dawdle"}
    add = next(r for r in rows if r["name"] == "Upstream.add")
    assert add["description"] == "Add two integers and return their sum."
    assert add["input_schema"]["required"] == ["a", "b"]
    assert add["executor"] == {"kind": "mcp", "target": upstream, "tool": "add", "timeout_s": 30.0}

    loaded = load_latest(LocalIndexStore(index_dir), tmp_path / "cache", embedder.fingerprint)
    tools = {t.name: t for t in loaded.tools}
    assert set(tools) == {r["name"] for r in rows}

    async def call() -> object:
        dispatcher = Dispatcher({"mcp": McpExecutor()})
        return await dispatcher.run(ToolCall(tools["Upstream.add"], {"a": 7, "b": 35}, "user"))

    assert run_async(call) == {"sum": 42}


def test_build_from_a_server_that_is_down_fails_clearly(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    assert in_thread(cli.main, ["build", "--from-mcp", url, "--out", str(tmp_path / "index"), "--quiet"]) == 2
    assert f"cannot list the tools of MCP server {url}: cannot connect" in capsys.readouterr().err
    assert not (tmp_path / "index").exists()


@pytest.fixture(scope="module")
def guarded_upstream() -> Iterator[str]:
    with serve(bearer_protected(upstream_mcp_app(), "s3cret-token")) as url:
        yield url + "/mcp"


@pytest.mark.parametrize(
    ("header", "status"),
    [
        (None, "401 Unauthorized (it wants credentials: see --header)"),
        ("Authorization: Bearer wrong", "401 Unauthorized (the credentials sent were refused)"),
    ],
    ids=["no-token", "wrong-token"],
)
def test_build_from_a_server_that_wants_a_token_names_the_url_and_status(
    guarded_upstream: str, header: str | None, status: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Before: "cannot list the tools of MCP server URL: unhandled errors in a TaskGroup (1 sub-exception)".
    extra = ["--header", header] if header else []
    argv = ["build", "--from-mcp", guarded_upstream, *extra, "--out", str(tmp_path / "index"), "--quiet"]
    assert in_thread(cli.main, argv) == 2
    err = capsys.readouterr().err
    assert f"cannot list the tools of MCP server {guarded_upstream}: it answered HTTP {status}" in err
    assert "TaskGroup" not in err and "wrong" not in err  # nor the token that was refused
    assert not (tmp_path / "index").exists()


def test_a_forbidden_answer_names_403(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with serve(bearer_protected(upstream_mcp_app(), "other", status=403)) as base:
        argv = ["build", "--from-mcp", base + "/mcp", "--out", str(tmp_path / "index"), "--quiet"]
        assert in_thread(cli.main, argv) == 2
    assert f"MCP server {base}/mcp: it answered HTTP 403 Forbidden" in capsys.readouterr().err


def test_build_with_the_token_from_the_environment_indexes_the_tools(
    guarded_upstream: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Embedder
) -> None:
    monkeypatch.setenv("UPSTREAM_TOKEN", "s3cret-token")
    catalog_out = tmp_path / "upstream.jsonl"
    argv = ["build", "--from-mcp", guarded_upstream, "--header", "Authorization: Bearer ${UPSTREAM_TOKEN}"]
    argv += ["--mcp-app", "Guarded", "--catalog-out", str(catalog_out), "--out", str(tmp_path / "index"), "--quiet"]
    assert in_thread(cli.main, argv) == 0
    written = catalog_out.read_text()
    assert {json.loads(line)["name"] for line in written.splitlines()} >= {"Guarded.add", "Guarded.shout"}
    assert "s3cret-token" not in written  # the credential is sent, never written into the catalog


def test_a_header_naming_an_unset_variable_fails_before_any_request(
    guarded_upstream: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("NO_SUCH_TOKEN", raising=False)
    argv = ["build", "--from-mcp", guarded_upstream, "--header", "Authorization: Bearer ${NO_SUCH_TOKEN}"]
    assert in_thread(cli.main, [*argv, "--out", str(tmp_path / "index"), "--quiet"]) == 2
    assert "the environment has no NO_SUCH_TOKEN" in capsys.readouterr().err


def test_build_needs_a_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert in_thread(cli.main, ["build", "--out", str(tmp_path / "index"), "--quiet"]) == 2
    assert "give --catalog, --from-mcp or --from-index" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("raw", "app"), [("weather server", "WeatherServer"), ("my-mcp_v2", "MyMcpV2"), ("42 tools", "Mcp42Tools")]
)
def test_app_names(raw: str, app: str) -> None:
    assert app_name(raw) == app


@pytest.mark.parametrize(("raw", "part"), [("get-forecast.v2", "get_forecast_v2"), ("1st", "T1st"), ("ok", "ok")])
def test_tool_parts(raw: str, part: str) -> None:
    assert tool_part(raw) == part


# Upstream names the catalog refuses as they are: a version suffix, a space, a letter outside ASCII, a bare version.
AWKWARD = ["get-forecast.v2", "get_forecast_v2", "list items", "Über-Tool", "v2"]


@pytest.mark.parametrize(
    ("raw", "part"),
    [
        ("get-forecast.v2", "get_forecast"),
        ("get_forecast_v2", "get_forecast"),
        ("get forecast v2", "get_forecast"),
        ("SendMessage@1.2.0", "SendMessage"),
        ("list items", "list_items"),
        ("Über-Tool", "Uber_Tool"),
        ("v2", "Tool"),
        ("天気", "Tool"),
        ("1st", "T1st"),
    ],
)
def test_an_upstream_name_alone_becomes_a_catalog_name(raw: str, part: str) -> None:
    assert tool_parts("Upstream", [raw]) == [part]
    # Before: the catalog refused the row (a version, a character outside the name pattern) and the build stopped.
    (entry,) = catalog_entries("http://up/mcp", "", [types.Tool(name=raw, input_schema={"type": "object"})], "Up")
    assert entry.name == f"Up.{part}" and APP_TOOL_NAME.match(entry.name)
    assert entry.executor is not None and entry.executor.tool == raw  # calls still reach the upstream's own name


def test_upstream_names_that_would_fold_into_one_stay_distinct_whatever_the_listing_order() -> None:
    raws = [*AWKWARD, "get_forecast", "Send Message", "send_message"]
    parts = dict(zip(raws, tool_parts("Upstream", raws), strict=True))
    assert describe_collisions([f"Upstream.{p}" for p in parts.values()]) is None
    # The names spelled as the catalog wants keep them; the ones folding onto them get a suffix of their own.
    assert parts["get_forecast"] == "get_forecast" and parts["send_message"] == "send_message"
    assert parts["get-forecast.v2"].startswith("get_forecast_") and parts["Send Message"].startswith("Send_Message_")
    assert parts["get-forecast.v2"] != parts["get_forecast_v2"]
    assert dict(zip(raws[::-1], tool_parts("Upstream", raws[::-1]), strict=True)) == parts


def _answering_as(name: str) -> Callable[[str], str]:
    def answer(city: str) -> str:
        return f"{name} for {city}"

    return answer


def test_build_from_mcp_takes_upstream_names_the_catalog_would_refuse_and_calls_each_by_its_own(
    tmp_path: Path, embedder: Embedder
) -> None:
    server = upstream_mcp_server()
    for name in AWKWARD:
        server.add_tool(_answering_as(name), name=name, description=f"Answer as {name}.")
    catalog_out, index_dir = tmp_path / "upstream.jsonl", tmp_path / "index"
    with serve(server.streamable_http_app(json_response=True, stateless_http=True)) as base:
        url = base + "/mcp"
        argv = ["build", "--from-mcp", url, "--mcp-app", "Upstream", "--catalog-out", str(catalog_out)]
        assert in_thread(cli.main, [*argv, "--out", str(index_dir), "--quiet"]) == 0

        rows = [json.loads(line) for line in catalog_out.read_text().splitlines()]
        names = {r["executor"]["tool"]: r["name"] for r in rows}
        assert set(names) >= set(AWKWARD)
        assert names["list items"] == "Upstream.list_items" and names["Über-Tool"] == "Upstream.Uber_Tool"
        assert describe_collisions(list(names.values())) is None
        tools = {
            t.name: t for t in load_latest(LocalIndexStore(index_dir), tmp_path / "cache", embedder.fingerprint).tools
        }

        async def call(name: str) -> object:
            return await Dispatcher({"mcp": McpExecutor()}).run(ToolCall(tools[name], {"city": "Oslo"}, "user"))

        for upstream_name in AWKWARD:
            assert run_async(call, names[upstream_name]) == {"result": f"{upstream_name} for Oslo"}
