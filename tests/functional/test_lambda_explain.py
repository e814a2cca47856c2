"""`explain` on POST /v1/tools/select through the Lambda handler (PRODUCT.md §2 "Why"): each suggestion's words,
similarity and pin as the ranking read them, an empty answer's comparison, and nothing at all when not asked."""

from __future__ import annotations

import re
from typing import Any

import pytest

from handler.inference.embedder import OnnxEmbedder
from handler.ranking.analyzer import DEFAULT_ANALYZER
from handler.ranking.confidence import NO_MATCH_COSINE
from handler.ranking.recommend import recommend
from handler.ranking.text import index_text
from tests.functional.conftest import Function

SLACK_TASK = "send a Slack message to the ops channel about the release"
NOTHING_FITS = "rent a car in Lisbon for the weekend"


def select(function: Function, tasks: list[str], **options: Any) -> list[dict[str, Any]]:
    status, _, body = function.call("POST", "/v1/tools/select", {"tasks": tasks, "user_id": "demo-user", **options})
    assert status == 200, body
    results: list[dict[str, Any]] = body["results"]
    return results


def terms(text: str) -> set[str]:
    return set(DEFAULT_ANALYZER(text))


def test_each_suggestion_lists_the_task_words_its_name_or_first_line_holds(function: Function) -> None:
    (result,) = select(function, [SLACK_TASK], explain=True, top_k=10)
    index = function.services.holder.current()
    weights = index.ranking.lexical_query(SLACK_TASK).weights
    task_words = {w.lower() for w in re.findall(r"\w+", SLACK_TASK)}
    assert result["suggestions"][0]["tool_name"] == "Slack.SendMessage"
    assert [w["word"] for w in result["suggestions"][0]["why"]["words"]][:2] == ["send", "Slack"]
    names = list(index.ranking.names)
    for suggestion in result["suggestions"]:
        position = names.index(suggestion["tool_name"])
        tool = index.tools[position]
        held = terms(index_text(tool.name, tool.description))
        words = suggestion["why"]["words"]
        for word in words:
            assert word["word"].lower() in task_words, word
            assert terms(word["word"]) & held, (word, tool.name)
        shares = [w["weight"] for w in words]
        assert shares == sorted(shares, reverse=True) and all(s > 0 for s in shares)
        # the words' weights add up to the tool's BM25 score: nothing matched is left out
        bm25 = float(index.ranking.bm25.score_weighted(weights)[position])
        assert sum(shares) == pytest.approx(bm25, abs=1e-3), tool.name
        unmatched = task_words - {w["word"].lower() for w in words}
        assert not any(terms(w) & held for w in unmatched), (tool.name, unmatched)


def test_similarity_is_the_cosine_the_ranking_used(function: Function, embedder: OnnxEmbedder) -> None:
    tasks = [SLACK_TASK, "what will the weather be like in Lisbon this weekend"]
    results = select(function, tasks, explain=True)
    index = function.services.holder.current()
    for task, result in zip(tasks, results, strict=True):
        cosine = {
            index.ranking.names[h.index]: h.semantic for h in recommend(index.ranking, embedder, task, None, 20).hits
        }
        assert result["suggestions"]
        for suggestion in result["suggestions"]:
            assert suggestion["why"]["similarity"] == round(cosine[suggestion["tool_name"]], 4)
            assert suggestion["why"]["named"] is False
            assert "usage" not in suggestion["why"] and "step" not in suggestion["why"]  # a cold build, one step


def test_a_task_that_names_a_tool_says_it_is_pinned_first(function: Function) -> None:
    (result,) = select(function, ["GitHub.CreateIssue"], explain=True, top_k=3)
    named = [(s["tool_name"], s["why"]["named"]) for s in result["suggestions"]]
    assert named[0] == ("GitHub.CreateIssue", True) and all(not pinned for _, pinned in named[1:]), named


def test_an_empty_answer_says_what_the_no_match_compared(function: Function, embedder: OnnxEmbedder) -> None:
    (refused,) = select(function, [NOTHING_FITS], explain=True)
    assert refused["suggestions"] == [] and refused["empty_reason"] == "no_match"
    index = function.services.holder.current()
    best = recommend(index.ranking, embedder, NOTHING_FITS, None, 5).best_cosine
    assert best is not None
    assert refused["why"] == {"best_cosine": round(best, 4), "refusal_below": NO_MATCH_COSINE}
    assert refused["why"]["best_cosine"] < refused["why"]["refusal_below"]


def test_an_answer_emptied_by_the_floor_says_the_best_score_it_compared(function: Function) -> None:
    (result,) = select(function, [SLACK_TASK], explain=True, min_score=0.999)
    assert result["suggestions"] == [] and result["empty_reason"] == "below_min_score"
    why = result["why"]
    assert why["best_cosine"] >= why["refusal_below"]  # it fit: the floor, not the refusal, emptied it
    assert why["min_score"] == 0.999 and 0 < why["best_score"] < 0.999
    (plain,) = select(function, [SLACK_TASK])
    assert why["best_score"] == plain["suggestions"][0]["score"]


@pytest.mark.parametrize("explain", [None, False])
def test_without_explain_nothing_says_why(function: Function, explain: bool | None) -> None:
    options = {} if explain is None else {"explain": explain}
    status, _, body = function.call(
        "POST", "/v1/tools/select", {"tasks": [SLACK_TASK, NOTHING_FITS], "user_id": "demo-user", **options}
    )
    assert status == 200
    found, refused = body["results"]
    assert found["suggestions"] and refused["empty_reason"] == "no_match"
    assert "why" not in refused and all("why" not in s for s in found["suggestions"]), body


@pytest.mark.parametrize("value", ["true", 1, None])
def test_explain_is_a_json_boolean(function: Function, value: Any) -> None:
    request = {"tasks": [SLACK_TASK], "user_id": "demo-user", "explain": value}
    status, _, body = function.call("POST", "/v1/tools/select", request)
    assert status == 400, body
    assert {e["field"] for e in body["field_errors"]} == {"explain"}, body
