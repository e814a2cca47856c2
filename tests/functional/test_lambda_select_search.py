"""POST /v1/tools/select and /search through the Lambda handler, as API Gateway (HTTP API v2) invokes it."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.functional.conftest import Function
from tests.support.serving import SCOPED_KEY


def names(suggestions: list[dict[str, object]]) -> list[object]:
    return [s["tool_name"] for s in suggestions]


def test_select_returns_full_tools_per_task_and_logs_the_query(function: Function) -> None:
    tasks = ["send a Slack message to the #ops channel", "open an issue in our GitHub repository"]
    status, _, body = function.call("POST", "/v1/tools/select", {"tasks": tasks, "user_id": "demo-user"})

    assert status == 200
    assert [r["task"] for r in body["results"]] == tasks
    first, second = body["results"]
    assert first["suggestions"][0]["tool_name"] == "Slack.SendMessage"
    assert "GitHub.CreateIssue" in names(second["suggestions"])
    assert all(len(r["suggestions"]) <= 5 for r in body["results"])
    top = first["suggestions"][0]
    assert top["input_schema"]["required"] == ["channel_name", "text"]
    assert top["description"].startswith("Send a message to a Slack channel")

    logged = function.services.policy.get_query(body["query_id"])
    assert logged is not None and logged.user_id == "demo-user"
    assert logged.tasks == tuple(tasks)
    assert logged.recommended[0] == tuple(names(first["suggestions"]))


def test_meaning_finds_a_tool_without_shared_words(function: Function) -> None:
    status, _, body = function.call(
        "POST", "/v1/tools/select", {"tasks": ["what will the weather be like in Lisbon this weekend"], "user_id": "u"}
    )
    assert status == 200
    assert names(body["results"][0]["suggestions"])[0] == "Weather.GetForecast"


def test_top_k_defaults_and_clamps(function: Function) -> None:
    _, _, body = function.call("POST", "/v1/tools/select", {"tasks": ["send a message"], "user_id": "u", "top_k": 500})
    assert len(body["results"][0]["suggestions"]) == 20
    _, _, body = function.call("POST", "/v1/tools/select", {"tasks": ["send a message"], "user_id": "u", "top_k": 2})
    assert len(body["results"][0]["suggestions"]) == 2


def test_gateway_filters_before_top_k(function: Function) -> None:
    # A task that GitHub's issue tools fit as well as Zendesk's tickets: unfiltered, they would take slots.
    task = "open an issue ticket about the login bug"
    request = {"tasks": [task], "user_id": "demo-user", "gateway_id": "support", "top_k": 20}
    status, _, body = function.call("POST", "/v1/tools/select", request)
    assert status == 200
    found = names(body["results"][0]["suggestions"])
    assert found and all(n == "Slack.SendMessage" or str(n).startswith("Zendesk.") for n in found)
    assert len(found) == 8  # every tool the gateway allows (7 Zendesk + 1 Slack) and nothing else


def test_user_rules_deny_tools_everywhere(function: Function) -> None:
    request = {"tasks": ["send a Slack message"], "user_id": "no-slack-user", "top_k": 20}
    _, _, body = function.call("POST", "/v1/tools/select", request)
    assert not any(str(n).startswith("Slack.") for n in names(body["results"][0]["suggestions"]))
    _, _, body = function.call("POST", "/v1/tools/search", {"query": "slack message", "user_id": "no-slack-user"})
    assert not any(str(n).startswith("Slack.") for n in names(body["results"]))


def test_a_key_limited_to_a_gateway(function: Function) -> None:
    request = {"tasks": ["send an email"], "user_id": "demo-user"}
    status, _, body = function.call("POST", "/v1/tools/select", request, key=SCOPED_KEY)
    assert status == 200
    assert all(
        n == "Slack.SendMessage" or str(n).startswith("Zendesk.") for n in names(body["results"][0]["suggestions"])
    )
    status, _, body = function.call("POST", "/v1/tools/select", {**request, "gateway_id": "default"}, key=SCOPED_KEY)
    assert (status, body["name"]) == (403, "forbidden")


def test_unknown_gateway_is_not_found(function: Function) -> None:
    status, _, body = function.call("POST", "/v1/tools/select", {"tasks": ["x"], "user_id": "u", "gateway_id": "nope"})
    assert status == 404
    assert body == {"name": "not_found", "message": "unknown gateway 'nope'"}  # no gateway is near 'nope'


def test_search_is_keyword_only(function: Function) -> None:
    status, _, body = function.call("POST", "/v1/tools/search", {"query": "refund payment", "user_id": "u"})
    assert status == 200
    assert names(body["results"])[0] == "Stripe.RefundPayment"
    # BM25 alone: a query sharing no word with any tool finds nothing (no semantic fallback).
    _, _, body = function.call("POST", "/v1/tools/search", {"query": "zzzqqq", "user_id": "u"})
    assert body == {"results": []}
    _, _, body = function.call("POST", "/v1/tools/search", {"query": "list", "user_id": "u", "top_k": 1000})
    assert 0 < len(body["results"]) <= 50


def test_base64_encoded_body(function: Function) -> None:
    status, _, body = function.call(
        "POST", "/v1/tools/search", {"query": "create jira issue", "user_id": "u"}, base64_body=True
    )
    assert status == 200
    assert names(body["results"])[0] == "Jira.CreateIssue"


def test_no_index_is_service_unavailable(make_function: Callable[..., Function], tmp_path: Path) -> None:
    function = make_function(str(tmp_path / "empty-index"))
    status, _, body = function.call("POST", "/v1/tools/select", {"tasks": ["send a message"], "user_id": "u"})
    assert status == 503
    assert body["name"] == "service_unavailable" and "toolrec build" in body["message"]
    status, _, body = function.call("GET", "/healthz", key=None)
    assert status == 503
    assert body["status"] == "unavailable" and body["build_id"] is None and "no index" in body["reason"]
    assert body["catalog_built_at"] is None and body["catalog_age_seconds"] is None


def test_healthz_names_the_build_and_its_age(function: Function, demo_index: Path) -> None:
    build_id = (demo_index / "LATEST").read_text().strip()
    manifest = json.loads((demo_index / "builds" / build_id / "manifest.json").read_text())
    status, _, body = function.call("GET", "/healthz", key=None)
    answered = datetime.now(UTC)
    assert status == 200
    age = body.pop("catalog_age_seconds")
    assert body == {
        "status": "ok",
        "build_id": build_id,
        "tool_count": 96,
        "reason": None,
        "catalog_built_at": manifest["created_at"],
        "policy_unknown_names": [],  # every name of the demo policy is a tool or app of the demo catalog
    }
    expected = (answered - datetime.fromisoformat(manifest["created_at"])).total_seconds()
    assert expected - 2 <= age <= expected + 0.5  # created_at has whole seconds


def test_context_helps_the_lexical_side(function: Function) -> None:
    request = {"tasks": ["send a text message"], "user_id": "u", "top_k": 3}
    _, _, plain = function.call("POST", "/v1/tools/select", request)
    _, _, with_context = function.call("POST", "/v1/tools/select", {**request, "context": "we talk on WhatsApp"})
    # Context feeds BM25 only, and fusion counts ranks: it moves the tool it names up, it does not outvote meaning.
    plain_names, context_names = (
        names(plain["results"][0]["suggestions"]),
        names(with_context["results"][0]["suggestions"]),
    )
    assert "Twilio.SendWhatsAppMessage" in context_names[:2]
    assert context_names.index("Twilio.SendWhatsAppMessage") < plain_names.index("Twilio.SendWhatsAppMessage")
    # A bare tool name is matched exactly, whatever the context says.
    _, _, exact = function.call(
        "POST", "/v1/tools/select", {"tasks": ["Stripe.GetBalance"], "context": "slack", "user_id": "u"}
    )
    assert names(exact["results"][0]["suggestions"])[0] == "Stripe.GetBalance"


@pytest.mark.parametrize(
    "task", ["find the open PRs assigned to me", "find the design doc about onboarding in my drive"]
)
def test_real_requests_the_probe_saw_refused_get_tools_at_every_top_k(function: Function, task: str) -> None:
    # Issue 13: a no match at top_k 1-3 (or up to 5) and tools above it. Now neither, at any top_k.
    for top_k in (1, 3, 5, 10, 20):
        _, _, body = function.call("POST", "/v1/tools/select", {"tasks": [task], "user_id": "u", "top_k": top_k})
        assert len(body["results"][0]["suggestions"]) == top_k, (task, top_k)
