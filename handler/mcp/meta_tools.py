"""The meta-tools a gateway lists when recommendation is on, with descriptions that teach the two-step flow.

The list never changes with the catalog, so a client's prompt cache survives catalog growth (PRODUCT.md intro).
The descriptions are the only instructions many clients pass to the model, so they say what to call next. Each
meta-tool's arguments are one pydantic model, under REST's limits (handler/api/schemas.py): the model validates a
call and gives the input_schema listed, so what is advertised is what is enforced (as the MCP SDK's func_metadata).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Annotated, Any, TypeVar

import mcp_types as types
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from handler.api.errors import field_errors
from handler.api.schemas import (
    APPS_LIMIT_DEFAULT,
    APPS_LIMIT_MAX,
    MAX_CONTEXT_CHARS,
    MAX_TASKS,
    SELECT_TOP_K_DEFAULT,
    Identifier,
    Text,
)
from handler.catalog import names
from handler.catalog.names import own_tool_name, own_tool_of
from handler.errors import FieldProblem, InputInvalidError

# Every own tool's name lives in names.py, which the build and the index load reserve.
SELECT, USE, LIST_APPS = names.SELECT_TOOLS, names.USE_TOOL, names.LIST_APPS
TOOLS_PER_TASK = SELECT_TOP_K_DEFAULT  # what REST select returns by default: an MCP agent gets the same answer
# Added to the instructions of a gateway that pins tools (PRODUCT.md §7): those are listed and called as themselves.
PINNED_INSTRUCTION = "The other tools listed here are always available: call them directly."
# Strict: JSON `true` is not a page size of 1, nor "5" a 5 (issue 15; REST's query parameters refuse them too).
_Page = Annotated[int, Field(strict=True)]


class _Arguments(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SelectArguments(_Arguments):
    tasks: list[Text] = Field(
        min_length=1, max_length=MAX_TASKS, description="one short description per separate action"
    )
    context: str | None = Field(
        default=None,
        max_length=MAX_CONTEXT_CHARS,
        description="optional: what the user is working on, to help pick between similar tools",
    )


class UseArguments(_Arguments):
    tool_name: Identifier = Field(description="e.g. Slack.SendMessage")
    inputs: dict[str, Any] = Field(default_factory=dict, description="the tool's arguments, per its input_schema")
    query_id: Identifier | None = Field(default=None, description=f"the query_id returned by {SELECT}")


class ListAppsArguments(_Arguments):
    limit: _Page = Field(default=APPS_LIMIT_DEFAULT, ge=1, le=APPS_LIMIT_MAX)
    offset: _Page = Field(default=0, ge=0)


Arguments = TypeVar("Arguments", bound=_Arguments)


def parse_arguments(model: type[Arguments], arguments: Mapping[str, Any], meta_tool: str) -> Arguments:
    """The arguments as ``model`` reads them; InputInvalidError naming each field otherwise, which the gateway
    answers as an ``isError`` result (MCP SEP-1303: the model sees why and can correct its call)."""
    try:
        return model.model_validate(arguments)
    except ValidationError as exc:
        problems = [FieldProblem(e.field, e.message) for e in field_errors(exc.errors())]
        raise InputInvalidError(f"the arguments of {meta_tool} do not match its input_schema", problems) from None


@functools.cache  # every tools/list lists these; generating a schema costs ~0.2 ms each, and it never changes
def input_schema(model: type[_Arguments]) -> dict[str, Any]:
    """The model's JSON Schema as clients read it best: no titles, and an optional field as its plain type (not
    ``anyOf`` with null: omitting it is how a call leaves it out). Shared between listings: never mutate it."""
    schema = model.model_json_schema()
    properties = {}
    for name, generated in schema["properties"].items():
        spec = {key: value for key, value in generated.items() if key != "title"}
        options = spec.pop("anyOf", None)
        if options is not None:
            spec = {**next(o for o in options if o.get("type") != "null"), **spec}
            spec.pop("default", None)
        if isinstance(spec.get("items"), dict):
            spec["items"] = {key: value for key, value in spec["items"].items() if key != "title"}
        properties[name] = spec
    return {
        "type": "object",
        "properties": properties,
        "required": schema.get("required", []),
        "additionalProperties": False,
    }


def meta_tool_of(namespace: str, name: str) -> str | None:
    """Which meta-tool ``name`` calls (``Toolrec.SelectTools`` or ``Toolrec_SelectTools``), if any."""
    own = own_tool_of(namespace, name)
    return own if own in (SELECT, USE, LIST_APPS) else None


def instructions(namespace: str) -> str:
    select, use = own_tool_name(namespace, SELECT), own_tool_name(namespace, USE)
    return (
        f"This server gives access to many tools that are not listed. To act: call {select} with each separate "
        f"action as one task; it returns the few tools that fit each task with their input schemas and a query_id. "
        f"Then call {use} with the chosen tool_name, inputs that follow its input_schema, and the query_id."
    )


def meta_tools(namespace: str) -> list[types.Tool]:
    select, use, apps = (own_tool_name(namespace, m) for m in (SELECT, USE, LIST_APPS))
    return [
        types.Tool(
            name=select,
            description=(
                "Step 1 of 2: find the tools to do something. Many tools are available through this server but "
                "not listed; describe what you need and get the ones that fit. Put each separate action in "
                'its own entry of `tasks` (e.g. ["send a Slack message to #ops", "create a GitHub issue"]). '
                f"For each task you get up to {TOOLS_PER_TASK} tools, best first, each with its full input_schema "
                "and a score (the probability, 0 to 1, that it is a right tool for the task), and one query_id "
                f"for the whole call. Then call {use} with a tool_name from the result, inputs that follow its "
                "input_schema, and the query_id. A task of several steps gets tools for every step, each marked "
                "with its `step`. A task with no tools has empty_reason: 'no_match' (nothing you may use fits; "
                "rephrase or tell the user), 'below_min_score' (tools fit, none reached this gateway's floor), "
                "'nothing_allowed' (this user may use no tool here) or 'unavailable' (the lookup failed; retrying "
                "may work)."
            ),
            input_schema=input_schema(SelectArguments),
            annotations=types.ToolAnnotations(title="Find tools", read_only_hint=True, idempotent_hint=True),
        ),
        types.Tool(
            name=use,
            description=(
                f"Step 2 of 2: run one tool found with {select}. Pass tool_name exactly as {select} returned it "
                "(e.g. Slack.SendMessage), inputs as an object that follows that tool's input_schema, and the "
                f"query_id from {select}. Returns the tool's output. If the call fails the result says why: invalid "
                "inputs name each field to fix; 'authorization_required' names the app and where the user can "
                "connect it (tell the user; do not retry until they have)."
            ),
            input_schema=input_schema(UseArguments),
            annotations=types.ToolAnnotations(title="Run a tool", read_only_hint=False, open_world_hint=True),
        ),
        types.Tool(
            name=apps,
            description=(
                "List the apps (services such as Slack or GitHub) the user can act on here, whether each is "
                "connected (every tool runs without authorizing first), and which tools still need authorizing "
                f"with the scopes they lack. Use it to tell the user what to authorize; not needed before {select}."
            ),
            input_schema=input_schema(ListAppsArguments),
            annotations=types.ToolAnnotations(title="List apps", read_only_hint=True, idempotent_hint=True),
        ),
    ]
