"""`toolrec eval` reports both no-match errors, and the calibration reads only queries the model never trained on.

Runs the real model over small slices of the shared data written in the benchmark format: arcade tools
and the arcade requests they answer as the set, ToolRet's Hugging Face model requests as the off-catalog
tasks (no arcade tool runs a machine-learning model).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from build_index.model_prepare import MODEL_ID
from build_index.quality.calibration import calibration_queries
from build_index.quality.evaluate import evaluate
from build_index.quality.training_split import needs_held_out_tool
from handler.inference.embedder import OnnxEmbedder
from handler.ranking.retriever import Method


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _write(directory: Path, tools: list[dict[str, Any]], queries: list[dict[str, Any]]) -> Path:
    directory.mkdir()
    (directory / "tools.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tools), encoding="utf-8")
    (directory / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    return directory


@pytest.fixture(scope="module")
def small_sets(shared_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("bench")
    arcade = shared_dir / "benchmarks" / "arcade_evals"
    queries = [q for q in _rows(arcade / "queries.jsonl") if q["id"].startswith(("asana/", "github/"))][:30]
    needed = {t for q in queries for t in q["relevant"]}
    tools = [t for t in _rows(arcade / "tools.jsonl") if t["id"] in needed or t["id"].startswith("Slack.")]
    own = _write(root / "own", tools, queries)
    toolret = _rows(shared_dir / "benchmarks" / "toolret" / "queries.jsonl")
    hugging = [q for q in toolret if q.get("task") == "gorilla-huggingface"][:30]
    other = _write(root / "other", [], hugging)
    return own, other


def test_eval_reports_both_no_match_errors(
    small_sets: tuple[Path, Path], embedder: OnnxEmbedder, tmp_path: Path
) -> None:
    own, other = small_sets
    result = evaluate(own, embedder, MODEL_ID, Method.HYBRID, no_match_against=[other], cache=tmp_path)
    assert result["queries"] == 30
    assert result["no_match_false_rate"] <= 1.0  # real requests keep their tools
    # What select returns, beside the fixed reference BM25 (bm25s, ToolRet's settings) in the same run.
    assert result["c@5"] <= result["c@10"] and result["reference_bm25"]["c@5"] <= result["reference_bm25"]["c@10"]
    assert 0.0 < result["reference_bm25"]["c@10"] <= 100.0 and result["gap_closed_reference"] <= 100.0
    assert 0.0 <= result["no_match_true_rate"] <= 100.0
    json.dumps(result)  # the --json output


def test_keyword_ranking_refuses_only_tasks_sharing_no_word(
    small_sets: tuple[Path, Path], embedder: OnnxEmbedder, tmp_path: Path
) -> None:
    own, other = small_sets
    result = evaluate(own, embedder, MODEL_ID, Method.BM25, no_match_against=[other], cache=tmp_path)
    assert result["no_match_false_rate"] == 0.0  # every arcade request shares a word with its tool
    assert 0.0 < result["no_match_true_rate"] < 100.0


def test_calibration_reads_only_queries_about_tools_the_model_never_trained_on(shared_dir: Path) -> None:
    # What calibrate-no-match's threshold asserted went with it (issue 24: `toolrec calibrate-score`); the
    # queries it reads are the same.
    sample = calibration_queries(shared_dir / "training" / "metatool", max_queries=300)
    assert len(sample) == 300 and all(needs_held_out_tool("metatool", q.groups) for q in sample)
