"""/v1/providers over real HTTP (uvicorn on loopback, the real composition root, real workers): the tools each
provider is told to defer are the ones the user may use, every listed name is one execute reads back, and the
SDK clients send toolrec's answers unchanged (built against a mock transport: no network)."""

from __future__ import annotations

import json
from typing import Any

import anthropic
import httpx
import httpx2
import openai

from handler.catalog.names import listed_name
from tests.support import provider_types
from tests.support.gateway_app import USER

TASK = "get the weather forecast for Lima"


def tools(api: httpx.Client, provider: str, user: str = USER) -> list[dict[str, Any]]:
    """The request's ``tools``: the search tool, then every page of deferred tools (two to a page here)."""
    listed: list[dict[str, Any]] = []
    while True:
        query = {"user_id": user, "limit": 2, "offset": len(listed)}
        response = api.get(f"/v1/providers/{provider}/tools", params=query)
        assert response.status_code == 200, response.text
        page = response.json()
        listed += page["tools"]
        if len(listed) >= page["total"]:
            return [page["search_tool"], *listed]


def test_the_deferred_tools_are_the_ones_the_user_may_use(api: httpx.Client) -> None:
    claude, gpt = tools(api, "anthropic"), tools(api, "openai")
    provider_types.anthropic_tools(claude)
    provider_types.openai_tools(gpt)
    apps = api.get("/v1/apps", params={"user_id": USER}).json()["apps"]
    assert len(claude) - 1 == len(gpt) - 1 == sum(a["tool_count"] for a in apps)
    names = {t["name"] for t in claude[1:]}
    assert names == {t["name"] for t in gpt[1:]}
    assert "Weather_GetForecast" in names and "Admin_DeleteUser" not in names  # alice is denied the Admin app


def test_every_listed_name_is_the_tool_to_execute(api: httpx.Client) -> None:
    # An input no catalog schema allows: execute answers 400 for the tool it resolved, 404 for a name it does not.
    for tool in tools(api, "anthropic")[1:]:
        response = api.post(
            "/v1/tools/execute", json={"tool_name": tool["name"], "input": {"not_a_field": 1}, "user_id": USER}
        )
        assert (response.status_code, response.json()["name"]) == (400, "validation_error"), tool["name"]
    unknown = api.post("/v1/tools/execute", json={"tool_name": "Nope_Nothing", "input": {}, "user_id": USER})
    assert unknown.status_code == 404


def test_the_search_is_select_and_the_sdk_sends_it_unchanged(api: httpx.Client) -> None:
    select = api.post("/v1/tools/select", json={"tasks": [TASK], "user_id": USER, "top_k": 3}).json()
    want = [listed_name(s["tool_name"]) for s in select["results"][0]["suggestions"]]
    assert want[0] == "Weather_GetForecast"

    found = api.post(
        "/v1/providers/anthropic/search", json={"task": TASK, "tool_use_id": "toolu_9", "user_id": USER, "top_k": 3}
    ).json()
    assert [b["tool_name"] for b in found["tool_result"]["content"]] == want
    sent = _anthropic_request(tools(api, "anthropic"), found["tool_result"])
    assert sent["tools"] == tools(api, "anthropic")
    assert sent["messages"][-1]["content"] == [found["tool_result"]]

    output = api.post(
        "/v1/providers/openai/search", json={"task": TASK, "call_id": "call_9", "user_id": USER, "top_k": 3}
    ).json()
    assert [t["name"] for t in output["tool_search_output"]["tools"]] == want
    sent = _openai_request(tools(api, "openai"), output["tool_search_output"])
    assert sent["tools"] == tools(api, "openai")
    assert sent["input"][-1] == output["tool_search_output"]


def _recording(bodies: list[dict[str, Any]], answer: dict[str, Any]) -> httpx2.Client:
    def handle(request: httpx2.Request) -> httpx2.Response:
        bodies.append(json.loads(request.content))
        return httpx2.Response(200, json=answer)

    return httpx2.Client(transport=httpx2.MockTransport(handle))


def _anthropic_request(listed: list[dict[str, Any]], tool_result: dict[str, Any]) -> dict[str, Any]:
    bodies: list[dict[str, Any]] = []
    reply = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [],
             "stop_reason": "end_turn", "usage": {"input_tokens": 1, "output_tokens": 1}}  # fmt: skip
    client = anthropic.Anthropic(api_key="test", max_retries=0, http_client=_recording(bodies, reply))
    search = {"type": "tool_use", "id": tool_result["tool_use_id"], "name": listed[0]["name"], "input": {"task": TASK}}
    client.messages.create(
        model="claude-sonnet-4-5",
        max_tokens=256,
        tools=listed,
        messages=[
            {"role": "user", "content": TASK},
            {"role": "assistant", "content": [search]},
            {"role": "user", "content": [tool_result]},
        ],
    )
    (body,) = bodies
    return body


def _openai_request(listed: list[dict[str, Any]], search_output: dict[str, Any]) -> dict[str, Any]:
    bodies: list[dict[str, Any]] = []
    reply = {"id": "resp_1", "object": "response", "created_at": 0, "model": "m", "output": [],
             "parallel_tool_calls": True, "tool_choice": "auto", "tools": []}  # fmt: skip
    client = openai.OpenAI(api_key="test", max_retries=0, http_client=_recording(bodies, reply))
    call = {"type": "tool_search_call", "id": "ts_9", "call_id": search_output["call_id"], "execution": "client",
            "arguments": {"task": TASK}, "status": "completed"}  # fmt: skip
    client.responses.create(
        model="gpt-5.4",
        tools=listed,
        input=[{"role": "user", "content": TASK}, call, search_output],
    )
    (body,) = bodies
    return body
