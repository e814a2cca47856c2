"""OpenAI's Responses API tool search, executed by the client with toolrec behind it.

The request's ``tools`` are a ``tool_search`` tool with ``execution: client`` and every tool the user may use as a
function with ``defer_loading``; when the model emits a ``tool_search_call``, the application answers with a
``tool_search_output`` item that loads the functions found. The shapes follow the SDK's ``ToolSearchToolParam``,
``FunctionToolParam`` and ``ResponseToolSearchOutputItemParamParam`` (tests validate them with the SDK's types).
"""

from __future__ import annotations

from collections.abc import Iterable

from handler.api.schemas import OpenAIFunctionTool, OpenAIToolSearchOutput, OpenAIToolSearchTool
from handler.catalog.names import listed_name
from handler.catalog.tool import Tool
from handler.providers import search


def function(tool: Tool) -> OpenAIFunctionTool:
    """A catalog tool as a deferred function: the model sees it loaded once a tool_search_output holds it."""
    return OpenAIFunctionTool(
        type="function",
        name=listed_name(tool.name),
        description=tool.description,
        parameters=search.object_schema(tool.input_schema),
        strict=False,
        defer_loading=True,
    )


def search_tool() -> OpenAIToolSearchTool:
    """The client-executed tool_search, sent first: the model calls it to find the functions."""
    return OpenAIToolSearchTool(
        type="tool_search", execution="client", description=search.DESCRIPTION, parameters=search.parameters()
    )


def search_output(call_id: str, found: Iterable[Tool]) -> OpenAIToolSearchOutput:
    """The answer to the model's ``tool_search_call`` ``call_id``: the functions found, loaded, best first."""
    return OpenAIToolSearchOutput(
        type="tool_search_output",
        execution="client",
        call_id=call_id,
        status="completed",
        tools=[function(t) for t in found],
    )
