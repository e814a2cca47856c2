"""The official MCP SDK client against ``toolrec serve`` over real HTTP on loopback, with real tool back ends: the
two-step flow, direct tools, and every failure as an ``isError`` result (or a protocol-level refusal)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from tests.support.aio import run_async
from tests.support.gateway_app import (
    GATEWAY_ADMIN,
    GATEWAY_AUTO,
    GATEWAY_OFF,
    GATEWAY_ON,
    SLACK_AUTHORIZE_URL,
    UNCONNECTED_USER,
    UNDERSCOPED_USER,
    USER,
    Backends,
    Prepared,
    toolrec_serve,
)
from tests.support.mcp_client import direct_flow, error_of, mcp_client, recommendation_flow, structured, use

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def base_url(prepared: Prepared) -> Iterator[str]:
    with toolrec_serve(prepared) as url:
        yield url


def run(coro: Any) -> Any:
    async def main() -> Any:
        return await coro

    return run_async(main)


async def _with_client(base_url: str, prepared: Prepared, gateway: str, user: str | None, journey: Any) -> Any:
    async with mcp_client(f"{base_url}/mcp/{gateway}", prepared.api_key, user) as client:
        return await journey(client)


def test_recommendation_on_select_then_use(base_url: str, prepared: Prepared, backends: Backends) -> None:
    calls_before = len(backends.worker_calls)
    query_id = run(_with_client(base_url, prepared, GATEWAY_ON, USER, recommendation_flow))
    assert len(query_id) == 36
    assert backends.worker_calls[calls_before:][-1]["input"] == {"city": "oslo", "days": 2}


def test_recommendation_off_lists_and_calls_the_tools(base_url: str, prepared: Prepared) -> None:
    run(_with_client(base_url, prepared, GATEWAY_OFF, USER, direct_flow))


def test_auto_with_few_tools_lists_them_directly(base_url: str, prepared: Prepared) -> None:
    async def journey(client: Any) -> None:
        listed = await client.list_tools()
        assert sorted(t.name for t in listed.tools) == ["Text_Shout", "Weather_GetForecast"]
        shouted = await client.call_tool("Text_Shout", {"text": "quiet"})
        assert structured(shouted) == {"result": "QUIET!"}
        # Allowed by another gateway, not this one: not found here.
        assert error_of(await client.call_tool("Calculator_AddNumbers", {"a": 1, "b": 2}))["name"] == "not_found"

    run(_with_client(base_url, prepared, GATEWAY_AUTO, USER, journey))


def test_failures_are_error_results(base_url: str, prepared: Prepared) -> None:
    async def journey(client: Any) -> dict[str, dict[str, Any]]:
        return {
            "schema": error_of(await use(client, "Weather.GetForecast", {"days": 0})),
            "unknown": error_of(await use(client, "Weather.Teleport", {})),
            "access": error_of(await use(client, "Admin.DeleteUser", {"user": "carol"})),
            "timeout": error_of(await use(client, "Reports.RunQuarterlyReport", {})),
            "down": error_of(await use(client, "Archive.FetchRecord", {"a": 1, "b": 2})),
            "tool": error_of(await use(client, "Printer.PrintDocument", {"printer": "p2"})),
            "bad_select": error_of(await client.call_tool("Toolrec_SelectTools", {"tasks": []})),
        }

    errors = run(_with_client(base_url, prepared, GATEWAY_ON, USER, journey))
    assert errors["schema"]["name"] == "validation_error"
    assert {e["field"] for e in errors["schema"]["field_errors"]} == {"city", "days"}
    assert errors["unknown"] == {"name": "not_found", "message": "no tool named 'Weather.Teleport' that you may use"}
    # A tool the user may not use answers as an unknown one (issue 15 item 8).
    assert errors["access"] == {"name": "not_found", "message": "no tool named 'Admin.DeleteUser' that you may use"}
    assert errors["timeout"]["name"] == "executor_timeout"
    assert errors["down"]["name"] == "executor_unavailable"
    assert errors["tool"] == {"name": "tool_error", "message": "cannot reach printer p2"}
    assert errors["bad_select"]["name"] == "validation_error"


def test_authorization_required_names_the_app(base_url: str, prepared: Prepared, backends: Backends) -> None:
    before = len(backends.worker_calls)

    async def journey(client: Any) -> dict[str, Any]:
        return error_of(await use(client, "Slack.SendMessage", {"channel_name": "ops", "text": "deployed"}))

    error = run(_with_client(base_url, prepared, GATEWAY_ON, UNCONNECTED_USER, journey))
    assert error["name"] == "authorization_required"
    assert (error["app_id"], error["authorize_url"]) == ("Slack", SLACK_AUTHORIZE_URL)
    assert len(backends.worker_calls) == before


def test_task_for_a_user_who_may_use_nothing_says_nothing_allowed(base_url: str, prepared: Prepared) -> None:
    async def journey(client: Any) -> dict[str, Any]:
        result = await client.call_tool("Toolrec_SelectTools", {"tasks": ["delete a user account"]})
        return structured(result)

    # The admin gateway allows Admin.* alone and alice is denied Admin.*: not "no tool fits" but "none you may use".
    body = run(_with_client(base_url, prepared, GATEWAY_ADMIN, USER, journey))
    assert body["results"] == [{"task": "delete a user account", "tools": [], "empty_reason": "nothing_allowed"}]


def test_list_apps(base_url: str, prepared: Prepared) -> None:
    async def journey(client: Any) -> dict[str, Any]:
        return structured(await client.call_tool("Toolrec_ListApps", {"limit": 50}))

    apps = {a["app_id"]: a for a in run(_with_client(base_url, prepared, GATEWAY_ON, USER, journey))["apps"]}
    assert apps["Slack"]["connected"] is True and apps["Slack"]["account"] == "alice@example.test"
    assert apps["Slack"]["needs_authorization"] == []
    assert "Admin" not in apps


def test_list_apps_names_the_tools_a_connection_cannot_run_yet(base_url: str, prepared: Prepared) -> None:
    """Carol's Slack connection lacks chat:write: execute refuses Slack.SendMessage, so ListApps (the same rule)
    says Slack is not connected and which scope the tool still needs (issue 15 item 9)."""

    async def journey(client: Any) -> tuple[dict[str, Any], dict[str, Any]]:
        listed = structured(await client.call_tool("Toolrec_ListApps", {"limit": 50}))
        refused = error_of(await use(client, "Slack.SendMessage", {"channel_name": "ops", "text": "hi"}))
        return listed, refused

    listed, refused = run(_with_client(base_url, prepared, GATEWAY_ON, UNDERSCOPED_USER, journey))
    slack = next(a for a in listed["apps"] if a["app_id"] == "Slack")
    assert refused["name"] == "authorization_required" and refused["missing_scopes"] == ["chat:write"]
    assert (slack["connected"], slack["account"], slack["permissions"]) == (
        False,
        "carol@example.test",
        ["channels:read"],
    )
    assert slack["needs_authorization"] == [
        {"tool_name": "Slack.SendMessage", "app_id": "Slack", "missing_scopes": ["chat:write"]}
    ]
    assert slack["needs_authorization_count"] == 1


def test_missing_user_header_is_refused(base_url: str, prepared: Prepared) -> None:
    # The SDK client raises from its transport task group, so the MCPError arrives inside an ExceptionGroup.
    with pytest.raises(BaseExceptionGroup) as caught:
        run(_with_client(base_url, prepared, GATEWAY_ON, None, recommendation_flow))
    assert caught.group_contains(MCPError, match="X-Toolrec-User", depth=None)


def test_http_level_refusals(base_url: str, prepared: Prepared) -> None:
    auth = {"Authorization": f"Bearer {prepared.api_key}", "X-Toolrec-User": USER}
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert httpx.post(f"{base_url}/mcp/{GATEWAY_ON}", json=ping).status_code == 401
    assert httpx.post(f"{base_url}/mcp/nope", json=ping, headers=auth).status_code == 404
    assert httpx.get(f"{base_url}/mcp/{GATEWAY_ON}", headers=auth).status_code == 405
    assert httpx.post(f"{base_url}/mcp/{GATEWAY_ON}", json=ping, headers=auth).json() == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {},
    }
