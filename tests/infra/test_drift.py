"""toolrec drift: record a golden from a served index, pass against the same build, catch a perturbed rebuild."""

from __future__ import annotations

from pathlib import Path

import pytest

from build_index.cli import main as toolrec
from build_index.drift import Golden, compare, load_golden, read_queries
from handler.catalog.tool import Tool
from handler.composition import build_app
from handler.inference.embedder import OnnxEmbedder
from infra.tenant import load_tenant, tenant_names
from tests.infra.conftest import REPO_ROOT
from tests.support.servers import serve
from tests.support.serving import API_KEY, demo_tools, file_settings, publish_tools, write_test_policy

QUERIES = REPO_ROOT / "infra" / "tenants" / "queries.txt"


def test_tolerance_top1_must_match_and_four_of_five_stay() -> None:
    recorded = ["A", "B", "C", "D", "E"]
    assert compare(recorded, ["A", "C", "B", "E", "D"]) is None  # reordered below the top: near-ties may swap
    assert compare(recorded, ["A", "B", "C", "D", "X"]) is None  # 4 of 5 kept
    assert compare(recorded, ["B", "A", "C", "D", "E"]) == "top-1 changed from A to B"
    assert "only 3 of the recorded top 5" in str(compare(recorded, ["A", "B", "C", "X", "Y"]))
    assert compare(["A", "B"], ["A", "B"]) is None  # fewer than 5 recorded: all of them must stay
    assert compare(["A", "B"], ["A", "X"]) is not None


def _drift(url: str, golden: Path, *extra: str) -> int:
    return toolrec(["drift", "--url", url, "--golden", str(golden), *extra])


def test_record_then_detect_a_perturbed_rebuild(
    tmp_path: Path, embedder: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TOOLREC_DRIFT_API_KEY", API_KEY)
    index = tmp_path / "index"
    tools = demo_tools()
    publish_tools(tools, str(index), embedder)
    settings = file_settings(
        str(index), write_test_policy(tmp_path / "policy.json"), tmp_path / "cache", index_refresh_seconds=0
    )
    golden = tmp_path / "golden.json"
    with serve(build_app(settings, embedder=embedder)) as url:
        assert _drift(url, golden, "--record", "--queries", str(QUERIES), "--user-id", "ana") == 0
        recorded = load_golden(golden)
        assert [(q.task, q.right) for q in recorded.queries] == [(t.task, t.right) for t in read_queries(QUERIES)]
        right_now = [q for q in recorded.queries if not q.known_wrong]
        assert len(right_now) >= 3  # the perturbation below drops the best tool of three tasks answered right

        capsys.readouterr()
        assert _drift(url, golden) == 0
        assert "0 moved" in capsys.readouterr().out

        # The perturbation: a catalog edit drops the recorded best tool of three queries and rebuilds.
        dropped = {q.expected[0]: q.task for q in right_now[:3]}
        publish_tools(_without(tools, set(dropped)), str(index), embedder)
        assert _drift(url, golden) == 1
        report = capsys.readouterr().out
        moved = [line for line in report.splitlines() if line.strip().startswith("MOVED")]
        assert len(moved) >= len(dropped)
        for name, task in dropped.items():
            assert f"MOVED {task!r}: top-1 changed from {name}" in report

        # Recorded from the perturbed build, the dropped tools' tasks are marked wrong, not passed off as known-good.
        assert _drift(url, golden, "--record", "--queries", str(QUERIES), "--user-id", "ana") == 0
        perturbed = {q.task: q for q in load_golden(golden).queries}
        assert all(perturbed[task].known_wrong for task in dropped.values())
        assert all(q.known_wrong == (q.expected[0] not in q.right) for q in perturbed.values())
        assert "known wrong: " in capsys.readouterr().out

        # The full catalog back: answering those tasks right again is an improvement, not drift.
        publish_tools(tools, str(index), embedder)
        assert _drift(url, golden) == 0, capsys.readouterr().out


def test_a_query_line_must_name_the_tools_right_for_it(tmp_path: Path) -> None:
    queries = tmp_path / "queries.txt"
    queries.write_text("# comment\n\nsend a slack message => Slack.SendMessage, Slack.PostMessage\n")
    [task] = read_queries(queries)
    assert (task.task, task.right) == ("send a slack message", ["Slack.SendMessage", "Slack.PostMessage"])
    queries.write_text("send a slack message\n")
    with pytest.raises(ValueError, match=r"queries\.txt:1: expected 'task => App\.Tool"):
        read_queries(queries)


def _without(tools: list[Tool], names: set[str]) -> list[Tool]:
    return [tool for tool in tools if tool.name not in names]


def test_unreachable_endpoint_is_an_error_not_a_pass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOOLREC_DRIFT_API_KEY", API_KEY)
    golden = tmp_path / "golden.json"
    query = {"task": "t", "right": ["A"], "expected": ["A"]}
    golden.write_text(Golden(recorded_at="now", recorded_from="b", user_id="ana", queries=[query]).model_dump_json())
    assert _drift("http://127.0.0.1:9", golden) == 2


@pytest.mark.parametrize("name", tenant_names())
def test_each_tenant_golden_covers_the_query_set(name: str) -> None:
    golden = load_golden(REPO_ROOT / load_tenant(name).drift.golden)
    assert [(q.task, q.right) for q in golden.queries] == [(t.task, t.right) for t in read_queries(QUERIES)]
    # Each query recorded its top 5; a top-1 that is not a tool a person checked as right is marked so.
    assert all(len(q.expected) == golden.top_k for q in golden.queries)
    assert all(q.known_wrong == (q.expected[0] not in q.right) for q in golden.queries)
