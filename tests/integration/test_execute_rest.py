"""POST /v1/tools/execute over real HTTP (uvicorn on loopback) against real workers: outputs, every refusal, every
failure, and the link from a recommendation to the execution in the query log."""

from __future__ import annotations

from typing import Any

import httpx

from tests.support.gateway_app import (
    SLACK_AUTHORIZE_URL,
    UNCONNECTED_USER,
    UNDERSCOPED_USER,
    USER,
    Backends,
    GatewayApp,
)


def execute(api: httpx.Client, tool_name: str, inputs: Any, user: str = USER, **extra: Any) -> httpx.Response:
    return api.post("/v1/tools/execute", json={"tool_name": tool_name, "input": inputs, "user_id": user, **extra})


def test_http_tool_returns_the_workers_output(api: httpx.Client, backends: Backends) -> None:
    response = execute(api, "Weather.GetForecast", {"city": "lima", "days": 3})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["success"] is True
    assert body["tool_name"] == "Weather.GetForecast"
    assert body["output"] == {"city": "Lima", "days": ["lima-day-1", "lima-day-2", "lima-day-3"]}
    assert body["duration_ms"] > 0 and len(body["execution_id"]) == 36
    assert backends.worker_calls[-1]["user_id"] == USER


def test_mcp_tool_returns_the_upstream_output(api: httpx.Client) -> None:
    body = execute(api, "Calculator.AddNumbers", {"a": 19, "b": 23}).json()
    assert (body["success"], body["output"]) == (True, {"sum": 42})


def test_schema_violation_is_400_naming_the_fields(api: httpx.Client, backends: Backends) -> None:
    before = len(backends.worker_calls)
    response = execute(api, "Weather.GetForecast", {"days": 9, "units": "metric"})
    assert response.status_code == 400
    body = response.json()
    assert body["name"] == "validation_error"
    fields = {e["field"] for e in body["field_errors"]}
    assert fields == {"city", "days", "units"}
    assert len(backends.worker_calls) == before  # nothing ran


def test_unknown_tool_is_404(api: httpx.Client) -> None:
    response = execute(api, "Weather.Teleport", {})
    assert response.status_code == 404
    assert response.json()["name"] == "not_found"


def test_tool_outside_the_users_access_is_404_as_an_unknown_one(api: httpx.Client) -> None:
    # Answered as an unknown tool, so a caller cannot probe which tools exist (issue 15 item 8).
    response = execute(api, "Admin.DeleteUser", {"user": "carol"})
    assert response.status_code == 404
    assert response.json() == {"name": "not_found", "message": "no tool named 'Admin.DeleteUser' that you may use"}


def test_authorization_required_names_the_app_and_where_to_authorize(api: httpx.Client, backends: Backends) -> None:
    before = len(backends.worker_calls)
    response = execute(api, "Slack.SendMessage", {"channel_name": "ops", "text": "hi"}, user=UNCONNECTED_USER)
    assert response.status_code == 403
    body = response.json()
    assert body["name"] == "authorization_required"
    assert "Slack" in body["message"] and SLACK_AUTHORIZE_URL in body["message"]
    assert len(backends.worker_calls) == before
    # The connected user runs the same tool.
    assert execute(api, "Slack.SendMessage", {"channel_name": "ops", "text": "hi"}).json()["success"] is True


def test_missing_scopes_are_named(api: httpx.Client) -> None:
    response = execute(api, "Slack.SendMessage", {"channel_name": "ops", "text": "hi"}, user=UNDERSCOPED_USER)
    assert response.status_code == 403
    assert response.json()["message"] == (
        "authorization required: Slack.SendMessage needs the scopes chat:write on Slack; "
        f"authorize at {SLACK_AUTHORIZE_URL}"
    )


def test_executor_timeout_is_a_failed_execution(api: httpx.Client) -> None:
    response = execute(api, "Reports.RunQuarterlyReport", {})
    assert response.status_code == 200
    body = response.json()
    assert body["success"] is False and body["output"] is None
    assert body["error"]["name"] == "executor_timeout"
    assert body["duration_ms"] < 2_000


def test_upstream_mcp_server_down_is_a_failed_execution(api: httpx.Client) -> None:
    body = execute(api, "Archive.FetchRecord", {"a": 1, "b": 2}).json()
    assert body["success"] is False
    assert body["error"]["name"] == "executor_unavailable"


def test_tool_error_carries_the_tools_message(api: httpx.Client) -> None:
    body = execute(api, "Printer.PrintDocument", {"printer": "floor-3"}).json()
    assert body["success"] is False
    assert body["error"] == {"name": "tool_error", "message": "cannot reach printer floor-3"}


def test_request_cannot_redirect_the_call(api: httpx.Client) -> None:
    response = api.post(
        "/v1/tools/execute",
        json={"tool_name": "Weather.GetForecast", "input": {"city": "x"}, "user_id": USER, "target": "http://evil"},
    )
    assert response.status_code == 400
    assert response.json()["field_errors"][0]["field"] == "target"


def test_missing_api_key_is_401(gateway: GatewayApp, api: httpx.Client) -> None:
    response = httpx.post(api.base_url.join("/v1/tools/execute"), json={"tool_name": "x", "user_id": USER})
    assert response.status_code == 401


def test_execution_is_linked_to_the_recommendation(api: httpx.Client, gateway: GatewayApp) -> None:
    selected = api.post("/v1/tools/select", json={"tasks": ["weather forecast for a city"], "user_id": USER})
    assert selected.status_code == 200, selected.text
    query_id = selected.json()["query_id"]
    execute(api, "Weather.GetForecast", {"city": "rome"}, query_id=query_id)
    execute(api, "Reports.RunQuarterlyReport", {}, query_id=query_id)
    record = gateway.policy.get_query(query_id)
    assert record is not None
    assert [(e.tool_name, e.outcome) for e in record.executions] == [
        ("Weather.GetForecast", "ok"),
        ("Reports.RunQuarterlyReport", "executor_timeout"),
    ]
