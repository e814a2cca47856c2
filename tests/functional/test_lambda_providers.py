"""/v1/providers/{anthropic,openai} through the Lambda handler, as API Gateway (HTTP API v2) invokes it.

The search answers are select's answers in each provider's shape: the same tools in the same order for the same
request (policy, gateway, no match, top_k), held to the providers' SDK types.
"""

from __future__ import annotations

from typing import Any

import pytest

from handler.catalog.names import listed_name
from tests.functional.conftest import Function
from tests.support import provider_types
from tests.support.serving import SCOPED_KEY

SLACK_TASK = "send a Slack message to the #ops channel"
WEATHER_TASK = "what will the weather be like in Lisbon this weekend"


def selected(function: Function, task: str, **request: Any) -> list[str]:
    status, _, body = function.call("POST", "/v1/tools/select", {"tasks": [task], "user_id": "demo-user", **request})
    assert status == 200, body
    return [listed_name(s["tool_name"]) for s in body["results"][0]["suggestions"]]


def anthropic_search(function: Function, task: str, **request: Any) -> tuple[int, Any]:
    body = {"task": task, "tool_use_id": "toolu_01", "user_id": "demo-user", **request}
    status, _, answer = function.call("POST", "/v1/providers/anthropic/search", body)
    return status, answer


def openai_search(function: Function, task: str, **request: Any) -> tuple[int, Any]:
    body = {"task": task, "call_id": "call_01", "user_id": "demo-user", **request}
    status, _, answer = function.call("POST", "/v1/providers/openai/search", body)
    return status, answer


def referenced(answer: Any) -> list[str]:
    return [block["tool_name"] for block in answer["tool_result"]["content"] if block["type"] == "tool_reference"]


def loaded(answer: Any) -> list[str]:
    return [tool["name"] for tool in answer["tool_search_output"]["tools"]]


def listing(function: Function, provider: str, **query: Any) -> Any:
    status, _, body = function.call("GET", f"/v1/providers/{provider}/tools", query={"user_id": "demo-user", **query})
    assert status == 200, body
    return body


def request_tools(body: Any) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = [body["search_tool"], *body["tools"]]
    return tools


def test_anthropic_tools_are_every_usable_tool_deferred(function: Function) -> None:
    body = listing(function, "anthropic")
    provider_types.anthropic_tools(request_tools(body))
    assert (body["total"], body["limit"], body["offset"]) == (96, 500, 0)
    search, deferred = body["search_tool"], body["tools"]
    assert (search["name"], search["defer_loading"]) == ("Toolrec_FindTools", False)
    assert len(deferred) == 96 and all(t["defer_loading"] for t in deferred)
    assert "Slack_SendMessage" in {t["name"] for t in deferred}

    denied = listing(function, "anthropic", user_id="no-slack-user")
    assert not any(t["name"].startswith("Slack_") for t in denied["tools"])
    support = listing(function, "anthropic", gateway_id="support")
    names = [t["name"] for t in support["tools"]]
    assert support["total"] == len(names) == 8
    assert all(n == "Slack_SendMessage" or n.startswith("Zendesk_") for n in names)


def test_the_tools_come_a_page_at_a_time(function: Function) -> None:
    whole = listing(function, "openai")["tools"]
    pages = [listing(function, "openai", limit=40, offset=offset) for offset in (0, 40, 80, 120)]
    assert [len(p["tools"]) for p in pages] == [40, 40, 16, 0]
    assert {p["total"] for p in pages} == {96}
    assert [t for p in pages for t in p["tools"]] == whole
    status, _, body = function.call("GET", "/v1/providers/openai/tools", query={"user_id": "u", "limit": 1001})
    assert (status, body["name"]) == (400, "validation_error")


def test_openai_tools_are_the_same_tools_as_functions(function: Function) -> None:
    body = listing(function, "openai", gateway_id="support")
    provider_types.openai_tools(request_tools(body))
    claude = listing(function, "anthropic", gateway_id="support")
    assert [t["name"] for t in body["tools"]] == [t["name"] for t in claude["tools"]]
    assert [t["parameters"] for t in body["tools"]] == [t["input_schema"] for t in claude["tools"]]


@pytest.mark.parametrize(
    "request_",
    [{}, {"top_k": 2}, {"top_k": 500}, {"gateway_id": "support", "top_k": 20}, {"context": "we talk on WhatsApp"}],
)
def test_searches_answer_exactly_what_select_answers(function: Function, request_: dict[str, Any]) -> None:
    for task in (SLACK_TASK, "send a text message", "open an issue ticket about the login bug"):
        want = selected(function, task, **request_)
        status, claude = anthropic_search(function, task, **request_)
        assert status == 200, claude
        provider_types.anthropic_tool_result(claude["tool_result"])
        assert claude["tool_result"]["tool_use_id"] == "toolu_01"
        assert referenced(claude) == want
        status, gpt = openai_search(function, task, **request_)
        assert status == 200, gpt
        provider_types.openai_tool_search_output(gpt["tool_search_output"])
        assert gpt["tool_search_output"]["call_id"] == "call_01"
        assert loaded(gpt) == want


def test_no_match_is_select_s_no_match(function: Function) -> None:
    request = {"gateway_id": "support"}  # Zendesk and Slack only: nothing there forecasts the weather
    assert selected(function, WEATHER_TASK, **request) == []
    _, claude = anthropic_search(function, WEATHER_TASK, **request)
    provider_types.anthropic_tool_result(claude["tool_result"])
    assert [b["type"] for b in claude["tool_result"]["content"]] == ["text"]
    _, gpt = openai_search(function, WEATHER_TASK, **request)
    assert gpt["tool_search_output"]["tools"] == []


def test_a_search_is_logged_like_a_select(function: Function) -> None:
    _, answer = openai_search(function, SLACK_TASK, top_k=3)
    logged = function.services.policy.get_query(answer["query_id"])
    assert logged is not None and logged.user_id == "demo-user"
    assert logged.tasks == (SLACK_TASK,)
    assert [listed_name(n) for n in logged.recommended[0]] == loaded(answer)


def test_policy_and_bad_requests_answer_as_select_does(function: Function) -> None:
    status, _, body = function.call("GET", "/v1/providers/openai/tools", query={"user_id": "u", "gateway_id": "nope"})
    assert (status, body["name"]) == (404, "not_found")
    status, body = anthropic_search(function, SLACK_TASK, gateway_id="default")
    assert status == 200
    status, _, body = function.call(
        "POST",
        "/v1/providers/anthropic/search",
        {"task": SLACK_TASK, "tool_use_id": "t", "user_id": "u", "gateway_id": "default"},
        key=SCOPED_KEY,
    )
    assert (status, body["name"]) == (403, "forbidden")
    status, _, body = function.call("GET", "/v1/providers/anthropic/tools", query={"user_id": "u"}, key=None)
    assert (status, body["name"]) == (401, "unauthorized")
    status, _, body = function.call("GET", "/v1/providers/anthropic/tools")
    assert (status, body["name"]) == (400, "validation_error")
    status, body = openai_search(function, "   ", call_id="")
    assert (status, body["name"]) == (400, "validation_error")
    assert {e["field"] for e in body["field_errors"]} == {"task", "call_id"}
    status, body = anthropic_search(function, SLACK_TASK, top_k=True)
    assert (status, body["name"]) == (400, "validation_error")
