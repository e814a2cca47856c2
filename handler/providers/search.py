"""The search the model is offered, the same for both providers: it names one task, toolrec's select answers."""

from __future__ import annotations

from typing import Any

from handler.api.schemas import MAX_TASK_CHARS

DESCRIPTION = (
    "Find the tools to do something. Many tools are available but not loaded yet: describe one action you need "
    "in `task` (e.g. 'send a Slack message to #ops'), and the few tools that fit it are loaded for you to call "
    "next. Search once per separate action. An empty answer means no tool you may use fits: rephrase the task "
    "or tell the user."
)
NO_MATCH = "No tool you may use fits this task. Rephrase it as one concrete action, or tell the user."


def parameters() -> dict[str, Any]:
    """The search's input: the task, held to REST select's limit on one task."""
    return {
        "type": "object",
        "properties": {
            "task": {
                "type": "string",
                "minLength": 1,
                "maxLength": MAX_TASK_CHARS,
                "description": "one action to find a tool for, in plain words",
            }
        },
        "required": ["task"],
        "additionalProperties": False,
    }


def object_schema(input_schema: dict[str, Any]) -> dict[str, Any]:
    """A catalog schema as both providers require it: ``type: object`` spelled out (the catalog may leave it out)."""
    return {"type": "object", **input_schema}
