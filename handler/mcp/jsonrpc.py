"""One stateless MCP exchange: a JSON-RPC message in, at most one JSON-RPC message out.

Why by hand: the SDK's streamable-HTTP server runs inside ``StreamableHTTPSessionManager.run()``, a task group that
may be entered once per instance and lives as long as the app. Mangum runs the ASGI lifespan on every invocation
and Lambda freezes the process between them, so that long-lived task group does not fit. What this module writes
itself is only the dispatch loop of one request; parsing, per-protocol-version validation of every request
(``mcp_types.methods.parse_client_request``) and the version-shaped serialization of every result
(``serialize_server_result``) are the SDK's. No session id is issued: every request stands alone, so any warm
instance can answer any request.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any, Protocol

import mcp_types as types
from mcp_types import methods
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION
from pydantic import ValidationError

import handler
from handler.errors import ToolrecError

logger = logging.getLogger(__name__)

SERVER_NAME = "toolrec"


class ToolHost(Protocol):
    """The gateway as this protocol layer sees it: a tool list and a way to call one (built per request)."""

    @property
    def instructions(self) -> str | None: ...

    async def list_tools(self, offset: int) -> tuple[list[types.Tool], int | None]:
        """The tools from ``offset`` on, as many as one answer carries, and the offset of the next page if any."""
        ...

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> types.CallToolResult: ...


@dataclass(frozen=True)
class Reply:
    """What the HTTP layer sends: a status and a JSON-RPC body, or 202 with no body (notifications, responses)."""

    status: int
    body: dict[str, Any] | None = None


class _RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None, status: int = 200) -> None:
        super().__init__(message)
        self.error = types.ErrorData(code=code, message=message, data=data)
        self.status = status


def _error(request_id: types.RequestId | None, exc: _RpcError) -> Reply:
    return Reply(exc.status, error_body(request_id, exc.error))


def error_body(request_id: types.RequestId | None, error: types.ErrorData) -> dict[str, Any]:
    # Not exclude_none: JSON-RPC requires `"id": null` when the request's id is unknown.
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error).model_dump(by_alias=True, mode="json")


def refusal_code(status: int) -> int:
    """The JSON-RPC code of a request refused before its exchange with this HTTP status: the request is invalid
    for this server (no key, another gateway's key, no such gateway), or it failed on the server's side (503)."""
    return types.INTERNAL_ERROR if status >= 500 else types.INVALID_REQUEST


def _decode(raw: bytes) -> types.JSONRPCMessage:
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise _RpcError(types.PARSE_ERROR, "Parse error: the body is not JSON", status=400) from exc
    except RecursionError as exc:  # json.loads stops at Python's recursion limit (~1,000 levels)
        raise _RpcError(types.PARSE_ERROR, "Parse error: the body is nested too deep to read", status=400) from exc
    if isinstance(data, list):
        # JSON-RPC batches were removed from MCP in 2025-06-18; one request per POST keeps the exchange stateless.
        raise _RpcError(types.INVALID_REQUEST, "Batch requests are not supported", status=400)
    try:
        message = types.jsonrpc_message_adapter.validate_python(data, by_name=False)
    except ValidationError as exc:
        raise _RpcError(types.INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 message", status=400) from exc
    if isinstance(message, types.JSONRPCNotification) and isinstance(data, dict) and "id" in data:
        # The SDK's union reads a request with an unusable id (null, an object, true, 1.5) as a notification, which
        # would be a silent 202; MCP says a request id is a string or an integer, never null (issue 15).
        raise _RpcError(types.INVALID_REQUEST, "Invalid request: id must be a string or an integer", status=400)
    return message


def _session_version(header: str | None) -> str:
    # Without a session, the version comes with every request (the MCP-Protocol-Version header); the spec's
    # default for a request without it is 2025-03-26.
    if header is None:
        return types.DEFAULT_NEGOTIATED_VERSION
    if header not in HANDSHAKE_PROTOCOL_VERSIONS:
        data = {"supported": list(HANDSHAKE_PROTOCOL_VERSIONS), "requested": header}
        raise _RpcError(types.UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", data, status=400)
    return header


async def exchange(raw: bytes, protocol_header: str | None, host: ToolHost) -> Reply:
    """Answer one POSTed message. Never raises: every failure is a JSON-RPC error or a tool result."""
    try:
        message = _decode(raw)
    except _RpcError as exc:
        return _error(None, exc)
    if not isinstance(message, types.JSONRPCRequest):
        # Notifications (notifications/initialized, cancelled) and client responses need no answer; a stateless
        # server has nothing to update for them.
        return Reply(202)
    try:
        version = _session_version(protocol_header) if message.method != "initialize" else LATEST_HANDSHAKE_VERSION
        result = await _dispatch(message, version, host)
    except _RpcError as exc:
        return _error(message.id, exc)
    response = types.JSONRPCResponse(jsonrpc="2.0", id=message.id, result=result)
    return Reply(200, response.model_dump(by_alias=True, mode="json", exclude_none=True))


async def _dispatch(message: types.JSONRPCRequest, version: str, host: ToolHost) -> dict[str, Any]:
    if (message.method, version) not in methods.CLIENT_REQUESTS or message.method not in _HANDLED:
        # server/discover (the 2026 probe) lands here too: METHOD_NOT_FOUND makes SDK clients fall back to
        # the initialize handshake, which is what this server speaks.
        raise _RpcError(types.METHOD_NOT_FOUND, f"Method not found: {message.method}")
    try:
        request = methods.parse_client_request(message.method, version, message.params)
    except ValidationError as exc:
        raise _RpcError(types.INVALID_PARAMS, f"Invalid params for {message.method}", _field_errors(exc)) from exc
    if isinstance(request, types.InitializeRequest):
        version = _negotiate(request.params.protocol_version)
    result = await _HANDLED[message.method](request, version, host)
    return methods.serialize_server_result(message.method, version, result)


def _negotiate(requested: str) -> str:
    return requested if requested in HANDSHAKE_PROTOCOL_VERSIONS else LATEST_HANDSHAKE_VERSION


def _field_errors(exc: ValidationError) -> list[dict[str, str]]:
    return [{"field": ".".join(str(p) for p in err["loc"]), "message": err["msg"]} for err in exc.errors()]


def _dump(result: types.Result) -> dict[str, Any]:
    return result.model_dump(by_alias=True, mode="json", exclude_none=True)


async def _initialize(request: Any, version: str, host: ToolHost) -> dict[str, Any]:
    result = types.InitializeResult(
        protocol_version=version,
        capabilities=types.ServerCapabilities(tools=types.ToolsCapability(list_changed=False)),
        server_info=types.Implementation(name=SERVER_NAME, version=handler.version()),
        instructions=host.instructions,
    )
    return _dump(result)


async def _ping(request: Any, version: str, host: ToolHost) -> dict[str, Any]:
    return {}


async def _list_tools(request: Any, version: str, host: ToolHost) -> dict[str, Any]:
    params: types.PaginatedRequestParams | None = request.params
    offset = _offset_of(params.cursor if params is not None else None)
    try:
        tools, following = await host.list_tools(offset)
    except ToolrecError as exc:
        logger.warning("tools/list failed: %s", exc)
        raise _RpcError(types.INTERNAL_ERROR, exc.public) from exc
    # A gateway's own tools come a page at a time, each page bounded in bytes: MCP's pagination, nextCursor.
    next_cursor = None if following is None else str(following)
    return _dump(types.ListToolsResult(tools=tools, next_cursor=next_cursor))


def _offset_of(cursor: str | None) -> int:
    """A cursor toolrec gave is the listing's offset, in decimal digits; any other is invalid (MCP: -32602)."""
    if cursor is None:
        return 0
    if not (cursor.isascii() and cursor.isdigit() and len(cursor) <= 9):
        raise _RpcError(types.INVALID_PARAMS, "Invalid params for tools/list: unknown cursor")
    return int(cursor)


async def _call_tool(request: Any, version: str, host: ToolHost) -> dict[str, Any]:
    params: types.CallToolRequestParams = request.params
    try:
        result = await host.call_tool(params.name, dict(params.arguments or {}))
    except ToolrecError as exc:
        # A failing tool is a result the model can read and act on, never a protocol error (PRODUCT.md §3).
        logger.warning("tools/call %s failed: %s", params.name, exc)
        result = error_result(exc.public)
    except Exception:
        logger.exception("tools/call %s failed", params.name)
        result = error_result("an internal error stopped this call; the operator will find it in toolrec's logs")
    try:
        return _dump(result)
    except ValueError:  # pydantic's serialisation errors; the tool may have run, so still a result, not an HTTP 500
        logger.exception("tools/call %s: the result could not be serialised", params.name)
        return _dump(
            error_result("the result of this call could not be encoded; the operator will find it in the logs")
        )


def error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


_HANDLED = {"initialize": _initialize, "ping": _ping, "tools/list": _list_tools, "tools/call": _call_tool}
