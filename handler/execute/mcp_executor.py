"""The ``mcp`` executor: call a tool on the upstream MCP server the catalog registered, with the official SDK client.

One short session per call (connect, handshake, ``tools/call``): Lambda freezes between invocations, so a pooled
session would go stale, and the upstream server may be stateless anyway. Everything the server answers in that
session is read through one OutputBudget (bounded_output.py): an answer past the limit is a tool error saying the
tool ran, and is not held in memory.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from handler.catalog.tool import Executor
from handler.errors import ExecutionError, ExecutorUnavailableError, ToolFailedError
from handler.execute.base import ContentOutput, ToolCall
from handler.execute.bounded_output import NO_COMPRESSION, OutputBudget


class McpExecutor:
    def __init__(self) -> None:
        # Loading the CA bundle costs ~150 ms (measured): build the TLS context once, a client per call.
        self._tls = httpx2.create_ssl_context()

    async def call(self, call: ToolCall) -> Any:
        spec = call.tool.executor
        assert spec is not None  # the Dispatcher only routes tools that have an executor
        budget = OutputBudget(call.tool.name)
        try:
            result = await self._send(spec, spec.tool or call.tool.name, call.arguments, budget)
        except (MCPError, httpx2.HTTPError, OSError, ValidationError, ExceptionGroup) as exc:
            # Past the limit the SDK reports a parse error, a lost stream or a failed task group: the budget
            # knows what happened.
            if budget.failure is not None:
                raise budget.failure from None
            raise _failure(call.tool.name, exc) from exc
        if budget.failure is not None:  # an SDK that swallowed the refusal cannot have read a whole result
            raise budget.failure
        return _output(call.tool.name, result)

    async def _send(
        self, spec: Executor, remote_name: str, arguments: Mapping[str, Any], budget: OutputBudget
    ) -> types.CallToolResult:
        # follow_redirects stays off (the SDK also refuses cross-origin redirects): only the registered URL is used.
        http = httpx2.AsyncClient(
            verify=self._tls,
            headers=NO_COMPRESSION,
            timeout=spec.timeout_s,
            event_hooks={"response": [_counted_by(budget)]},
        )
        # mode="legacy": the initialize handshake every MCP server speaks, without a server/discover probe round trip.
        # max_sse_event_size: a streamed result may be as large as a JSON one (the SDK's default stops at 1 MiB).
        client = Client(
            streamable_http_client(spec.target, http_client=http, max_sse_event_size=budget.limit),
            mode="legacy",
            read_timeout_seconds=spec.timeout_s,
            cache=None,
        )
        async with http, client:
            # send_request, not Client.call_tool: call_tool re-lists the server's tools after the call to check
            # the output schema, and a failure there would report an error for a call that did run.
            params = types.CallToolRequestParams(name=remote_name, arguments=dict(arguments))
            return await client.session.send_request(types.CallToolRequest(params=params), types.CallToolResult)


def _counted_by(budget: OutputBudget) -> Callable[[httpx2.Response], Awaitable[None]]:
    """A response hook: every response of the call's session, read through its OutputBudget as the bytes arrive.
    It runs once the headers are in and before the SDK reads the body, whatever transport (or proxy) is used."""

    async def count(response: httpx2.Response) -> None:
        budget.admit(response.headers)  # a refusal here closes the response (httpx2 does, on a hook's error)
        assert isinstance(response.stream, httpx2.AsyncByteStream)  # an async client's responses are
        response.stream = _CountedStream(response.stream, budget)

    return count


class _CountedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, budget: OutputBudget) -> None:
        self._inner = inner
        self._budget = budget

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            self._budget.count(chunk)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def _failure(tool_name: str, exc: Exception) -> ExecutionError:
    if isinstance(exc, MCPError):
        return ToolFailedError(f"the MCP server for {tool_name} refused the call: {exc.error.message}")
    # The SDK runs its transport in a task group, so a connection error can arrive wrapped (an ExceptionGroup).
    return ExecutorUnavailableError(f"the MCP server for {tool_name} could not be reached")


def _output(tool_name: str, result: types.CallToolResult) -> Any:
    text = "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))
    if result.is_error:
        raise ToolFailedError(text or f"{tool_name} reported an error")
    as_json = (
        result.structured_content
        if result.structured_content is not None
        else [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in result.content]
    )
    if any(not isinstance(block, types.TextContent) for block in result.content):
        return ContentOutput(tuple(result.content), as_json)
    if result.structured_content is not None:
        return result.structured_content
    if len(result.content) == 1:
        return _maybe_json(text)
    return as_json


def _maybe_json(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested past ~1,000 levels; the text is still an answer
        return text
