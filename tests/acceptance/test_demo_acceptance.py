"""The demo acceptance set (README.md here) answered by select through the real Lambda handler, as an agent gets it.

The aims are top-1 >= 80 % and top-5 >= 97 % of the possible tasks (no match applied, at the default top_k) and
no match on >= 80 % of the impossible ones. Top-5 is held at its aim; top-1 and the impossible tasks are held at
a little under what the shipped ranking reaches (97 of 112 and 6 of 20 on 2026-12-04 with the sibling stage, 91
without it; docs/quality.md), so a change that loses tasks fails here while the impossible tasks' aim is still open.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mangum import Mangum

from handler.api.schemas import MAX_TASKS
from handler.composition import build_app
from handler.inference.embedder import OnnxEmbedder
from tests.support.serving import (
    apigw_event,
    demo_tools,
    file_settings,
    invoke,
    lambda_thread_loop,
    publish_tools,
    write_test_policy,
)

TASKS = Path(__file__).with_name("demo_tasks.jsonl")
README_TASK = "open a GitHub issue for the flaky test"
TOP5_FLOOR = 0.97
TOP1_FLOOR = 0.85
IMPOSSIBLE_REFUSED_FLOOR = 0.25


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in TASKS.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory, embedder: OnnxEmbedder) -> Iterator[dict[str, list[str]]]:
    """Each task's suggestions at the default top_k, asked as an agent would: several tasks per select."""
    root = tmp_path_factory.mktemp("acceptance")
    publish_tools(demo_tools(), str(root / "index"), embedder)
    policy = write_test_policy(root / "policy.json")
    tasks = [row["task"] for row in _rows()] + [README_TASK]
    found: dict[str, list[str]] = {}
    with lambda_thread_loop():
        app = build_app(file_settings(str(root / "index"), policy, root / "cache"), embedder=embedder)
        handler = Mangum(app, lifespan="off")
        for start in range(0, len(tasks), MAX_TASKS):
            body = {"tasks": tasks[start : start + MAX_TASKS], "user_id": "demo-user"}
            status, _, answer = invoke(handler, apigw_event("POST", "/v1/tools/select", body))
            assert status == 200, answer
            for result in answer["results"]:
                found[result["task"]] = [s["tool_name"] for s in result["suggestions"]]
        yield found


def test_the_set_is_what_its_readme_says() -> None:
    rows = _rows()
    catalog = {tool.name for tool in demo_tools()}
    possible = [r for r in rows if r["relevant"]]
    assert len(possible) >= 80 and len(rows) - len(possible) >= 15
    assert all(set(r["relevant"]) <= catalog for r in rows)


def test_readme_example_ranks_the_right_tool_first(answers: dict[str, list[str]]) -> None:
    assert answers[README_TASK][:1] == ["GitHub.CreateIssue"], answers[README_TASK]


def test_possible_tasks_get_their_tool(answers: dict[str, list[str]]) -> None:
    possible = [r for r in _rows() if r["relevant"]]
    top1 = sum(bool(answers[r["task"]]) and answers[r["task"]][0] in r["relevant"] for r in possible)
    top5 = sum(any(t in r["relevant"] for t in answers[r["task"]][:5]) for r in possible)
    missed = [(r["task"], answers[r["task"]][:3]) for r in possible if not set(answers[r["task"]]) & set(r["relevant"])]
    assert top5 / len(possible) >= TOP5_FLOOR, missed
    assert top1 / len(possible) >= TOP1_FLOOR, (top1, len(possible))


def test_impossible_tasks_are_a_no_match(answers: dict[str, list[str]]) -> None:
    impossible = [r["task"] for r in _rows() if not r["relevant"]]
    refused = sum(not answers[task] for task in impossible)
    assert refused / len(impossible) >= IMPOSSIBLE_REFUSED_FLOOR, [(t, answers[t][:2]) for t in impossible]
