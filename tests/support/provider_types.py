"""toolrec's provider answers held to the providers' own SDK types (the `dev` extra; the runtime never has them).

The SDKs' request types are TypedDicts: pydantic validates one (required keys, literal values, types), but it
ignores keys the TypedDict does not declare and leaves ``Iterable`` fields unread, so ``conforms`` also refuses an
unknown key and the callers validate nested lists item by item.
"""

from __future__ import annotations

import typing
from typing import Any

from anthropic.types import TextBlockParam, ToolParam, ToolReferenceBlockParam, ToolResultBlockParam
from openai.types.responses import FunctionToolParam, ToolSearchToolParam
from openai.types.responses.response_input_item_param import ResponseToolSearchOutputItemParamParam
from pydantic import TypeAdapter


def conforms(shape: Any, value: Any) -> None:
    """``value`` is a valid ``shape`` (an SDK TypedDict) with no key the SDK does not know."""
    assert isinstance(value, dict), value
    unknown = set(value) - set(typing.get_type_hints(shape))
    assert not unknown, f"{shape.__name__} has no {sorted(unknown)}"
    TypeAdapter(shape).validate_python(value)


def anthropic_tools(tools: list[dict[str, Any]]) -> None:
    for tool in tools:
        conforms(ToolParam, tool)


def anthropic_tool_result(block: dict[str, Any]) -> None:
    conforms(ToolResultBlockParam, block)
    for item in [] if isinstance(block["content"], str) else block["content"]:
        conforms(ToolReferenceBlockParam if item["type"] == "tool_reference" else TextBlockParam, item)


def openai_tools(tools: list[dict[str, Any]]) -> None:
    search, *functions = tools
    conforms(ToolSearchToolParam, search)
    for function in functions:
        conforms(FunctionToolParam, function)


def openai_tool_search_output(item: dict[str, Any]) -> None:
    conforms(ResponseToolSearchOutputItemParamParam, item)
    for function in item["tools"]:
        conforms(FunctionToolParam, function)
