"""GET /v1/apps and execute agree on "connected" (issue 15 item 9; PRODUCT.md §2: `connected` is true when the user
can call the app's tools without authorizing first). On the demo catalog and the test policy, every tool is executed
for each user, and the apps listing must name exactly the tools execute refused with authorization_required."""

from __future__ import annotations

from typing import Any

import pytest

from build_index.ops.serve import DEMO_CONNECTIONS, DEMO_USER
from tests.functional.conftest import Function
from tests.support.serving import demo_tools

DUMMY = {"string": "x", "integer": 1, "number": 1, "boolean": True, "array": ["x"], "object": {}}


def _valid_input(schema: dict[str, Any]) -> dict[str, Any]:
    """The required fields with a value of their type: enough to get past input validation to authorization."""
    properties = schema.get("properties", {})
    return {name: DUMMY[properties[name].get("type", "string")] for name in schema.get("required", [])}


def _refused_by_execute(function: Function, user_id: str) -> dict[str, set[str]]:
    """Per app, the tools execute answers 403 authorization_required for (nothing runs then)."""
    refused: dict[str, set[str]] = {}
    for tool in demo_tools():
        body = {"tool_name": tool.name, "input": _valid_input(tool.input_schema), "user_id": user_id}
        status, _, answer = function.call("POST", "/v1/tools/execute", body)
        assert status in (200, 403, 404), (tool.name, status, answer)
        if status == 403:
            assert answer["name"] == "authorization_required", answer
            refused.setdefault(tool.app, set()).add(tool.name)
    return refused


@pytest.mark.parametrize("user_id", [DEMO_USER, "someone-else", "no-slack-user"])
def test_apps_say_connected_exactly_when_execute_needs_no_authorization(function: Function, user_id: str) -> None:
    status, _, listing = function.call("GET", "/v1/apps", query={"user_id": user_id, "limit": 200})
    assert status == 200
    refused = _refused_by_execute(function, user_id)
    for app in listing["apps"]:
        pending = {t["tool_name"] for t in app["needs_authorization"]}
        assert pending == refused.get(app["app_id"], set()), app["app_id"]
        assert app["connected"] is (not pending), app["app_id"]
    assert set(refused) <= {a["app_id"] for a in listing["apps"]}


def test_the_demo_user_is_not_connected_to_slack_while_six_slack_tools_need_scopes(function: Function) -> None:
    _, _, listing = function.call("GET", "/v1/apps", query={"user_id": DEMO_USER, "limit": 200})
    apps = {a["app_id"]: a for a in listing["apps"]}
    slack = apps["Slack"]
    granted = set(DEMO_CONNECTIONS["Slack"][1])
    assert slack["connected"] is False
    assert (slack["account"], set(slack["permissions"])) == ("demo@toolrec.example", granted)  # the live connection
    pending = {t["tool_name"]: t for t in slack["needs_authorization"]}
    assert len(pending) == 6
    assert pending["Slack.AddReaction"] == {
        "tool_name": "Slack.AddReaction",
        "app_id": "Slack",
        "missing_scopes": ["reactions:write"],
    }
    assert "Slack.SendMessage" not in pending  # chat:write is granted
    assert apps["GitHub"]["needs_authorization"] == [
        {"tool_name": t, "app_id": "GitHub", "missing_scopes": ["public_repo"]}
        for t in [t.name for t in demo_tools() if t.requirements and "public_repo" in t.requirements.scopes]
    ]
    stripe = apps["Stripe"]  # never connected: every tool needs the connection and all its scopes
    assert stripe["connected"] is False and len(stripe["needs_authorization"]) == stripe["tool_count"] == 8
    assert apps["Weather"]["connected"] is True and apps["Weather"]["needs_authorization"] == []
