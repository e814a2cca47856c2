"""What `toolrec model finetune` trains on: the held-out split, the pairs and the batches (no torch needed)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from build_index.quality.agent_tasks import AgentTask, held_out, read_agent_tasks
from build_index.quality.finetune import TRAINING_SETS, Pair, Recipe, batches, finetune, training_pairs
from build_index.quality.training_split import is_held_out, needs_held_out_tool
from handler.errors import ToolrecError
from handler.ranking.text import index_text


def _training_root(tmp_path: Path, tools_per_set: int = 40) -> Path:
    for set_name in TRAINING_SETS:
        directory = tmp_path / set_name
        directory.mkdir()
        tools = [
            {"id": f"t{i}", "name": f"tool_{i}", "description": f"Does thing {i}.\nMore."} for i in range(tools_per_set)
        ]
        queries = [
            {"id": f"q{i}-{n}", "query": f"please do thing {i} ({n})", "relevant_groups": [[f"t{i}"]]}
            for i in range(tools_per_set)
            for n in range(30)
        ]
        queries.append({"id": "pair", "query": "do 1 then 2", "relevant_groups": [["t1"], ["t2"]]})
        (directory / "tools.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tools))
        (directory / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    return tmp_path


def test_the_split_holds_out_about_one_tool_in_five_the_same_way_every_time() -> None:
    held = [is_held_out("bfcl", f"tool{i}") for i in range(5000)]
    assert 0.18 < sum(held) / len(held) < 0.22
    assert held == [is_held_out("bfcl", f"tool{i}") for i in range(5000)]
    assert is_held_out("metatool", "Algorithma") is False  # pinned: changing the hash would move the split
    assert needs_held_out_tool("s", [["a"], ["b"]]) == (is_held_out("s", "a") or is_held_out("s", "b"))


def _by_number(texts: Sequence[str]) -> list[list[int]]:
    """Neighbours by how close the tools' numbers are: tool i's nearest are i-1 and i+1."""
    return [sorted((j for j in range(len(texts)) if j != i), key=lambda j: (abs(i - j), j)) for i in range(len(texts))]


def test_pairs_never_touch_a_held_out_tool_and_read_the_index_text(tmp_path: Path) -> None:
    root = _training_root(tmp_path)
    pairs = training_pairs(root, Recipe(), _by_number)
    assert pairs and all(not is_held_out(*p.tool_key.split("/")) for p in pairs)
    texts = {f"tool_{i}": index_text(f"tool_{i}", f"Does thing {i}.\nMore.") for i in range(40)}
    assert {p.tool_text for p in pairs} <= set(texts.values())  # what the build embeds, first line only
    per_tool: dict[str, int] = {}
    for pair in pairs:
        per_tool[pair.tool_key] = per_tool.get(pair.tool_key, 0) + 1
    assert max(per_tool.values()) == Recipe().per_tool_cap  # 30 queries a tool, capped at 25
    assert training_pairs(root, Recipe(), _by_number) == pairs  # the seed fixes the order
    assert training_pairs(root, Recipe(seed=1), _by_number) != pairs


def test_each_pair_has_a_look_alike_the_query_does_not_need(tmp_path: Path) -> None:
    root = _training_root(tmp_path)
    pairs = training_pairs(root, Recipe(), _by_number)
    number = {index_text(f"tool_{i}", f"Does thing {i}."): i for i in range(40)}
    nearest = _by_number(list(number))
    for pair in pairs:
        set_name = pair.tool_key.split("/")[0]
        seen = [j for j in nearest[number[pair.tool_text]] if not is_held_out(set_name, f"t{j}")]
        # One of its 3 nearest the query does not need; a held-out tool is never shown, not even as a negative.
        assert number[pair.negative_text] in seen[:4]
    # "do 1 then 2" needs tools 1 and 2: neither is the other's negative.
    for pair in (p for p in pairs if p.query == "do 1 then 2"):
        assert number[pair.negative_text] not in (1, 2)


def _agent_tasks(tmp_path: Path, rows: list[dict[str, object]]) -> list[AgentTask]:
    folder = tmp_path / "agent"
    folder.mkdir()
    (folder / "tasks.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return read_agent_tasks(folder)


def test_agent_tasks_train_with_the_writers_negatives_and_with_their_values_swapped(tmp_path: Path) -> None:
    root = _training_root(tmp_path)
    tool, negative = [i for i in range(40) if not is_held_out("metatool", f"t{i}")][:2]
    rows = [
        {"task": f"void inv-{n} for acme", "tools": [f"t{tool}"], "source": "metatool", "style": "values",
         "values": [{"text": f"inv-{n}", "kind": "invoice_number"}], "negatives": [f"t{negative}"]}
        for n in range(3)
    ]  # fmt: skip
    pairs = training_pairs(root, Recipe(value_swap_share=1.0), _by_number, _agent_tasks(tmp_path, rows))
    agent = [p for p in pairs if p.query.startswith("void ")]
    assert len(agent) == 6  # each task, and each again with another task's invoice number
    assert {p.negative_text for p in agent} == {index_text(f"tool_{negative}", f"Does thing {negative}.")}
    assert {p.query for p in agent} == {f"void inv-{n} for acme" for n in range(3)}  # swaps draw from the others


def test_a_held_out_agent_tool_is_never_trained_on(tmp_path: Path) -> None:
    root = _training_root(tmp_path)
    held = next(i for i in range(40) if is_held_out("metatool", f"t{i}"))
    rows = [{"task": "do it", "tools": [f"t{held}"], "source": "metatool", "style": "terse", "values": [],
             "negatives": []}]  # fmt: skip
    tasks = _agent_tasks(tmp_path, rows)
    assert held_out(tasks[0])
    assert not [p for p in training_pairs(root, Recipe(), _by_number, tasks) if p.query == "do it"]


def test_a_batch_holds_each_tool_once_and_the_walk_wraps_around() -> None:
    pairs = [Pair(f"q{i}", f"tool {i % 3}", f"s/t{i % 3}") for i in range(7)]
    walked = list(batches(pairs, 3, 4))
    assert len(walked) == 4
    for batch in walked:
        assert len({p.tool_key for p in batch}) == 3
    assert walked[0] == pairs[:3] and walked[2][0] == pairs[6]
    with pytest.raises(ValueError, match="distinct tools"):
        next(batches(pairs, 4, 1))


def test_finetune_without_the_train_extra_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("build_index.quality.finetune.TRAINING_EXTRA", ("torch", "a_module_that_is_not_installed"))
    with pytest.raises(ToolrecError, match=r"a_module_that_is_not_installed.*pip install -e '\.\[train\]'"):
        finetune(_training_root(tmp_path), tmp_path / "out")
    assert not (tmp_path / "out").exists()
