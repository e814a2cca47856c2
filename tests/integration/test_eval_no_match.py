"""`toolrec eval` reports both no-match errors and a set's impossible requests; `toolrec calibrate-score` fits the
score and the no match with each set left out, reading only queries the model never trained on.

Runs the real model over small slices of the shared data written in the benchmark format: arcade tools
and the arcade requests they answer as the set, ToolRet's Hugging Face model requests as the off-catalog
tasks (no arcade tool runs a machine-learning model).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from build_index.model_prepare import MODEL_ID
from build_index.quality.calibration import calibration_queries, left_out_calibration
from build_index.quality.evaluate import evaluate
from build_index.quality.training_split import needs_held_out_tool
from handler.inference.embedder import OnnxEmbedder
from handler.ranking.confidence import FEATURES
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
    sample = calibration_queries(shared_dir / "training" / "metatool", max_queries=300)
    assert len(sample) == 300 and all(needs_held_out_tool("metatool", q.groups) for q in sample)


def test_calibrate_score_fits_each_set_left_out_and_eval_reads_that_fit(
    small_sets: tuple[Path, Path], shared_dir: Path, tmp_path: Path
) -> None:
    own, _ = small_sets
    big = shared_dir / "benchmarks" / "arcade_evals"  # 416 queries: large enough to vote on the no match
    command = [str(Path(sys.executable).with_name("toolrec")), "calibrate-score", str(big), str(own), "--json"]
    ran = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    assert ran.returncode == 0, ran.stderr[-2000:]
    report = json.loads(ran.stdout)
    assert report["features"] == list(FEATURES) and 0.0 < report["no_match"] < 1.0
    left_out = report["sets"]["own"]  # fit on arcade_evals alone, the no match from it
    assert left_out["no_match"] == report["no_match"] and 0.0 <= left_out["ece"] <= 1.0
    assert all(0.0 <= row["p"] <= 1.0 and 0.0 <= row["right"] <= 1.0 for row in left_out["table"])
    assert report["sets"]["arcade_evals"]["no_match"] is None  # "own" alone is too small to vote: never refuse
    (tmp_path / "report.json").write_text(ran.stdout)
    calibration = left_out_calibration(tmp_path / "report.json", "own")
    assert calibration.no_match == left_out["no_match"] and calibration.weights.tolist() == left_out["weights"]
    with pytest.raises(ValueError, match="no fit without"):
        left_out_calibration(tmp_path / "report.json", "toolret")


def test_eval_scores_a_sets_impossible_requests_by_how_many_it_refuses(
    small_sets: tuple[Path, Path], embedder: OnnxEmbedder, tmp_path: Path
) -> None:
    own, other = small_sets
    impossible = [
        {**q, "id": f"x{n}", "relevant": [], "relevant_groups": []}
        for n, q in enumerate(_rows(other / "queries.jsonl"))
    ]
    mixed = _write(tmp_path / "mixed", _rows(own / "tools.jsonl"), _rows(own / "queries.jsonl") + impossible)
    result = evaluate(mixed, embedder, MODEL_ID, Method.HYBRID, cache=tmp_path / "cache")
    assert result["queries"] == 30 and result["impossible"] == 30  # impossible requests count apart
    assert 0.0 <= result["impossible_refused"] <= 100.0 and 0.0 <= result["first"] <= 100.0
    # Both are rounded to two places: a wrong first tool is at most every query the first tool missed.
    assert 0.0 <= result["right_app_wrong_tool_first"] <= 100.0 - result["first"] + 0.01
