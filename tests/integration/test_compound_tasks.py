"""A task of several steps over REST and MCP (PRODUCT.md §2, §3): each step's best tool is in the answer at a
``top_k`` of at least the steps, each suggestion says which step it serves, a one-step task (a value with "and"
in it included) is answered with no ``step``; and the floor: ``below_min_score``, compared with the score shown."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.aio import run_async
from tests.support.gateway_app import GATEWAY_ON, USER, Prepared, toolrec_serve
from tests.support.mcp_client import mcp_client, structured

COMPOUND = "get the weather forecast for Oslo, then post it to the #ops channel on slack"
STEPS = {"get the weather forecast for Oslo": "Weather.GetForecast", "post it to the #ops channel on slack": (
    "Slack.SendMessage"
)}  # fmt: skip


def select(api: httpx.Client, task: str, **extra: Any) -> dict[str, Any]:
    response = api.post("/v1/tools/select", json={"tasks": [task], "user_id": USER, **extra})
    assert response.status_code == 200, response.text
    result: dict[str, Any] = response.json()["results"][0]
    return result


@pytest.mark.parametrize("top_k", [2, 3, 5])
def test_each_step_gets_its_best_tool_and_says_which_step(api: httpx.Client, top_k: int) -> None:
    result = select(api, COMPOUND, top_k=top_k)
    suggestions = result["suggestions"]
    assert len(suggestions) <= top_k
    by_step = {s["step"]: s["tool_name"] for s in suggestions if s["tool_name"] in STEPS.values()}
    assert by_step == STEPS, suggestions
    # Every suggestion of a split task carries its step: one of the steps, or the whole task for a tool the whole
    # task's own ranking found and no step's did.
    assert all(s["step"] in STEPS or s["step"] == COMPOUND for s in suggestions), suggestions
    scores = [s["score"] for s in suggestions]
    assert scores == sorted(scores, reverse=True)  # the score never rises down the list, as for one step


def test_a_one_step_task_has_no_step_even_with_and_in_a_value(api: httpx.Client) -> None:
    for task in ("get the weather forecast for Oslo", "print the quarterly report for Johnson and Johnson"):
        suggestions = select(api, task)["suggestions"]
        assert suggestions, task
        assert all("step" not in s for s in suggestions), suggestions


def test_a_floor_equal_to_a_shown_score_keeps_that_tool(api: httpx.Client) -> None:
    first = select(api, "get the weather forecast for Oslo")["suggestions"][0]
    again = select(api, "get the weather forecast for Oslo", min_score=first["score"])["suggestions"]
    assert again and again[0]["tool_name"] == first["tool_name"] and again[0]["score"] == first["score"]


def test_a_floor_above_every_fitting_tool_says_below_min_score(api: httpx.Client) -> None:
    first = select(api, "get the weather forecast for Oslo")["suggestions"][0]
    assert first["score"] < 1.0
    refused = select(api, "get the weather forecast for Oslo", min_score=min(1.0, first["score"] + 0.0001))
    assert refused["suggestions"] == [] and refused["empty_reason"] == "below_min_score"
    nothing_fits = select(api, "renew my passport at the embassy", min_score=0.5)
    assert nothing_fits["empty_reason"] == "no_match"  # no tool fits at all: not a matter of the floor


@pytest.fixture(scope="module")
def base_url(prepared: Prepared) -> Iterator[str]:
    with toolrec_serve(prepared) as url:
        yield url


@pytest.mark.slow
def test_select_tools_over_mcp_splits_steps_too(base_url: str, prepared: Prepared) -> None:
    async def journey() -> dict[str, Any]:
        async with mcp_client(f"{base_url}/mcp/{GATEWAY_ON}", prepared.api_key, USER) as client:
            result = await client.call_tool("Toolrec_SelectTools", {"tasks": [COMPOUND, "get the weather for Oslo"]})
            return structured(result)

    compound, single = run_async(journey)["results"]
    assert {t["step"]: t["tool_name"] for t in compound["tools"] if t["tool_name"] in STEPS.values()} == STEPS
    assert single["tools"] and all("step" not in t for t in single["tools"])
