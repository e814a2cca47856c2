"""`toolrec eval --usage-split` and `--usage-from` on a small set in the benchmark format (the demo catalog and its
acceptance tasks): cold and warm answer the same test queries, and only the warm index holds the history."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from build_index import cli
from build_index.model_prepare import MODEL_ID
from build_index.quality.evaluate import evaluate
from build_index.quality.usage_eval import evaluate_usage_split, in_history
from build_index.usage.fold import groups_from_benchmark
from handler.inference.embedder import OnnxEmbedder
from handler.ranking.retriever import Method
from tests.support.serving import demo_tools

ACCEPTANCE = Path(__file__).parents[1] / "acceptance" / "demo_tasks.jsonl"


@pytest.fixture
def bench(tmp_path: Path) -> Path:
    directory = tmp_path / "demo_bench"
    directory.mkdir()
    tools = [{"id": t.name, "name": t.name, "description": t.description} for t in demo_tools()]
    (directory / "tools.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tools))
    rows = [json.loads(line) for line in ACCEPTANCE.read_text().splitlines() if line.strip()]
    queries = [
        {"id": f"q{i}", "query": r["task"], "relevant": r["relevant"], "relevant_groups": [r["relevant"]]}
        for i, r in enumerate(rows)
        if r.get("relevant")
    ]
    (directory / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    return directory


def test_usage_split_scores_cold_and_warm_on_the_same_other_half(
    bench: Path, tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    split = evaluate_usage_split(bench, 0.5, embedder, MODEL_ID, method=Method.HYBRID, cache=tmp_path / "cache")
    cold, warm = split["cold"], split["warm"]
    total = len((bench / "queries.jsonl").read_text().splitlines())
    history = sum(in_history(f"q{i}", 0.5) for i in range(total))
    assert split["history_queries"] == history and cold["queries"] == warm["queries"] == total - history
    assert cold["usage"] is None
    assert warm["usage"]["execution_groups"] == history and warm["usage"]["source"] == "eval"
    assert warm["c@5"] >= cold["c@5"] and warm["c@10"] >= cold["c@10"]
    assert "history=all tools seen" in warm["per_subset"]


def test_usage_from_a_file_and_the_split_share_is_checked(
    bench: Path, tmp_path: Path, embedder: OnnxEmbedder, capsys: pytest.CaptureFixture[str]
) -> None:
    history = tmp_path / "history.jsonl"
    history.write_text(json.dumps({"query": "ping the on-call crew", "relevant": ["Slack.SendMessage"]}) + "\n")
    usage = groups_from_benchmark(history)  # what `toolrec eval --usage-from FILE` reads
    result = evaluate(bench, embedder, MODEL_ID, Method.HYBRID, cache=tmp_path / "cache", usage=usage)
    assert result["usage"]["tools_with_usage"] == 1
    for bad in ("1.5", "0", "half"):
        with pytest.raises(SystemExit) as stopped:
            cli.main(["eval", str(bench), "--usage-split", bad])
        assert stopped.value.code == 2
        assert "a share between 0 and 1" in capsys.readouterr().err
