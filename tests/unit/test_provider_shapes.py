"""The providers' tool search shapes (handler/providers/) and the names they show, against the SDKs' own types.

A listed name must be one both APIs accept (^[a-zA-Z0-9_-]{1,64}$), distinct for every tool of a catalog the build
accepts, and read back to its tool by the one resolver (handler/catalog/names.py) that execute and MCP use.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handler.catalog.names import ToolNames, describe_collisions, listed_name, name_key
from handler.catalog.tool import Tool
from handler.errors import IntegrityError
from handler.providers import anthropic, openai, search
from tests.support import provider_types

PROVIDER_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
LONG = "Salesforce.CreateOpportunityLineItemScheduleWithRevenueSplitAndQuantityForecast"


def tool(name: str, schema: dict[str, Any] | None = None) -> Tool:
    schema = schema if schema is not None else {"type": "object", "properties": {"text": {"type": "string"}}}
    return Tool(name=name, description=f"Do {name}.", input_schema=schema, app=name.split(".", maxsplit=1)[0] or "App")


@pytest.mark.parametrize(
    ("name", "listed"),
    [("Slack.SendMessage", "Slack_SendMessage"), ("Weather.get-forecast", "Weather_get-forecast"), ("A_b.c", "A_b_c")],
)
def test_a_name_the_providers_accept_only_loses_its_dots(name: str, listed: str) -> None:
    assert listed_name(name) == listed


@pytest.mark.parametrize("name", [LONG, "Files.read file", "Docs.Größe", "Ops.run/step"])
def test_a_name_they_refuse_keeps_a_readable_prefix_and_a_hash(name: str) -> None:
    listed = listed_name(name)
    assert PROVIDER_NAME.match(listed), listed
    assert listed.startswith(re.sub(r"[^A-Za-z0-9_-]", "_", name.replace(".", "_"))[:20])
    assert listed_name(name) == listed  # deterministic: the same name lists alike in every request
    assert ToolNames(["Other.Tool", name]).position(listed) == 1  # and reads back to its tool


names = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=120)


@given(st.lists(names, min_size=1, max_size=12))
def test_listed_names_are_valid_distinct_and_read_back(catalog: list[str]) -> None:
    if describe_collisions(catalog) is not None:  # the build refuses such a catalog (name_key or listed alike)
        with pytest.raises(IntegrityError):
            ToolNames(catalog)
        return
    resolver = ToolNames(catalog)
    listed = [listed_name(n) for n in catalog]
    assert all(PROVIDER_NAME.match(n) for n in listed)
    assert len({name_key(n) for n in listed}) == len(catalog)  # collision-free, whatever case a caller uses
    assert [resolver.position(n) for n in listed] == list(range(len(catalog)))
    assert [resolver.position(n) for n in catalog] == list(range(len(catalog)))


def test_a_hashed_listed_name_that_another_tool_already_spells_is_refused() -> None:
    taken = listed_name(LONG).replace("_", ".", 1)  # a real catalog name that folds to LONG's listed name
    assert describe_collisions([taken, LONG]) is not None
    with pytest.raises(IntegrityError):
        ToolNames([taken, LONG])


def test_anthropic_tools_are_the_search_then_every_tool_deferred() -> None:
    usable = [tool("Slack.SendMessage"), tool(LONG), tool("Notes.Write", {"properties": {}})]
    search_tool = anthropic.search_tool("Toolrec").model_dump()
    deferred = [anthropic.deferred(t).model_dump() for t in usable]
    provider_types.anthropic_tools([search_tool, *deferred])
    assert search_tool == {
        "name": "Toolrec_FindTools",
        "description": search.DESCRIPTION,
        "input_schema": search.parameters(),
        "defer_loading": False,
    }
    assert [t["name"] for t in deferred] == [listed_name(t.name) for t in usable]
    assert all(t["defer_loading"] for t in deferred)
    assert deferred[2]["input_schema"] == {"type": "object", "properties": {}}  # the type both APIs require
    assert deferred[0]["input_schema"] == usable[0].input_schema


def test_anthropic_search_result_references_the_tools_found() -> None:
    result = anthropic.search_result("toolu_01", [tool("Slack.SendMessage"), tool(LONG)]).model_dump()
    provider_types.anthropic_tool_result(result)
    assert result == {
        "type": "tool_result",
        "tool_use_id": "toolu_01",
        "content": [
            {"type": "tool_reference", "tool_name": "Slack_SendMessage"},
            {"type": "tool_reference", "tool_name": listed_name(LONG)},
        ],
    }
    none = anthropic.search_result("toolu_02", []).model_dump()
    provider_types.anthropic_tool_result(none)
    assert none["content"] == [{"type": "text", "text": search.NO_MATCH}]


def test_openai_tools_are_a_client_tool_search_then_every_function_deferred() -> None:
    usable = [tool("Slack.SendMessage"), tool("Notes.Write", {})]
    search_tool = openai.search_tool().model_dump()
    functions = [openai.function(t).model_dump() for t in usable]
    provider_types.openai_tools([search_tool, *functions])
    assert search_tool == {
        "type": "tool_search",
        "execution": "client",
        "description": search.DESCRIPTION,
        "parameters": search.parameters(),
    }
    assert functions[0] == {
        "type": "function",
        "name": "Slack_SendMessage",
        "description": "Do Slack.SendMessage.",
        "parameters": usable[0].input_schema,
        "strict": False,
        "defer_loading": True,
    }
    assert functions[1]["parameters"] == {"type": "object"}


def test_openai_search_output_loads_the_functions_found() -> None:
    output = openai.search_output("call_1", [tool("Slack.SendMessage")]).model_dump()
    provider_types.openai_tool_search_output(output)
    assert (output["type"], output["execution"], output["call_id"], output["status"]) == (
        "tool_search_output",
        "client",
        "call_1",
        "completed",
    )
    assert [t["name"] for t in output["tools"]] == ["Slack_SendMessage"]
    empty = openai.search_output("call_2", []).model_dump()
    provider_types.openai_tool_search_output(empty)
    assert empty["tools"] == []


def test_the_type_checks_can_fail() -> None:
    with pytest.raises(AssertionError, match="no \\['toolrec_name'\\]"):
        provider_types.anthropic_tools([{"name": "a", "input_schema": {"type": "object"}, "toolrec_name": "A.a"}])
    with pytest.raises(ValueError, match="tool_reference"):
        provider_types.anthropic_tool_result(
            {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "tool_reference"}]}
        )
