"""`toolrec acceptance-set`: the acceptance tasks as sets `toolrec eval` reads, each task with a tool, as written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from build_index.cli import main
from build_index.quality.acceptance_sets import ACCEPTANCE_DIR, write_acceptance_set
from build_index.quality.evaluate import benchmark_queries, benchmark_tools


def _tasks(which: str) -> list[dict[str, object]]:
    lines = (ACCEPTANCE_DIR / f"{which}_tasks.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def test_the_demo_set_holds_every_demo_task_that_has_a_tool(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["acceptance-set", "demo", str(tmp_path / "demo")]) == 0
    assert "the demo acceptance tasks that have a tool" in capsys.readouterr().out
    ids, tools = benchmark_tools(tmp_path / "demo")
    queries = benchmark_queries(tmp_path / "demo", with_instruction=False)
    wanted = [t for t in _tasks("demo") if t["relevant"]]
    assert [q.text for q in queries] == [t["task"] for t in wanted]
    # A demo task lists the tools that would each do it: one step, any of them.
    assert [q.groups for q in queries] == [[list(t["relevant"])] for t in wanted]
    assert ids == [tool.name for tool in tools] and {x for q in queries for g in q.groups for x in g} <= set(ids)


def test_the_arcade_set_keeps_each_step_and_leaves_out_the_impossible(tmp_path: Path, shared_dir: Path) -> None:
    out = write_acceptance_set("arcade", tmp_path / "arcade", shared_dir)
    queries = benchmark_queries(out, with_instruction=False)
    wanted = [t for t in _tasks("arcade") if t["kind"] != "impossible"]
    assert [(q.id, q.text, q.groups) for q in queries] == [(t["id"], t["task"], t["relevant_groups"]) for t in wanted]
    assert len(benchmark_tools(out)[0]) == 1078


def test_an_unknown_set_is_named(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="choose one of demo, arcade"):
        write_acceptance_set("bench", tmp_path, tmp_path)
