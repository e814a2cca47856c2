"""Anthropic's Messages API tool search with toolrec behind it: what to send as ``tools``, and the search's answer.

The model is given one ordinary tool, the search, and every tool the user may use with ``defer_loading``; when it
calls the search, the application answers with a ``tool_result`` of ``tool_reference`` blocks, which loads those
deferred tools. The shapes follow the SDK's ``ToolParam``, ``ToolResultBlockParam`` and ``ToolReferenceBlockParam``
(tests validate them with the SDK's own types).
"""

from __future__ import annotations

from collections.abc import Iterable

from handler.api.schemas import AnthropicTool, AnthropicToolResult, TextContent, ToolReference
from handler.catalog import Tool
from handler.providers import search_tool
from handler.tool_names import listed_name

SEARCH_TOOL = "FindTools"


def search_tool_name(namespace: str) -> str:
    """``Toolrec_FindTools``: under the namespace of toolrec's MCP meta-tools, so it reads as toolrec's own."""
    return f"{namespace}_{SEARCH_TOOL}"


def tool_list(namespace: str, usable: Iterable[Tool]) -> list[AnthropicTool]:
    """The request's ``tools``: the search first (never deferred: the API needs one tool loaded), then the rest."""
    search = AnthropicTool(
        name=search_tool_name(namespace),
        description=search_tool.DESCRIPTION,
        input_schema=search_tool.parameters(),
        defer_loading=False,
    )
    deferred = [
        AnthropicTool(
            name=listed_name(t.name),
            description=t.description,
            input_schema=search_tool.object_schema(t.input_schema),
            defer_loading=True,
        )
        for t in usable
    ]
    return [search, *deferred]


def search_result(tool_use_id: str, found: Iterable[Tool]) -> AnthropicToolResult:
    """The answer to the model's search call ``tool_use_id``: references to the tools found, best first."""
    content: list[ToolReference | TextContent] = [
        ToolReference(type="tool_reference", tool_name=listed_name(t.name)) for t in found
    ]
    return AnthropicToolResult(
        type="tool_result",
        tool_use_id=tool_use_id,
        content=content or [TextContent(type="text", text=search_tool.NO_MATCH)],
    )
