"""The stateless JSON-RPC exchange on its own: every message shape in, the one reply out, with a small host."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pytest

from handler.errors import ServiceUnavailableError
from handler.mcp.jsonrpc import Reply, exchange
from tests.support.aio import run_async


class Host:
    instructions = "call Echo"

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def list_tools(self, offset: int) -> tuple[list[types.Tool], int | None]:
        return [types.Tool(name="Echo", description="Echo a text.", input_schema={"type": "object"})][offset:], None

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        self.calls.append((name, arguments))
        if name == "Broken":
            raise ServiceUnavailableError("the index is not loaded")
        if name == "Crash":
            raise KeyError("bug")
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(arguments))])


def send(message: Any, version: str | None = "2025-06-18", host: Host | None = None) -> Reply:
    raw = message if isinstance(message, bytes) else json.dumps(message).encode()

    async def main() -> Reply:
        return await exchange(raw, version, host or Host())

    return run_async(main)


def request(method: str, params: dict[str, Any] | None = None, request_id: int | str = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def initialize(version: str) -> dict[str, Any]:
    return request(
        "initialize",
        {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    )


@pytest.mark.parametrize(
    ("asked", "answered"), [("2025-06-18", "2025-06-18"), ("2024-11-05", "2024-11-05"), ("2030-01-01", "2025-11-25")]
)
def test_initialize_negotiates_a_handshake_version(asked: str, answered: str) -> None:
    reply = send(initialize(asked), version=None)
    assert reply.status == 200 and reply.body is not None
    result = reply.body["result"]
    assert result["protocolVersion"] == answered
    assert result["capabilities"] == {"tools": {"listChanged": False}}
    assert result["serverInfo"]["name"] == "toolrec"
    assert result["instructions"] == "call Echo"


def test_notifications_and_responses_get_202_without_body() -> None:
    assert send({"jsonrpc": "2.0", "method": "notifications/initialized"}) == Reply(202)
    assert send({"jsonrpc": "2.0", "id": 5, "result": {}}) == Reply(202)


def test_ping_and_list() -> None:
    assert send(request("ping", request_id="a")).body == {"jsonrpc": "2.0", "id": "a", "result": {}}
    tools = send(request("tools/list")).body
    assert tools is not None
    assert tools["result"]["tools"] == [
        {"name": "Echo", "description": "Echo a text.", "inputSchema": {"type": "object"}}
    ]


def test_call_returns_the_hosts_result() -> None:
    host = Host()
    reply = send(request("tools/call", {"name": "Echo", "arguments": {"text": "hi"}}), host=host)
    assert reply.body is not None
    assert reply.body["result"]["content"] == [{"type": "text", "text": '{"text": "hi"}'}]
    assert host.calls == [("Echo", {"text": "hi"})]


@pytest.mark.parametrize("name", ["Broken", "Crash"])
def test_a_failing_call_is_an_error_result_not_a_protocol_error(name: str) -> None:
    reply = send(request("tools/call", {"name": name, "arguments": {}}))
    assert reply.status == 200 and reply.body is not None
    result = reply.body["result"]
    assert result["isError"] is True
    assert "Traceback" not in result["content"][0]["text"] and "KeyError" not in result["content"][0]["text"]


@pytest.mark.parametrize(
    ("message", "status", "code"),
    [
        (b"{not json", 400, types.PARSE_ERROR),
        (json.dumps([request("ping")]).encode(), 400, types.INVALID_REQUEST),
        (json.dumps({"id": 1, "method": "ping"}).encode(), 400, types.INVALID_REQUEST),
        (json.dumps(request("server/discover")).encode(), 200, types.METHOD_NOT_FOUND),
        (json.dumps(request("resources/list")).encode(), 200, types.METHOD_NOT_FOUND),
        (json.dumps(request("tools/call", {"arguments": {}})).encode(), 200, types.INVALID_PARAMS),
    ],
)
def test_protocol_errors(message: bytes, status: int, code: int) -> None:
    reply = send(message)
    assert reply.status == status and reply.body is not None
    assert reply.body["error"]["code"] == code
    assert "id" in reply.body  # null when the request's id is unknown, as JSON-RPC requires


def test_unsupported_version_header_names_the_supported_ones() -> None:
    reply = send(request("tools/list"), version="2026-07-28")
    assert reply.status == 400 and reply.body is not None
    assert reply.body["error"]["code"] == types.UNSUPPORTED_PROTOCOL_VERSION
    assert "2025-11-25" in reply.body["error"]["data"]["supported"]


def test_results_are_shaped_for_the_sessions_version() -> None:
    # 2026-era fields (resultType, ttlMs) never reach a handshake-era client.
    body = send(request("tools/list"), version="2025-03-26").body
    assert body is not None and set(body["result"]) == {"tools"}


@pytest.mark.parametrize("request_id", [None, {"x": 1}, [1], True, 1.5])
def test_a_request_with_an_id_that_is_not_a_string_or_integer_is_invalid_not_a_notification(request_id: Any) -> None:
    # JSON-RPC 2.0: a request id is a string or number; MCP: a string or integer, never null.
    reply = send({"jsonrpc": "2.0", "id": request_id, "method": "ping"})
    assert reply.status == 400 and reply.body is not None
    assert reply.body["id"] is None and reply.body["error"]["code"] == types.INVALID_REQUEST
