"""The Arcade acceptance set (arcade_tasks.jsonl, ARCADE_PROMPT.md) answered by select through the real Lambda
handler, over the 1,078 tools of ../shared/catalogs/arcade/tools.jsonl, as an agent gets it.

It is for reporting: no weight or threshold was chosen on it. The aims (issues 23 and 24) are top-1 >= 75 % and
C@5 >= 92 % of the one-action tasks (no match applied, top_k 5), C@10 >= 60 % of the multi-step ones, the first
tool of the right app but the wrong action on <= 8 % of the one-action tasks, impossible tasks refused >= 60 %, and
a task's first tool unchanged when its values are swapped for others (either of two swaps changes it on <= 3 % of
the tasks with values). Each test holds what the shipped ranking reaches (2026-12-04, docs/quality.md, with the
sibling stage: top-1 75.3, C@5 93.5, multi-step C@10 71.4, wrong action 13.9 %, values swapped 22.6 %) a little under
or over, so a change that loses tasks fails here while an aim is still open. The no match refuses none of the
impossible tasks (a catalog of a thousand tools always holds one near enough): what holds them apart is their score.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mangum import Mangum

from build_index.quality.evaluate import benchmark_tools
from handler.api.schemas import MAX_TASKS
from handler.composition import build_app
from handler.inference.embedder import OnnxEmbedder
from tests.support.serving import (
    apigw_event,
    file_settings,
    invoke,
    lambda_thread_loop,
    publish_tools,
    write_test_policy,
)

TASKS = Path(__file__).with_name("arcade_tasks.jsonl")
Suggestion = tuple[str, float]  # a tool's name and its score
TOP1_FLOOR = 0.78  # 78.9; 78.0 before an identity tool led only tasks about the caller, 75.5 before the named apps
TOP5_FLOOR = 0.93
MULTI_STEP_TOP10_FLOOR = 0.77  # 78.6 (55 of 70); 75.7 before a longer answer held each step's next tools
WRONG_ACTION_CEILING = 0.15  # 14.2 %; 15.1 before the identity rule, 16.4 without the sibling stage
IMPOSSIBLE_APART_FLOOR = 0.90  # 96 % today: their median first score 0.19, served tasks' 0.61
VALUE_SWAP_CHANGED_CEILING = 0.26


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in TASKS.read_text(encoding="utf-8").splitlines() if line.strip()]


def _swapped(row: dict[str, Any], alternative: int) -> str:
    task = str(row["task"])
    for value in row["values"]:
        task = task.replace(value["text"], value["alternatives"][alternative], 1)
    return task


@pytest.fixture(scope="module")
def catalog(shared_dir: Path) -> Path:
    return shared_dir / "catalogs" / "arcade"


@pytest.fixture(scope="module")
def answers(
    tmp_path_factory: pytest.TempPathFactory, embedder: OnnxEmbedder, catalog: Path
) -> Iterator[dict[str, list[Suggestion]]]:
    """Each task's suggestions (name, score) at top_k 10 (their first 5 are what top_k 5 returns: the no match and
    the scores do not depend on top_k), its values as written and swapped, several tasks per select as agents ask."""
    root = tmp_path_factory.mktemp("arcade-acceptance")
    _, tools = benchmark_tools(catalog)  # catalog rows carry extra fields: read as the benchmark sets are
    publish_tools(tools, str(root / "index"), embedder)
    policy = write_test_policy(root / "policy.json")
    rows = _rows()
    tasks = [r["task"] for r in rows] + [_swapped(r, n) for r in rows if r["values"] for n in (0, 1)]
    found: dict[str, list[Suggestion]] = {}
    with lambda_thread_loop():
        app = build_app(file_settings(str(root / "index"), policy, root / "cache"), embedder=embedder)
        handler = Mangum(app, lifespan="off")
        for start in range(0, len(tasks), MAX_TASKS):
            body = {"tasks": tasks[start : start + MAX_TASKS], "user_id": "demo-user", "top_k": 10}
            status, _, answer = invoke(handler, apigw_event("POST", "/v1/tools/select", body))
            assert status == 200, answer
            for result in answer["results"]:
                found[result["task"]] = [(s["tool_name"], s["score"]) for s in result["suggestions"]]
        yield found


def _names(found: list[Suggestion]) -> list[str]:
    return [name for name, _ in found]


def _kind(kind: str) -> list[dict[str, Any]]:
    return [r for r in _rows() if r["kind"] == kind]


def _complete(found: list[str], groups: list[list[str]], k: int) -> bool:
    return all(set(found[:k]) & set(group) for group in groups)


def test_the_set_is_what_its_prompt_asks_for(catalog: Path) -> None:
    names = {row["name"] for row in map(json.loads, (catalog / "tools.jsonl").read_text().splitlines())}
    rows = _rows()
    assert len(_kind("one_action")) >= 220 and len(_kind("multi_step")) >= 45 and len(_kind("impossible")) >= 45
    assert all({t for g in r["relevant_groups"] for t in g} <= names for r in rows)
    assert all(2 <= len(r["relevant_groups"]) <= 4 for r in _kind("multi_step"))
    assert all(v["text"] in r["task"] and len(v["alternatives"]) == 2 for r in rows for v in r["values"])


def test_one_action_tasks_get_their_tool_first(answers: dict[str, list[Suggestion]]) -> None:
    rows = _kind("one_action")
    top1 = sum(_complete(_names(answers[r["task"]]), r["relevant_groups"], 1) for r in rows) / len(rows)
    top5 = sum(_complete(_names(answers[r["task"]]), r["relevant_groups"], 5) for r in rows) / len(rows)
    assert top5 >= TOP5_FLOOR, top5
    assert top1 >= TOP1_FLOOR, top1


def test_the_first_tool_rarely_has_the_right_app_and_the_wrong_action(answers: dict[str, list[Suggestion]]) -> None:
    rows = _kind("one_action")
    wrong_action = [
        (r["task"], _names(answers[r["task"]])[:1])
        for r in rows
        if answers[r["task"]]
        and not _complete(_names(answers[r["task"]]), r["relevant_groups"], 1)
        and answers[r["task"]][0][0].split(".")[0] in {t.split(".")[0] for g in r["relevant_groups"] for t in g}
    ]
    assert len(wrong_action) / len(rows) <= WRONG_ACTION_CEILING, wrong_action


def test_multi_step_tasks_get_every_tool_in_ten(answers: dict[str, list[Suggestion]]) -> None:
    rows = _kind("multi_step")
    complete = sum(_complete(_names(answers[r["task"]]), r["relevant_groups"], 10) for r in rows) / len(rows)
    assert complete >= MULTI_STEP_TOP10_FLOOR, complete


def test_an_impossible_task_is_refused_or_scores_below_a_served_one(answers: dict[str, list[Suggestion]]) -> None:
    """Where the no match does not refuse, the score still tells the agent how sure select is (PRODUCT.md §2)."""
    served = sorted(answers[r["task"]][0][1] for r in _kind("one_action") if answers[r["task"]])
    median = served[len(served) // 2]
    found = [answers[r["task"]] for r in _kind("impossible")]
    apart = sum(not suggestions or suggestions[0][1] < median for suggestions in found) / len(found)
    assert apart >= IMPOSSIBLE_APART_FLOOR, (apart, median)


def test_swapping_a_tasks_values_rarely_changes_its_first_tool(answers: dict[str, list[Suggestion]]) -> None:
    rows = [r for r in _rows() if r["values"]]
    first = {task: _names(found)[:1] for task, found in answers.items()}
    changed = [r["task"] for r in rows if any(first[_swapped(r, n)] != first[r["task"]] for n in (0, 1))]
    assert len(changed) / len(rows) <= VALUE_SWAP_CHANGED_CEILING, changed  # of the tasks that have values
