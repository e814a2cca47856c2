"""POST /mcp/{gateway_id}: each gateway as a stateless streamable-HTTP MCP server (JSON responses).

The API key authenticates as for REST (``Authorization: Bearer``); the end user is named by the ``X-Toolrec-User``
header on every request, since a stateless server keeps no session to remember them by. Refusals before the
exchange (no key, unknown gateway, key limited to another gateway) keep REST's status and carry its error body as
the data of a JSON-RPC error (``refused``), whose message an MCP client shows its user; everything after is
JSON-RPC (see handler/mcp/jsonrpc.py for what is written by hand and why).

No Origin check (the spec's DNS-rebinding guard for local servers): every request needs the bearer key, which a
page on another origin cannot send without a CORS preflight that this app never approves.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import anyio.to_thread
from fastapi import APIRouter, Header, Path, Request, Response
from fastapi.responses import JSONResponse
from pydantic import TypeAdapter, ValidationError

from handler.api.auth import PrincipalDep, ServicesDep
from handler.api.schemas import MAX_ID_CHARS, Identifier

MCP_PATH = "/mcp/{gateway_id}"
USER_HEADER = "X-Toolrec-User"
PROTOCOL_HEADER = "MCP-Protocol-Version"
GatewayId = Annotated[str, Path(min_length=1, max_length=MAX_ID_CHARS)]
_USER_ID: TypeAdapter[str] = TypeAdapter(Identifier)  # the rule REST's user_id follows

router = APIRouter(tags=["mcp"])


@router.post(
    MCP_PATH,
    response_model=None,
    summary="MCP streamable HTTP endpoint of one gateway (JSON-RPC; stateless)",
)
async def mcp_message(
    gateway_id: GatewayId,
    request: Request,
    principal: PrincipalDep,
    services: ServicesDep,
    user: Annotated[str | None, Header(alias=USER_HEADER, description="the end user, on every request")] = None,
    protocol_version: Annotated[str | None, Header(alias=PROTOCOL_HEADER)] = None,
) -> Response:
    # Imported on the first MCP request: the SDK's protocol types cost ~0.4 s of import (measured with -X importtime)
    # that a cold start answering REST first would otherwise pay before its first answer.
    import mcp_types as types

    from handler.mcp.gateway import open_host
    from handler.mcp.jsonrpc import error_body, exchange

    user_id = _user_id(user)
    if user_id is None:
        message = f"the {USER_HEADER} header must name the user in 1 to {MAX_ID_CHARS} characters of UTF-8"
        return JSONResponse(error_body(None, types.ErrorData(code=types.INVALID_REQUEST, message=message)), 400)
    host = await anyio.to_thread.run_sync(open_host, services, principal, gateway_id, user_id)
    reply = await exchange(await request.body(), protocol_version, host)
    if reply.body is None:
        return Response(status_code=reply.status)
    return _JsonRpcResponse(reply.body, status_code=reply.status)


def is_mcp_request(request: Request) -> bool:
    """Whether the request was routed to a gateway's MCP endpoint (its refusals are JSON-RPC errors)."""
    route = request.scope.get("route")
    return request.method == "POST" and getattr(route, "path", None) == MCP_PATH


async def refused(
    request: Request, status: int, error: dict[str, Any], headers: dict[str, str] | None
) -> Response | None:
    """A request to this endpoint refused before its exchange (REST's error body ``error`` and status) as a
    JSON-RPC error whose message is the refusal's: the official SDK's client reads a JSON-RPC error from any status
    and shows its message, where any other body reaches the user as "Server returned an error response" or "Not
    Found". None for a request to another route (handler/api/errors.py answers it)."""
    if not is_mcp_request(request):
        return None
    import mcp_types as types

    from handler.mcp.jsonrpc import error_body, refusal_code

    data = types.ErrorData(code=refusal_code(status), message=error["message"], data=error)
    body = error_body(_request_id(await request.body()), data)
    return _JsonRpcResponse(body, status_code=status, headers=headers)


def _request_id(raw: bytes) -> str | int | None:
    """The id of the request refused, when its body is a JSON-RPC request (the SDK also reads a null id)."""
    try:
        message = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    found = message.get("id") if isinstance(message, dict) else None
    return found if isinstance(found, str | int) and not isinstance(found, bool) else None


def _user_id(header: str | None) -> str | None:
    """The user the header names, held to REST's user_id rule; None when it names none that rule accepts."""
    if header is None:
        return None
    try:
        # Starlette decodes header bytes as latin-1, which gives the bytes back exactly; clients send UTF-8
        # (issue 15: a non-ASCII name arrived as mojibake, so rules written for that user never matched).
        return _USER_ID.validate_python(header.encode("latin-1").decode("utf-8"))
    except (UnicodeError, ValidationError):
        return None


class _JsonRpcResponse(JSONResponse):
    def render(self, content: Any) -> bytes:
        try:
            return super().render(content)
        except UnicodeEncodeError:
            # A lone surrogate the client sent (in an id, a method name) and the answer echoes: strict UTF-8 cannot
            # encode it, so it goes back as the escape it came in as (issue 15: this was a 500).
            return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode("ascii")


@router.get(MCP_PATH, response_model=None, include_in_schema=False)
@router.delete(MCP_PATH, response_model=None, include_in_schema=False)
async def mcp_no_stream(gateway_id: GatewayId) -> Response:
    # Stateless: no server-to-client stream (GET) and no session to end (DELETE); the spec's answer is 405.
    return Response(status_code=405, headers={"Allow": "POST"})
