"""The ``mcp`` executor: call a tool on the upstream MCP server the catalog registered, with the official SDK client.

One short session per call (connect, handshake, ``tools/call``): Lambda freezes between invocations, so a pooled
session would go stale, and the upstream server may be stateless anyway.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from handler.errors import ExecutorUnavailableError, ToolFailedError
from handler.execute.base import ContentOutput, ToolCall


class McpExecutor:
    def __init__(self) -> None:
        # Loading the CA bundle costs ~150 ms (measured): build the TLS context once, a client per call.
        self._tls = httpx2.create_ssl_context()

    async def call(self, call: ToolCall) -> Any:
        spec = call.tool.executor
        assert spec is not None  # the Dispatcher only routes tools that have an executor
        remote_name = spec.tool or call.tool.name
        # follow_redirects stays off (the SDK also refuses cross-origin redirects): only the registered URL is used.
        http = httpx2.AsyncClient(verify=self._tls, timeout=spec.timeout_s)
        # mode="legacy": the initialize handshake every MCP server speaks, without a server/discover probe round trip.
        client = Client(
            streamable_http_client(spec.target, http_client=http),
            mode="legacy",
            read_timeout_seconds=spec.timeout_s,
            cache=None,
        )
        try:
            async with http, client:
                # send_request, not Client.call_tool: call_tool re-lists the server's tools after the call to check
                # the output schema, and a failure there would report an error for a call that did run.
                result = await client.session.send_request(
                    types.CallToolRequest(
                        params=types.CallToolRequestParams(name=remote_name, arguments=dict(call.arguments))
                    ),
                    types.CallToolResult,
                )
        except MCPError as exc:
            raise ToolFailedError(f"the MCP server for {call.tool.name} refused the call: {exc.error.message}") from exc
        except (httpx2.HTTPError, OSError, ValidationError) as exc:
            raise ExecutorUnavailableError(f"the MCP server for {call.tool.name} could not be reached") from exc
        except ExceptionGroup as group:
            # The SDK runs its transport in a task group, so a connection error can arrive wrapped.
            raise ExecutorUnavailableError(f"the MCP server for {call.tool.name} could not be reached") from group
        return _output(call.tool.name, result)


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
