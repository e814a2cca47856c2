"""Naming and mode rules of the MCP gateway, and the field names execute's input check reports."""

from __future__ import annotations

import pytest

from handler.catalog.names import listed_name
from handler.execute.input_check import MAX_FIELD_ERRORS, input_problems
from handler.mcp.gateway import AUTO_THRESHOLD, recommends
from handler.mcp.meta_tools import LIST_APPS, SELECT, USE, meta_tool_of, meta_tools


@pytest.mark.parametrize(
    ("setting", "tools", "pinned", "expected"),
    [
        ("on", 1, 0, True),
        ("off", 10_000, 0, False),
        ("auto", AUTO_THRESHOLD - 1, 0, False),
        ("auto", AUTO_THRESHOLD, 0, True),
        # Pinned tools are listed in either mode, so only the others weigh on the choice.
        ("auto", AUTO_THRESHOLD + 2, 2, True),
        ("auto", AUTO_THRESHOLD + 2, 3, False),
        ("on", 3, 3, True),
    ],
)
def test_recommendation_modes(setting: str, tools: int, pinned: int, expected: bool) -> None:
    assert recommends(setting, tools, pinned) is expected


@pytest.mark.parametrize(
    ("name", "meta"),
    [
        ("Toolrec_SelectTools", SELECT),
        ("Toolrec.SelectTools", SELECT),
        ("toolrec_usetool", USE),
        ("Toolrec.ListApps", LIST_APPS),
        ("Toolrec_Other", None),
        ("Other_SelectTools", None),
        ("Slack_SendMessage", None),
    ],
)
def test_meta_tool_names_accept_dot_or_underscore(name: str, meta: str | None) -> None:
    assert meta_tool_of("Toolrec", name) == meta


def test_namespace_is_configurable() -> None:
    assert [t.name for t in meta_tools("Acme")] == ["Acme_SelectTools", "Acme_UseTool", "Acme_ListApps"]
    assert meta_tool_of("Acme", "Acme.UseTool") == USE and meta_tool_of("Acme", "Toolrec_UseTool") is None


def test_listed_names_have_no_dots() -> None:
    assert listed_name("Slack.SendMessage") == "Slack_SendMessage"


SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "days": {"type": "integer", "minimum": 1},
        "address": {
            "type": "object",
            "properties": {"zip": {"type": "string", "pattern": "^[0-9]{5}$"}},
            "required": ["zip"],
        },
        "tags": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["city"],
    "additionalProperties": False,
}


def test_problems_name_each_field() -> None:
    problems = input_problems(SCHEMA, {"days": 0, "address": {}, "tags": ["a", 3], "colour": "red"})
    assert sorted(p.field for p in problems) == ["address.zip", "city", "colour", "days", "tags.1"]
    assert {p.field: p.message for p in problems}["city"] == "is required"


def test_valid_input_has_no_problems() -> None:
    assert input_problems(SCHEMA, {"city": "Oslo", "address": {"zip": "01234"}, "tags": []}) == []


def test_invalid_catalog_schema_refuses_to_run() -> None:
    problems = input_problems({"type": "object", "properties": {"x": {"type": 12}}}, {"x": 1})
    assert problems[0].field == "input" and "not a valid JSON Schema" in problems[0].message


def test_problem_count_is_bounded() -> None:
    schema = {"type": "object", "properties": {f"p{i}": {"type": "integer"} for i in range(50)}}
    assert len(input_problems(schema, {f"p{i}": "x" for i in range(50)})) == MAX_FIELD_ERRORS


def test_each_missing_required_field_is_named_once() -> None:
    """jsonschema reports one `required` error per missing name; each used to expand to the whole list (N² rows)."""
    schema = {"type": "object", "properties": {}, "required": ["a", "b", "c"]}
    problems = input_problems(schema, {"b": 1})
    assert [(p.field, p.message) for p in problems] == [("a", "is required"), ("c", "is required")]
    nested = {"type": "object", "properties": {"to": {"type": "object", "required": ["x", "y"]}}, "required": ["to"]}
    assert [p.field for p in input_problems(nested, {"to": {}})] == ["to.x", "to.y"]
