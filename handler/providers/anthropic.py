"""Anthropic's Messages API tool search with toolrec behind it: what to send as ``tools``, and the search's answer.

The model is given one ordinary tool, the search, and every tool the user may use with ``defer_loading``; when it
calls the search, the application answers with a ``tool_result`` of ``tool_reference`` blocks, which loads those
deferred tools. The shapes follow the SDK's ``ToolParam``, ``ToolResultBlockParam`` and ``ToolReferenceBlockParam``
(tests validate them with the SDK's own types).
"""

from __future__ import annotations

from collections.abc import Iterable

from handler.api.schemas import AnthropicTool, AnthropicToolResult, TextContent, ToolReference
from handler.catalog.names import FIND_TOOLS, listed_name, own_tool_name
from handler.catalog.tool import Tool
from handler.providers import search

SEARCH_TOOL = FIND_TOOLS  # every own tool's name lives in names.py, which the build and the index load reserve


def search_tool(namespace: str) -> AnthropicTool:
    """The one tool sent loaded (the API needs one), first: the model calls it to find the rest."""
    return AnthropicTool(
        name=own_tool_name(namespace, SEARCH_TOOL),  # named as the MCP meta-tools are: toolrec's own
        description=search.DESCRIPTION,
        input_schema=search.parameters(),
        defer_loading=False,
    )


def deferred(tool: Tool) -> AnthropicTool:
    """A catalog tool as the request declares it: out of the prompt until a search result references it."""
    return AnthropicTool(
        name=listed_name(tool.name),
        description=tool.description,
        input_schema=search.object_schema(tool.input_schema),
        defer_loading=True,
    )


def search_result(tool_use_id: str, found: Iterable[Tool]) -> AnthropicToolResult:
    """The answer to the model's search call ``tool_use_id``: references to the tools found, best first."""
    content: list[ToolReference | TextContent] = [
        ToolReference(type="tool_reference", tool_name=listed_name(t.name)) for t in found
    ]
    return AnthropicToolResult(
        type="tool_result",
        tool_use_id=tool_use_id,
        content=content or [TextContent(type="text", text=search.NO_MATCH)],
    )
