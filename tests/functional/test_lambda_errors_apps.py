"""Auth, the one error body, size limits, GET /v1/apps and the OpenAPI document, through the Lambda handler."""

from __future__ import annotations

from typing import Any

import pytest

from handler.api.schemas import MAX_BODY_BYTES, MAX_TASK_CHARS, MAX_TASKS
from tests.functional.conftest import Function

SELECT = "/v1/tools/select"


def assert_error(response: tuple[int, dict[str, str], Any], status: int, name: str) -> dict[str, Any]:
    got_status, headers, body = response
    assert (got_status, body["name"]) == (status, name), body
    assert set(body) <= {"name", "message", "field_errors"}
    assert "Traceback" not in body["message"] and "pydantic" not in str(body)
    assert headers["content-type"] == "application/json"
    return dict(body)


@pytest.mark.parametrize("key", [None, "", "trk_not-a-real-key"])
def test_every_v1_route_needs_a_valid_key(function: Function, key: str | None) -> None:
    headers = {"authorization": "Bearer "} if key == "" else None
    for method, path, body in [
        ("POST", SELECT, {"tasks": ["x"], "user_id": "u"}),
        ("POST", "/v1/tools/search", {"query": "x", "user_id": "u"}),
        ("GET", "/v1/apps", None),
    ]:
        response = function.call(method, path, body, key=key or None, headers=headers, query={"user_id": "u"})
        assert_error(response, 401, "unauthorized")
        assert response[1]["www-authenticate"] == "Bearer"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"user_id": "u"}, "tasks"),
        ({"tasks": [], "user_id": "u"}, "tasks"),
        ({"tasks": ["  "], "user_id": "u"}, "tasks.0"),
        ({"tasks": ["ok", 3], "user_id": "u"}, "tasks.1"),
        ({"tasks": ["ok"]}, "user_id"),
        ({"tasks": ["ok"], "user_id": "u", "top_k": 0}, "top_k"),
        ({"tasks": ["ok"], "user_id": "u", "top_k": "many"}, "top_k"),
        ({"tasks": ["ok"], "user_id": "u", "surprise": 1}, "surprise"),
        ({"tasks": ["x"] * (MAX_TASKS + 1), "user_id": "u"}, "tasks"),
        ({"tasks": ["x" * (MAX_TASK_CHARS + 1)], "user_id": "u"}, "tasks.0"),
        (["not", "an", "object"], "body"),
    ],
)
def test_invalid_select_requests_are_400_with_field_errors(function: Function, body: Any, field: str) -> None:
    error = assert_error(function.call("POST", SELECT, body), 400, "validation_error")
    assert field in [e["field"] for e in error["field_errors"]]


def test_malformed_json_and_oversized_bodies(function: Function) -> None:
    error = assert_error(function.call("POST", SELECT, raw_body=b'{"tasks": ['), 400, "validation_error")
    assert error["field_errors"] == [{"field": "body", "message": "the request body is not valid JSON"}]
    big = {"tasks": ["send a message"], "user_id": "u", "context": "x" * MAX_BODY_BYTES}
    error = assert_error(function.call("POST", SELECT, big), 400, "validation_error")
    assert "larger than" in error["field_errors"][0]["message"]


@pytest.mark.parametrize("content_length", ["-1", "abc", ""])
def test_a_content_length_that_is_not_a_whole_number_is_400(function: Function, content_length: str) -> None:
    """API Gateway frames the body itself, so the event may carry a header no HTTP parser checked."""
    response = function.call(
        "POST", SELECT, {"tasks": ["send a message"], "user_id": "u"}, headers={"content-length": content_length}
    )
    error = assert_error(response, 400, "validation_error")
    assert error["field_errors"] == [{"field": "Content-Length", "message": "must be a whole number of bytes"}]


def test_unknown_routes_and_methods(function: Function) -> None:
    error = assert_error(function.call("GET", "/v1/nothing-here"), 404, "not_found")
    assert error["message"] == "no route GET /v1/nothing-here; the API is described at /docs"
    assert_error(function.call("GET", SELECT), 405, "method_not_allowed")


def test_apps_lists_connections_sorted_and_paged(function: Function) -> None:
    status, _, body = function.call("GET", "/v1/apps", query={"user_id": "demo-user"})
    assert status == 200
    apps = {a["app_id"]: a for a in body["apps"]}
    assert [a["app_id"] for a in body["apps"]] == sorted(apps) and body["total"] == 13 == len(apps)
    calendar = apps["GoogleCalendar"]  # the connection grants every scope its tools need
    assert calendar["connected"] and calendar["account"] == "demo@toolrec.example"
    assert "calendar.events" in calendar["permissions"] and calendar["needs_authorization"] == []
    slack = apps["Slack"]  # connected, but some tools need scopes it lacks (tests/functional/test_apps_connected.py)
    assert (
        not slack["connected"] and slack["account"] == "demo@toolrec.example" and "chat:write" in slack["permissions"]
    )
    assert apps["Weather"]["connected"] and apps["Weather"]["account"] is None  # needs no authorization
    stripe = apps["Stripe"]
    assert not stripe["connected"] and stripe["permissions"] == []
    assert stripe["authorize_url"] == "https://auth.toolrec.example/connect/stripe"
    assert stripe["tool_count"] == 8

    _, _, page = function.call("GET", "/v1/apps", query={"user_id": "demo-user", "limit": 5, "offset": 10})
    assert [a["app_id"] for a in page["apps"]] == [a["app_id"] for a in body["apps"]][10:15]
    assert (page["total"], page["limit"], page["offset"]) == (13, 5, 10)


def test_apps_respect_access_rules_and_validate_paging(function: Function) -> None:
    _, _, body = function.call("GET", "/v1/apps", query={"user_id": "no-slack-user"})
    assert "Slack" not in [a["app_id"] for a in body["apps"]]
    other = function.call("GET", "/v1/apps", query={"user_id": "someone-else"})
    assert other[2]["apps"][0]["connected"] is False or other[2]["apps"][0]["app_id"] == "Weather"
    error = assert_error(function.call("GET", "/v1/apps", query={"user_id": "u", "limit": 0}), 400, "validation_error")
    assert error["field_errors"][0]["field"] == "limit"
    assert_error(function.call("GET", "/v1/apps"), 400, "validation_error")


def test_openapi_document_is_exact(function: Function) -> None:
    schema = function.app.openapi()
    routes = {(path, method) for path, ops in schema["paths"].items() for method in ops}
    assert {
        ("/v1/tools/select", "post"),
        ("/v1/tools/search", "post"),
        ("/v1/apps", "get"),
        ("/healthz", "get"),
    } <= routes
    mine = ("/v1/tools/select", "/v1/tools/search", "/v1/apps", "/healthz")
    for path, operations in schema["paths"].items():
        for operation in operations.values():
            if path not in mine:
                continue
            assert "422" not in operation["responses"], path
            assert "$ref" in str(operation["responses"]["200"]), path  # every route has a response model
    assert schema["paths"]["/v1/tools/select"]["post"]["responses"]["400"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/ErrorBody"
    }
    assert "HTTPValidationError" not in schema["components"]["schemas"]
