"""JSON that Python parses but cannot hand on (issue 15, items 4 and 5): nesting past pydantic's serialiser (~254
levels) or Python's recursion limit (~1,000), lone surrogates ("\\ud800") and NaN, in a tool's output, a call's
input and an MCP message. Once a tool has run the caller gets a clear tool error (REST ``success: false``, MCP
``isError``) and the run is in the query log; input that cannot be sent is a 400 naming the field; an MCP body
nested too deep is the JSON-RPC parse error. Never a 500, never a run repeated.

Real servers on loopback: toolrec (the real composition root) and the test HTTP worker, called by the REST API
and by the official MCP client.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.server.mcpserver import MCPServer

from build_index.build import index_tools
from build_index.model_prepare import MODEL_ID
from build_index.publish import publish
from handler.catalog.tool import Executor, Tool
from handler.composition import build_app
from handler.policy.file_store import query_log_file
from handler.policy.keys import hash_key
from handler.ranking.query import Embedder
from tests.reliability.conftest import assert_error_body
from tests.support.aio import run_async
from tests.support.mcp_client import error_of, mcp_client, structured
from tests.support.servers import serve
from tests.support.serving import file_settings
from tests.support.workers import http_worker_app

KEY = "trk_untrusted-json-0123456789abcdef0123"
USER = "dana"
GATEWAY_ON, GATEWAY_OFF = "meta", "direct"
EXECUTE = "/v1/tools/execute"
NODE = {"type": "object", "properties": {"child": {"$ref": "#/$defs/node"}}}


@dataclass
class Setup:
    base: str
    worker_calls: list[dict[str, Any]]
    query_log: Path

    def post(self, path: str, body: Any = None, content: bytes | None = None, **headers: str) -> httpx.Response:
        all_headers = {"Authorization": f"Bearer {KEY}", "Content-Type": "application/json", **headers}
        raw = content if content is not None else json.dumps(body).encode()
        return httpx.post(f"{self.base}{path}", content=raw, headers=all_headers, timeout=30)

    def execute(self, tool: str, inputs: dict[str, Any], query_id: str | None = None) -> httpx.Response:
        body = {"tool_name": tool, "input": inputs, "user_id": USER, **({"query_id": query_id} if query_id else {})}
        return self.post(EXECUTE, body)

    def execute_raw(self, tool: str, raw_input: str) -> httpx.Response:
        """``raw_input`` goes into the body as written, so it can hold what json.dumps never writes (NaN, \\ud800)."""
        content = f'{{"tool_name": "{tool}", "user_id": "{USER}", "input": {raw_input}}}'.encode()
        return self.post(EXECUTE, content=content)

    def select(self, task: str) -> str:
        response = self.post("/v1/tools/select", {"tasks": [task], "user_id": USER})
        assert response.status_code == 200, response.text
        query_id: str = response.json()["query_id"]
        return query_id

    def executions_logged(self, query_id: str) -> list[dict[str, Any]]:
        lines = [json.loads(line) for line in self.query_log.read_text(encoding="utf-8").splitlines()]
        return [line["record"] for line in lines if line["kind"] == "execution" and line["query_id"] == query_id]

    def calls_to(self, path: str) -> int:
        return sum(1 for call in self.worker_calls if call["path"] == path)


@pytest.fixture(scope="module")
def setup(embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    root = tmp_path_factory.mktemp("untrusted-json")
    calls: list[dict[str, Any]] = []
    with serve(http_worker_app(calls)) as worker, serve(_nesting_upstream()) as upstream:

        def tool(name: str, description: str, path: str, schema: dict[str, Any]) -> Tool:
            executor = Executor(kind="http", target=f"{worker}/{path}", timeout_s=10)
            app = name.partition(".")[0]
            return Tool(name=name, app=app, description=description, input_schema=schema, executor=executor)

        tools = [
            tool("Nested.Output", "Return a document nested many levels deep.", "nested",
                 {"type": "object", "properties": {"depth": {"type": "integer"}}, "required": ["depth"]}),
            tool("Odd.Output", "Return a value that JSON cannot carry.", "odd",
                 {"type": "object", "properties": {"kind": {"enum": ["nan", "surrogate", "error"]}},
                  "required": ["kind"]}),
            tool("Echo.Input", "Echo the input back to the caller.", "echo",
                 {"type": "object", "properties": {"text": {"type": "string"}}}),
            tool("Tree.Walk", "Walk a tree of nodes.", "echo",
                 {"type": "object", "properties": {"node": {"$ref": "#/$defs/node"}}, "$defs": {"node": NODE}}),
            tool("Loop.Call", "A tool whose schema refers to itself in a circle.", "echo",
                 {"type": "object", "properties": {"x": {"$ref": "#/$defs/a"}},
                  "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}}),
            Tool(name="Upstream.Nest", app="Upstream", description="Nest a document on the upstream MCP server.",
                 input_schema={"type": "object", "properties": {"depth": {"type": "integer"}}},
                 executor=Executor(kind="mcp", target=f"{upstream}/mcp", tool="nest", timeout_s=10)),
        ]  # fmt: skip
        publish(index_tools(tools, embedder, MODEL_ID, progress=False), str(root / "index"))
        policy = {
            "version": 1,
            "gateways": [
                {"gateway_id": GATEWAY_ON, "allowed": ["*"], "recommendation": "on"},
                {"gateway_id": GATEWAY_OFF, "allowed": ["*"], "recommendation": "off"},
            ],
            "access_rules": [{"rule_id": "all", "subject": "*", "effect": "allow", "tools": ["*"]}],
            "api_keys": [{"key_id": "json", "key_hash": hash_key(KEY)}],
        }
        policy_file = root / "policy.json"
        policy_file.write_text(json.dumps(policy))
        settings = file_settings(str(root / "index"), policy_file, root / "cache")
        with serve(build_app(settings, embedder=embedder)) as base:
            yield Setup(base, calls, query_log_file(policy_file))


def _nesting_upstream() -> Any:
    """An upstream MCP server whose ``nest`` tool answers, as text, JSON nested ``depth`` levels deep."""
    server = MCPServer(name="nesting", log_level="WARNING")

    @server.tool(description="Nest a document.", structured_output=False)  # text content: what _maybe_json reads
    def nest(depth: int) -> str:
        return '{"level":' * depth + "0" + "}" * depth

    return server.streamable_http_app(json_response=True, stateless_http=True)


@pytest.fixture
def errors_logged() -> Iterator[list[logging.LogRecord]]:
    """ERROR records the app logs: a handled bad input is not an operator's problem, so there are none."""
    records: list[logging.LogRecord] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(record)

    collector = Collect(level=logging.ERROR)
    logging.getLogger("handler").addHandler(collector)
    yield records
    logging.getLogger("handler").removeHandler(collector)


def _failed_after_running(body: dict[str, Any], tool: str) -> str:
    assert body["success"] is False and body["tool_name"] == tool and body["output"] is None, body
    assert body["error"]["name"] == "executor_unavailable", body
    message: str = body["error"]["message"]
    assert f"{tool} ran" in message and "cannot be returned" in message, message
    return message


# Item 4: an output that cannot be returned, after the tool ran.


@pytest.mark.parametrize("depth", [300, 5000])
def test_rest_execute_of_a_deeply_nested_output_is_a_tool_error_and_recorded(
    setup: Setup, depth: int, errors_logged: list[logging.LogRecord]
) -> None:
    query_id = setup.select("return a document nested many levels deep")
    before = setup.calls_to("/nested")
    response = setup.execute("Nested.Output", {"depth": depth}, query_id)
    assert response.status_code == 200, response.text
    assert "nested" in _failed_after_running(response.json(), "Nested.Output")
    assert setup.calls_to("/nested") == before + 1  # it ran once, and nothing ran it again
    [record] = setup.executions_logged(query_id)
    assert (record["tool_name"], record["outcome"]) == ("Nested.Output", "executor_unavailable")
    assert errors_logged == []


def test_an_upstream_mcp_tool_answering_deep_json_is_a_tool_error(setup: Setup) -> None:
    response = setup.execute("Upstream.Nest", {"depth": 300})
    assert response.status_code == 200, response.text
    assert "nested" in _failed_after_running(response.json(), "Upstream.Nest")


def test_an_output_nested_within_the_limit_is_returned(setup: Setup) -> None:
    response = setup.execute("Nested.Output", {"depth": 100})
    assert response.status_code == 200 and response.json()["success"] is True, response.text
    output, levels = response.json()["output"], 0
    while isinstance(output, dict):
        output, levels = output["level"], levels + 1
    assert (output, levels) == ("bottom", 100)


@pytest.mark.parametrize(("kind", "reason"), [("nan", "finite number"), ("surrogate", "surrogate")])
def test_rest_execute_of_an_output_json_cannot_carry_is_a_tool_error(setup: Setup, kind: str, reason: str) -> None:
    response = setup.execute("Odd.Output", {"kind": kind})
    assert response.status_code == 200, response.text
    assert reason in _failed_after_running(response.json(), "Odd.Output")


def test_a_tool_error_whose_message_holds_a_lone_surrogate_is_returned_escaped(setup: Setup) -> None:
    response = setup.execute("Odd.Output", {"kind": "error"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["success"] is False and body["error"] == {"name": "tool_error", "message": "printer \\ud800 jammed"}


@pytest.mark.parametrize("depth", [300, 5000])
def test_mcp_use_tool_of_a_deeply_nested_output_is_an_is_error_result_and_recorded(
    setup: Setup, depth: int, errors_logged: list[logging.LogRecord]
) -> None:
    query_id = setup.select("return a document nested many levels deep")
    before = setup.calls_to("/nested")

    async def call() -> Any:
        async with mcp_client(f"{setup.base}/mcp/{GATEWAY_ON}", KEY, USER) as client:
            arguments = {"tool_name": "Nested.Output", "inputs": {"depth": depth}, "query_id": query_id}
            return await client.call_tool("Toolrec_UseTool", arguments)

    result = run_async(call)
    error = error_of(result)
    assert error["name"] == "executor_unavailable" and "Nested.Output ran" in error["message"], error
    assert structured(result)["success"] is False
    assert setup.calls_to("/nested") == before + 1
    [record] = setup.executions_logged(query_id)
    assert (record["tool_name"], record["outcome"]) == ("Nested.Output", "executor_unavailable")
    assert errors_logged == []


def test_mcp_direct_call_of_a_deeply_nested_output_is_an_is_error_result(setup: Setup) -> None:
    message = {
        "jsonrpc": "2.0",
        "id": 3,
        "method": "tools/call",
        "params": {"name": "Nested_Output", "arguments": {"depth": 300}},
    }
    response = setup.post(f"/mcp/{GATEWAY_OFF}", message, **{"X-Toolrec-User": USER})
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["isError"] is True and "Nested.Output ran" in result["structuredContent"]["error"]["message"]


# Item 5: input that cannot be sent on, and MCP bodies that cannot be decoded.


def test_rest_execute_with_a_lone_surrogate_in_input_is_a_validation_error(setup: Setup) -> None:
    before = setup.calls_to("/echo")
    response = setup.execute_raw("Echo.Input", '{"text": "abc\\ud800"}')
    assert response.status_code == 400, response.text
    body = response.json()
    assert_error_body(400, body)
    assert body["name"] == "validation_error"
    [problem] = body["field_errors"]
    assert problem["field"] == "text" and "surrogate" in problem["message"], problem
    assert setup.calls_to("/echo") == before  # nothing ran


def test_a_lone_surrogate_in_an_input_key_is_named_readably(setup: Setup) -> None:
    response = setup.execute_raw("Echo.Input", '{"k\\udfff": 1}')
    assert response.status_code == 400, response.text
    [problem] = response.json()["field_errors"]
    assert problem["field"] == "k\\udfff", problem


def test_rest_execute_with_nan_in_input_is_a_validation_error(setup: Setup) -> None:
    response = setup.execute_raw("Echo.Input", '{"text": "x", "extra": [1, NaN]}')
    assert response.status_code == 400, response.text
    [problem] = response.json()["field_errors"]
    assert problem["field"] == "extra.1" and "finite number" in problem["message"], problem


def test_mcp_use_tool_with_a_lone_surrogate_says_why(setup: Setup, errors_logged: list[logging.LogRecord]) -> None:
    before = setup.calls_to("/echo")
    raw = (
        '{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "Toolrec_UseTool", '
        '"arguments": {"tool_name": "Echo.Input", "inputs": {"text": "\\ud800"}}}}'
    )
    response = setup.post(f"/mcp/{GATEWAY_ON}", content=raw.encode(), **{"X-Toolrec-User": USER})
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["isError"] is True, result
    error = result["structuredContent"]["error"]
    assert error["name"] == "validation_error" and error["field_errors"][0]["field"] == "text", error
    assert "surrogate" in error["field_errors"][0]["message"]
    assert setup.calls_to("/echo") == before
    assert errors_logged == []


@pytest.mark.parametrize("tool", ["Tree.Walk", "Echo.Input"])
def test_input_nested_too_deep_is_a_validation_error(setup: Setup, tool: str) -> None:
    node: dict[str, Any] = {}
    for _ in range(400):
        node = {"child": node}
    response = setup.execute(tool, {"node": node})
    assert response.status_code == 400, response.text
    body = response.json()
    assert_error_body(400, body)
    [problem] = body["field_errors"]
    assert problem["field"] == "node" and "levels deep" in problem["message"], problem


def test_a_schema_that_refers_to_itself_in_a_circle_is_refused_cleanly(setup: Setup) -> None:
    response = setup.execute("Loop.Call", {"x": 1})
    assert response.status_code == 400, response.text
    body = response.json()
    assert_error_body(400, body)
    assert "the call was not run" in body["field_errors"][0]["message"], body


def test_a_tree_within_the_limit_is_checked_and_runs(setup: Setup) -> None:
    node: dict[str, Any] = {}
    for _ in range(30):
        node = {"child": node}
    response = setup.execute("Tree.Walk", {"node": node})
    assert response.status_code == 200 and response.json()["output"] == {"received": {"node": node}}, response.text


@pytest.mark.parametrize("depth", [1_200, 20_000])
def test_an_mcp_body_nested_too_deep_is_a_json_rpc_parse_error(setup: Setup, depth: int) -> None:
    raw = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"a": ' + b"[" * depth + b"]" * depth + b"}}"
    response = setup.post(f"/mcp/{GATEWAY_ON}", content=raw, **{"X-Toolrec-User": USER})
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None and body["error"]["code"] == -32700, body


@pytest.mark.parametrize(
    "raw",
    [
        '{"jsonrpc": "2.0", "id": "r\\ud800", "method": "ping"}',
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/\\ud800"}',
    ],
)
def test_an_mcp_message_echoing_a_lone_surrogate_still_gets_a_json_rpc_answer(setup: Setup, raw: str) -> None:
    response = setup.post(f"/mcp/{GATEWAY_ON}", content=raw.encode(), **{"X-Toolrec-User": USER})
    assert response.status_code < 500, response.text
    body = response.json()  # the surrogate comes back escaped, as the client sent it
    assert body["jsonrpc"] == "2.0" and body["id"] == json.loads(raw)["id"], body
