"""Bad input, by hand: the inputs a fuzzer rarely builds (huge, empty, control characters, JSON that is not an
object, bodies that lie about their size) on every route, in process (ASGI). Each answer is < 500 and every error
is the one error body; the inputs that are valid get a normal answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from handler.api.schemas import MAX_BODY_BYTES, MAX_TASK_CHARS, MAX_TASKS, SELECT_TOP_K_MAX
from tests.reliability.conftest import assert_error_body
from tests.support.gateway_app import GATEWAY_ON, USER, GatewayApp, catalog

SELECT, SEARCH, EXECUTE = "/v1/tools/select", "/v1/tools/search", "/v1/tools/execute"
TOOL_NAMES = [t.name for t in catalog("http://w", "http://u", "http://d")]


@pytest.fixture(scope="module")
def client(gateway: GatewayApp) -> Iterator[httpx.Client]:
    # In process; an exception the app does not handle is raised here rather than hidden behind a 500.
    with TestClient(gateway.app, headers={"Authorization": f"Bearer {gateway.api_key}"}) as api:
        yield api


def answer(response: httpx.Response) -> Any:
    assert response.status_code < 500, response.text
    body = response.json()
    if response.status_code >= 400:
        assert_error_body(response.status_code, body)
    return body


def select(client: httpx.Client, **fields: Any) -> httpx.Response:
    return client.post(SELECT, json={"user_id": USER, **fields})


def fields_of(body: Any) -> set[str]:
    return {problem["field"] for problem in body.get("field_errors", [])}


@pytest.mark.parametrize(
    "tasks",
    [
        ["a" * MAX_TASK_CHARS],
        ["envoyer un message à l'équipe", "天気予報を見る", "أرسل رسالة", "🚀🔥 deploy finished"],
        ["\x00\x01\x1f send a message \x7f"],
        ["\u202eegassem a dnes\u202c", "zero\u200bwidth", "combining e\u0301\u0301\u0301"],
        ["\ud7ff\ue000\uffff", "\U0010ffff"],
        ["x"] * MAX_TASKS,
    ],
)
def test_odd_but_valid_tasks_get_an_answer_per_task(client: httpx.Client, tasks: list[str]) -> None:
    body = answer(select(client, tasks=tasks))
    assert [r["task"] for r in body["results"]] == [t.strip() for t in tasks]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"tasks": []}, "tasks"),
        ({"tasks": [""]}, "tasks.0"),
        ({"tasks": ["   \t\n"]}, "tasks.0"),
        ({"tasks": ["a" * (MAX_TASK_CHARS + 1)]}, "tasks.0"),
        ({"tasks": ["x"] * (MAX_TASKS + 1)}, "tasks"),
        ({"tasks": "send a message"}, "tasks"),
        ({"tasks": [1, 2]}, "tasks.0"),
        ({"tasks": [None]}, "tasks.0"),
        ({"tasks": [["nested"]]}, "tasks.0"),
        ({"tasks": {"a": "b"}}, "tasks"),
        ({"tasks": None}, "tasks"),
        ({}, "tasks"),
        ({"tasks": ["x"], "top_k": 0}, "top_k"),
        ({"tasks": ["x"], "top_k": -1}, "top_k"),
        ({"tasks": ["x"], "top_k": "20.5"}, "top_k"),
        ({"tasks": ["x"], "top_k": 20.5}, "top_k"),
        ({"tasks": ["x"], "top_k": [5]}, "top_k"),
        ({"tasks": ["x"], "top_k": None}, "top_k"),
        ({"tasks": ["x"], "context": 42}, "context"),
        ({"tasks": ["x"], "context": "c" * 4_001}, "context"),
        ({"tasks": ["x"], "gateway_id": ""}, "gateway_id"),
        ({"tasks": ["x"], "gateway_id": 7}, "gateway_id"),
        ({"tasks": ["x"], "unknown_field": True}, "unknown_field"),
        ({"tasks": ["x"], "user_id": ""}, "user_id"),
        ({"tasks": ["x"], "user_id": None}, "user_id"),
    ],
)
def test_invalid_select_fields_are_400_naming_the_field(
    client: httpx.Client, fields: dict[str, Any], field: str
) -> None:
    response = select(client, **fields)
    assert response.status_code == 400, response.text
    assert field in fields_of(answer(response))


@pytest.mark.parametrize("top_k", [10**9, 10**30, SELECT_TOP_K_MAX + 1])
def test_huge_top_k_is_clamped(client: httpx.Client, top_k: int) -> None:
    body = answer(select(client, tasks=["get the weather"], top_k=top_k))
    assert 0 < len(body["results"][0]["suggestions"]) <= SELECT_TOP_K_MAX


@pytest.mark.parametrize(
    "raw",
    [b"", b"{", b"null", b"[]", b'"tasks"', b"42", b"\xff\xfe\x00", b'{"tasks": ["x"], "user_id": "u",}', b"NaN"],
)
@pytest.mark.parametrize("path", [SELECT, SEARCH, EXECUTE])
def test_bodies_that_are_not_a_json_object_are_400(client: httpx.Client, path: str, raw: bytes) -> None:
    response = client.post(path, content=raw, headers={"Content-Type": "application/json"})
    assert response.status_code == 400, response.text
    answer(response)


def test_a_json_body_sent_as_text_is_400(client: httpx.Client) -> None:
    raw = json.dumps({"tasks": ["x"], "user_id": USER}).encode()
    response = client.post(SELECT, content=raw, headers={"Content-Type": "text/plain"})
    assert response.status_code == 400
    answer(response)


@pytest.mark.parametrize("size", [MAX_BODY_BYTES + 1, 10 * 1024 * 1024])
def test_oversize_bodies_are_400_before_parsing(client: httpx.Client, size: int) -> None:
    raw = b'{"tasks": ["' + b"a" * size + b'"], "user_id": "u"}'
    for path in (SELECT, SEARCH, EXECUTE, f"/mcp/{GATEWAY_ON}"):
        response = client.post(path, content=raw, headers={"Content-Type": "application/json", "X-Toolrec-User": USER})
        assert response.status_code == 400, (path, response.text)
        assert fields_of(answer(response)) == {"body"}


def test_a_streamed_body_without_content_length_is_counted(client: httpx.Client) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"tasks": ["'
        for _ in range(20):
            yield b"a" * 8192
        yield b'"], "user_id": "u"}'

    response = client.post(SELECT, content=chunks(), headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    answer(response)


def test_unknown_gateway_is_404_everywhere(client: httpx.Client) -> None:
    assert answer(select(client, tasks=["x"], gateway_id="no-such-gateway"))["name"] == "not_found"
    search = client.post(SEARCH, json={"query": "x", "user_id": USER, "gateway_id": "no-such-gateway"})
    assert answer(search)["name"] == "not_found"
    mcp = client.post(
        "/mcp/no-such-gateway",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"X-Toolrec-User": USER},
    )
    assert mcp.status_code == 404
    # A JSON-RPC error, whose message MCP clients show, carrying the error body (PRODUCT.md §3).
    assert mcp.json()["error"]["data"]["name"] == "not_found"


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ({"user_id": USER, "limit": 0}, "limit"),
        ({"user_id": USER, "limit": 201}, "limit"),
        ({"user_id": USER, "limit": "abc"}, "limit"),
        ({"user_id": USER, "limit": 10**20}, "limit"),
        ({"user_id": USER, "offset": -1}, "offset"),
        ({"user_id": USER, "offset": "1.5"}, "offset"),
        ({"user_id": ""}, "user_id"),
        ({}, "user_id"),
    ],
)
def test_invalid_apps_paging_is_400(client: httpx.Client, query: dict[str, Any], field: str) -> None:
    response = client.get("/v1/apps", params=query)
    assert response.status_code == 400, response.text
    assert field in fields_of(answer(response))


def test_huge_offset_is_an_empty_page(client: httpx.Client) -> None:
    body = answer(client.get("/v1/apps", params={"user_id": USER, "offset": 10**12}))
    assert body["apps"] == [] and body["total"] > 0


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"{",
        b"[]",
        b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]',
        b'{"jsonrpc": "1.0", "id": 1, "method": "ping"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "no/such/method"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": "not an object"}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": 5, "arguments": []}}',
        b'{"jsonrpc": "2.0", "id": {"x": 1}, "method": "tools/list"}',
        b'{"jsonrpc": "2.0", "method": "notifications/initialized"}',
        b"\xff\xfe",
    ],
)
def test_malformed_mcp_messages_are_json_rpc_errors_not_crashes(client: httpx.Client, raw: bytes) -> None:
    response = client.post(
        f"/mcp/{GATEWAY_ON}", content=raw, headers={"Content-Type": "application/json", "X-Toolrec-User": USER}
    )
    assert response.status_code < 500, response.text
    if response.content:
        body = response.json()
        assert body.get("jsonrpc") == "2.0", body
        assert "Traceback" not in response.text


def test_mcp_without_the_user_header_is_refused(client: httpx.Client) -> None:
    response = client.post(f"/mcp/{GATEWAY_ON}", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert response.status_code == 400


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(tool=st.sampled_from(TOOL_NAMES), inputs=json_values, extra=st.dictionaries(st.text(max_size=6), json_values))
def test_execute_with_any_json_input_is_never_5xx(
    client: httpx.Client, tool: str, inputs: Any, extra: dict[str, Any]
) -> None:
    """Real tool names (which the fuzzer cannot guess) with arbitrary JSON as input, and stray top-level fields."""
    body = {**extra, "tool_name": tool, "input": inputs, "user_id": USER}
    response = client.post(EXECUTE, json=body)
    result = answer(response)
    if response.status_code == 200:
        assert isinstance(inputs, dict) and not set(extra) - {"tool_name", "input", "user_id", "query_id"}
        assert result["tool_name"] == tool


@settings(max_examples=100, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
@given(
    name=st.sampled_from(["Toolrec_SelectTools", "Toolrec_UseTool", "Toolrec_ListApps", *TOOL_NAMES]),
    arguments=json_values,
)
def test_mcp_tool_calls_with_any_arguments_are_results(client: httpx.Client, name: str, arguments: Any) -> None:
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    response = client.post(f"/mcp/{GATEWAY_ON}", json=message, headers={"X-Toolrec-User": USER})
    assert response.status_code < 500, response.text
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] == 7
    assert ("result" in body) != ("error" in body), body


def test_an_unknown_user_is_served_by_the_rules_for_everyone(client: httpx.Client) -> None:
    """No error for a user the policy never named: the `*` rules apply, and nothing is authorized for them."""
    stranger = "nobody-\u00e9\u00e8-" + "x" * 200
    selected = answer(client.post(SELECT, json={"tasks": ["send a slack message"], "user_id": stranger}))
    assert selected["results"][0]["suggestions"]
    apps = answer(client.get("/v1/apps", params={"user_id": stranger}))
    assert {a["app_id"]: a["connected"] for a in apps["apps"]}["Slack"] is False
    inputs = {"channel_name": "ops", "text": "hi"}
    refused = client.post(EXECUTE, json={"tool_name": "Slack.SendMessage", "input": inputs, "user_id": stranger})
    assert refused.status_code == 403 and answer(refused)["name"] == "authorization_required"
