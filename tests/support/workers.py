"""Real tool back ends for tests: an HTTP worker (the ``http`` executor's wire contract) and an upstream MCP server.

Both do real work on their input (arithmetic, string handling), so a test can check that the output it gets back
was computed by the worker from the arguments it sent, not echoed by toolrec.
"""

from __future__ import annotations

import asyncio
import gzip
import json
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.types import Image
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

SLOW_SECONDS = 3.0


async def _forecast(arguments: dict[str, Any]) -> JSONResponse:
    city = str(arguments["city"])
    days = int(arguments.get("days", 1))
    return JSONResponse({"city": city.title(), "days": [f"{city.lower()}-day-{n + 1}" for n in range(days)]})


async def _fail(arguments: dict[str, Any]) -> JSONResponse:
    return JSONResponse({"error": f"cannot reach printer {arguments.get('printer', '?')}"}, status_code=502)


async def _slow(arguments: dict[str, Any]) -> JSONResponse:
    await asyncio.sleep(SLOW_SECONDS)
    return JSONResponse({"done": True})


async def _post(arguments: dict[str, Any]) -> JSONResponse:
    return JSONResponse(
        {"posted": True, "channel": arguments.get("channel_name"), "chars": len(arguments.get("text", ""))}
    )


async def _huge(arguments: dict[str, Any]) -> JSONResponse:
    return JSONResponse({"blob": "x" * int(arguments["size"])})


async def _nested(arguments: dict[str, Any]) -> Response:
    # Written by hand: json.dumps itself stops at ~1,000 levels, and a worker in another language would not.
    depth = int(arguments["depth"])
    return Response('{"level":' * depth + '"bottom"' + "}" * depth, media_type="application/json")


async def _odd(arguments: dict[str, Any]) -> Response:
    # JSON that Python parses but cannot send on: NaN (not JSON, accepted by json.loads) or a lone surrogate escape.
    if arguments["kind"] == "error":  # a tool error whose message holds a lone surrogate
        return Response('{"error":"printer \\ud800 jammed"}', status_code=502, media_type="application/json")
    value = {"nan": "NaN", "surrogate": '"\\ud800"'}[str(arguments["kind"])]
    return Response('{"value":' + value + "}", media_type="application/json")


async def _echo(arguments: dict[str, Any]) -> JSONResponse:
    return JSONResponse({"received": arguments})


MEBIBYTE = 1024 * 1024
_MEBIBYTE_OF_X = b"x" * MEBIBYTE  # one buffer sent again and again: the worker itself stays small


async def _stream(arguments: dict[str, Any]) -> StreamingResponse:
    """``{"blob": "xx..."}`` of ``mebibytes`` MiB, streamed as fast as the reader takes it, with ``status``."""

    async def body() -> Any:
        yield b'{"blob": "'
        for _ in range(int(arguments["mebibytes"])):
            yield _MEBIBYTE_OF_X
        yield b'"}'

    return StreamingResponse(body(), status_code=int(arguments.get("status", 200)), media_type="application/json")


async def _gzipped(arguments: dict[str, Any]) -> Response:
    # Compressed whatever the request's Accept-Encoding says: a body that inflates as it is read.
    body = gzip.compress(json.dumps({"received": arguments}).encode())
    return Response(body, media_type="application/json", headers={"Content-Encoding": "gzip"})


_HANDLERS = {
    "huge": _huge,
    "forecast": _forecast,
    "fail": _fail,
    "slow": _slow,
    "post": _post,
    "nested": _nested,
    "odd": _odd,
    "echo": _echo,
    "stream": _stream,
    "gzipped": _gzipped,
}


def http_worker_app(calls: list[dict[str, Any]] | None = None) -> Starlette:
    """A worker whose endpoints ``/forecast`` and ``/post`` compute, ``/fail`` errors, ``/slow`` outlasts a timeout;
    ``/nested``, ``/odd`` answer JSON nested ``depth`` levels deep or with NaN / a lone surrogate, ``/echo`` echoes,
    ``/stream`` streams a body of any size, ``/gzipped`` answers compressed though asked not to.

    Every request body is appended to ``calls`` so tests can check what reached the worker (and how often).
    """

    async def handle(request: Request) -> Response:
        body = await request.json()
        if calls is not None:
            calls.append({"path": request.url.path, **body})
        handler = _HANDLERS[request.path_params["name"]]
        return await handler(body["input"])

    return Starlette(routes=[Route("/{name}", handle, methods=["POST"])])


def upstream_mcp_server() -> MCPServer:
    """An upstream MCP server with real tools: ``add`` (structured output), ``shout`` (text), ``explode`` (error)."""
    server: MCPServer = MCPServer(name="upstream-test", log_level="WARNING")

    @server.tool(description="Add two integers and return their sum.")
    def add(a: int, b: int) -> dict[str, int]:
        return {"sum": a + b}

    @server.tool(description="Upper-case a text.")
    def shout(text: str) -> str:
        return text.upper() + "!"

    @server.tool(description="Always fails, to test error results.")
    def explode(reason: str) -> str:
        raise ValueError(f"exploded: {reason}")

    @server.tool(description="Sleep longer than a short timeout.")
    async def dawdle(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return "awake"

    return server


def large_text_mcp_app(*, json_response: bool = True) -> Any:
    """An upstream whose ``text`` tool answers with ``size`` characters of text, whatever the size (as one JSON
    body, or as a server-sent event)."""
    server: MCPServer = MCPServer(name="upstream-large", log_level="WARNING")

    @server.tool(description="Answer with a text of the given size.", structured_output=False)
    def text(size: int) -> str:
        return "x" * size

    return server.streamable_http_app(json_response=json_response, stateless_http=True)


PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def badge_png(label: str) -> bytes:
    """Bytes that depend on the label (a PNG signature, then the label): what came back was made from the input."""
    return PNG_SIGNATURE + label.encode()


def image_mcp_app() -> Any:
    """An upstream whose tool answers with a caption and an image (ImageContent), as chart or screenshot tools do."""
    server: MCPServer = MCPServer(name="upstream-images", log_level="WARNING")

    @server.tool(description="Render a badge image for a label.", structured_output=False)
    def badge(label: str) -> list[Any]:
        return [f"badge for {label}", Image(data=badge_png(label), format="png")]

    return server.streamable_http_app(json_response=True, stateless_http=True)


def upstream_mcp_app() -> Any:
    """The upstream server as an ASGI app at ``/mcp`` (stateless JSON, as most hosted MCP servers run)."""
    return upstream_mcp_server().streamable_http_app(json_response=True, stateless_http=True)


def bearer_protected(app: Any, token: str, *, status: int = 401) -> Any:
    """``app`` behind a bearer token, as hosted MCP servers run: a request without it gets ``status``, no MCP."""
    expected = f"Bearer {token}".encode()

    async def guarded(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and dict(scope["headers"]).get(b"authorization") != expected:
            refusal = JSONResponse(
                {"error": "invalid_token"}, status_code=status, headers={"WWW-Authenticate": "Bearer"}
            )
            await refusal(scope, receive, send)
            return
        await app(scope, receive, send)

    return guarded
