"""A tool's input_schema never makes toolrec touch the network (issue 15, item 1).

jsonschema's default resolver fetches a remote ``$ref`` (with no timeout) when validation reaches it, and
``toolrec build --from-mcp`` copies an upstream server's schemas as they are: an upstream server could point the
gateway at any URL (SSRF), and 40 calls against a host that never answers held every worker thread, so ``/healthz``,
select and search stopped for everyone. Now the build refuses such a schema, naming the tool and where the
reference is, and an index built before that (which may still hold one) fails the call cleanly: a 400 that names
the reference, nothing fetched.

The "host" here is a loopback socket that accepts connections and never answers; it counts what reaches it.
"""

from __future__ import annotations

import dataclasses
import json
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp.server.mcpserver import MCPServer

from build_index import cli
from build_index.build import index_tools
from build_index.model_prepare import MODEL_ID
from build_index.publish import publish
from handler.catalog.tool import Executor, Tool
from handler.composition import build_app
from handler.errors import CatalogError
from handler.policy.keys import hash_key
from handler.ranking.query import Embedder
from tests.reliability.conftest import assert_error_body
from tests.support.aio import in_thread
from tests.support.servers import serve
from tests.support.serving import file_settings
from tests.support.workers import http_worker_app

KEY = "trk_schema-refs-0123456789abcdef012345"
USER = "eve"
CONCURRENT_EXECUTES = 48  # more than anyio's 40 worker threads: enough to starve every other request before the fix


@dataclasses.dataclass
class BlackHole:
    """A TCP server on 127.0.0.1 that accepts and never answers; ``url`` is a schema URL on it."""

    url: str
    connections: list[socket.socket]


@contextmanager
def black_hole() -> Iterator[BlackHole]:
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(256)
    listener.settimeout(0.05)
    hole = BlackHole(f"http://127.0.0.1:{listener.getsockname()[1]}/schemas/place.json", [])
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            hole.connections.append(connection)

    thread = threading.Thread(target=accept, name="black-hole", daemon=True)
    thread.start()
    try:
        yield hole
    finally:
        stop.set()
        thread.join(timeout=5)
        for connection in hole.connections:  # a fetch still waiting (before the fix) ends here
            connection.close()
        listener.close()


def remote_schema(url: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"city": {"type": "string"}, "where": {"$ref": url}},
        "required": ["city"],
    }


def lookup_tool(schema: dict[str, Any], worker: str = "http://127.0.0.1:9") -> Tool:
    return Tool(
        name="Places.Lookup",
        app="Places",
        description="Look up a place by city name.",
        input_schema=schema,
        executor=Executor(kind="http", target=f"{worker}/forecast", timeout_s=5),
    )


def test_the_build_refuses_a_schema_with_a_remote_ref_naming_the_tool(embedder: Embedder) -> None:
    with black_hole() as hole:
        nested = {"type": "object", "properties": {"list": {"type": "array", "items": {"$ref": hole.url}}}}
        with pytest.raises(CatalogError) as raised:
            index_tools([lookup_tool(remote_schema(hole.url)), _named("Places.Nested", nested)], embedder, MODEL_ID,
                        progress=False)  # fmt: skip
        message = str(raised.value)
        assert "Places.Lookup" in message and "/properties/where/$ref" in message and hole.url in message, message
        assert "Places.Nested" in message and "/properties/list/items/$ref" in message, message
        assert hole.connections == []


def test_the_build_accepts_local_refs(embedder: Embedder) -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"type": "string"}}}
    # "$ref" as a property name or inside an example is data, not a reference.
    schema["properties"]["$ref"] = {"type": "string", "examples": [{"$ref": "http://127.0.0.1:9/x"}]}
    built = index_tools([_named("Local.Refs", schema)], embedder, MODEL_ID, progress=False)
    assert [t.name for t in built.tools] == ["Local.Refs"]


def test_toolrec_build_refuses_such_a_catalog(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with black_hole() as hole:
        catalog = tmp_path / "tools.jsonl"
        catalog.write_text(lookup_tool(remote_schema(hole.url)).model_dump_json() + "\n", encoding="utf-8")
        out = tmp_path / "index"
        assert in_thread(cli.main, ["build", "--catalog", str(catalog), "--out", str(out), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert "Places.Lookup" in err and "/properties/where/$ref" in err, err
        assert not out.exists() and hole.connections == []


def test_toolrec_build_from_mcp_refuses_an_upstream_schema_with_a_remote_ref(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with black_hole() as hole:
        with serve(_planting_upstream(hole.url).streamable_http_app(json_response=True, stateless_http=True)) as up:
            catalog_out, out = tmp_path / "upstream.jsonl", tmp_path / "index"
            argv = ["build", "--from-mcp", f"{up}/mcp", "--mcp-app", "Up", "--catalog-out", str(catalog_out)]
            assert in_thread(cli.main, [*argv, "--out", str(out), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert "'lookup'" in err and "/properties/where/$ref" in err, err
        assert not out.exists() and not catalog_out.exists() and hole.connections == []


@pytest.mark.slow
# Before the fix jsonschema warned (DeprecationWarning) and then fetched; production does not turn that warning into
# an error, so neither does this test: what it checks is what a deployed server did, a fetch that never returns.
@pytest.mark.filterwarnings("ignore:Automatically retrieving remote references:DeprecationWarning")
def test_an_old_index_with_a_remote_ref_fails_the_call_cleanly_and_starves_nothing(
    embedder: Embedder, tmp_path: Path
) -> None:
    calls: list[dict[str, Any]] = []
    with black_hole() as hole, serve(http_worker_app(calls)) as worker:
        # An index written before the build refused remote refs: built with a clean schema, then given the old row.
        clean = lookup_tool({"type": "object", "properties": {"city": {"type": "string"}}}, worker)
        built = index_tools([clean], embedder, MODEL_ID, progress=False)
        old_row = lookup_tool(remote_schema(hole.url), worker)
        publish(dataclasses.replace(built, tools=[old_row]), str(tmp_path / "index"))
        policy_file = _policy(tmp_path)
        settings = file_settings(str(tmp_path / "index"), policy_file, tmp_path / "cache")
        with serve(build_app(settings, embedder=embedder)) as base, httpx.Client(base_url=base, timeout=10) as client:
            client.headers["Authorization"] = f"Bearer {KEY}"
            probes = {
                "healthz": lambda: client.get("/healthz"),
                "select": lambda: client.post("/v1/tools/select", json={"tasks": ["look up a city"], "user_id": USER}),
                "search": lambda: client.post("/v1/tools/search", json={"query": "place city", "user_id": USER}),
            }
            usual = {name: max(_timed(probe)[1] for _ in range(3)) for name, probe in probes.items()}

            def execute(i: int) -> httpx.Response:
                body = {"tool_name": "Places.Lookup", "input": {"city": f"c{i}", "where": "x"}, "user_id": USER}
                return httpx.post(f"{base}/v1/tools/execute", json=body, headers=client.headers, timeout=10)

            with ThreadPoolExecutor(max_workers=CONCURRENT_EXECUTES) as pool:
                pending = [pool.submit(execute, i) for i in range(CONCURRENT_EXECUTES)]
                time.sleep(0.5)  # let the executes reach validation first
                during = {name: _timed(probe) for name, probe in probes.items()}
                answers = [future.result() for future in pending]

    for name, (response, seconds) in during.items():
        assert response.status_code == 200, (name, response.text)
        assert seconds < max(2.0, 5 * usual[name]), (name, seconds, usual[name])
    for response in answers:
        assert response.status_code == 400, response.text
        body = response.json()
        assert_error_body(400, body)
        [problem] = body["field_errors"]
        assert "/properties/where/$ref" in problem["message"] and "not run" in problem["message"], problem
    assert hole.connections == [], "validation reached the schema URL"
    assert calls == []  # nothing ran with unchecked input


def _named(name: str, schema: dict[str, Any]) -> Tool:
    return Tool(name=name, app=name.partition(".")[0], description="A tool for the schema checks.", input_schema=schema)


def _timed(probe: Any) -> tuple[httpx.Response, float]:
    started = time.perf_counter()
    try:
        response = probe()
    except httpx.TimeoutException:
        pytest.fail("a probe got no answer within 10 s while the executes ran")
    return response, time.perf_counter() - started


def _policy(root: Path) -> Path:
    policy = {
        "version": 1,
        "gateways": [{"gateway_id": "g", "allowed": ["*"], "recommendation": "on"}],
        "access_rules": [{"rule_id": "all", "subject": "*", "effect": "allow", "tools": ["*"]}],
        "api_keys": [{"key_id": "refs", "key_hash": hash_key(KEY)}],
    }
    path = root / "policy.json"
    path.write_text(json.dumps(policy))
    return path


def _planting_upstream(url: str) -> MCPServer:
    """An upstream MCP server whose ``lookup`` tool lists an input schema with a remote ``$ref``."""

    class Planting(MCPServer):
        async def list_tools(self) -> list[types.Tool]:
            tools = await super().list_tools()
            return [t.model_copy(update={"input_schema": remote_schema(url)}) for t in tools]

    server = Planting(name="planting", log_level="WARNING")

    @server.tool(description="Look up a place.")
    def lookup(city: str) -> str:
        return city

    return server


@pytest.mark.parametrize(
    ("schema", "arguments"),
    [
        (
            {"type": "object", "properties": {"city": {"type": "string", "pattern": "^(a|aa)+$"}}},
            {"city": "a" * 64 + "!"},
        ),
        (
            {"type": "object", "patternProperties": {"^(a|aa)+$": {}}, "additionalProperties": False},
            {"a" * 64 + "!": 1},
        ),
    ],
    ids=["pattern", "property-names"],
)
def test_a_pattern_that_backtracks_without_end_is_bounded_and_starves_nothing(
    embedder: Embedder, tmp_path: Path, schema: dict[str, Any], arguments: dict[str, Any]
) -> None:
    calls: list[dict[str, Any]] = []
    with serve(http_worker_app(calls)) as worker:
        # Python's re would spend hours on this input (2^64 ways to split it); nothing in the catalog refuses it.
        publish(index_tools([lookup_tool(schema, worker)], embedder, MODEL_ID, progress=False), str(tmp_path / "index"))
        settings = file_settings(str(tmp_path / "index"), _policy(tmp_path), tmp_path / "cache")
        with serve(build_app(settings, embedder=embedder)) as base, httpx.Client(base_url=base, timeout=10) as client:
            client.headers["Authorization"] = f"Bearer {KEY}"
            body = {"tool_name": "Places.Lookup", "input": arguments, "user_id": USER}
            with ThreadPoolExecutor(max_workers=4) as pool:
                pending = [pool.submit(_timed, lambda: client.post("/v1/tools/execute", json=body)) for _ in range(4)]
                healthz, healthz_seconds = _timed(lambda: client.get("/healthz"))
                answers = [future.result() for future in pending]
    assert healthz.status_code == 200 and healthz_seconds < 2.0
    for response, seconds in answers:
        assert response.status_code == 400, response.text
        [problem] = response.json()["field_errors"]
        assert "took over" in problem["message"] and "not run" in problem["message"], problem
        assert seconds < 5.0
    assert calls == []
