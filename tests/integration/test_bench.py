"""`toolrec bench` with its defaults runs to its report: a benchmark query longer than a REST task may be is
skipped and counted (select over HTTP refuses it with a 400), so in-process and HTTP figures share one query set."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from build_index.bench.catalog import QUERY_SOURCES, bench_queries
from handler.api.schemas import MAX_TASK_CHARS
from handler.inference.embedder import OnnxEmbedder
from handler.inference.model_files import default_model_dir


def write_queries(shared: Path, texts: list[str]) -> None:
    for name in QUERY_SOURCES:
        path = shared / "benchmarks" / name / "queries.jsonl"
        path.parent.mkdir(parents=True)
        path.write_text("".join(json.dumps({"query": t}) + "\n" for t in texts if name == QUERY_SOURCES[0]))


def test_a_query_over_the_task_limit_is_skipped_and_counted(tmp_path: Path) -> None:
    too_long = "send a message " * 100  # 1,500 characters
    at_the_limit = "x" * MAX_TASK_CHARS
    write_queries(tmp_path, ["open an issue", too_long, f"  {at_the_limit}  ", "list my repositories"])
    queries, skipped = bench_queries(10, tmp_path)
    assert skipped == 1 and len(queries) == 3 and too_long not in queries
    assert bench_queries(2, tmp_path)[0] == bench_queries(10, tmp_path)[0][:2]  # the count takes a prefix


def test_the_default_query_count_skips_what_http_would_refuse(shared_dir: Path) -> None:
    queries, skipped = bench_queries(500, shared_dir)  # `toolrec bench`'s default --queries
    assert len(queries) == 500 and skipped >= 1
    assert max(len(q.strip()) for q in queries) <= MAX_TASK_CHARS


@pytest.mark.slow
def test_bench_json_runs_to_its_report(shared_dir: Path, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "HOME": str(tmp_path),  # the bench's index cache (~/.cache/toolrec/bench) stays in this test
        "TOOLREC_MODEL_DIR": str(default_model_dir()),
        "TOOLREC_SHARED_DIR": str(shared_dir),
    }
    toolrec = str(Path(sys.executable).parent / "toolrec")
    command = [toolrec, "bench", "--json", "--sizes", "200", "--queries", "30", "--no-build-timing"]
    result = subprocess.run(command, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout)
    assert figures["queries"] == 30 and figures["queries_skipped_over_task_limit"] == 0
    row = figures["sizes"]["200"]
    assert row["http"]["select"]["p50_ms"] > 0 and row["in_process"]["select_action"]["p50_ms"] > 0
    # The one-action tasks' own embedding, same run: what select spends beyond it is the ranking's (issue 35).
    assert 0 < row["in_process"]["embed_action"]["p50_ms"] < row["in_process"]["select_action"]["p50_ms"]
    assert row["cold_start_local"]["runs"] == 3


def test_sizes_below_1m_keep_issue_7s_steps_and_1m_drops_the_10k_only_ones() -> None:
    from build_index.bench.run import plan

    assert plan(10_000) == plan(10_000, large_from=1_000_000)
    assert (plan(10_000).cold_start_runs, plan(10_000).s3, plan(10_000).warm) == (3, True, True)
    assert (plan(100_000).s3, plan(100_000).warm) == (False, False)
    large = plan(1_000_000)
    assert (large.cold_start_runs, large.s3, large.warm) == (1, True, False) and large.notes


@pytest.mark.slow
def test_a_tiny_size_run_as_a_large_one_reports_the_1m_keys(
    shared_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The plumbing of `--sizes 1000000` (S3 cold start, one run, no warm variant, the build record, suffixed
    keys) on 200 tools: `large_from` makes 200 a large size. A run, not a timed test: no figure is compared."""
    from build_index.bench import run as bench

    monkeypatch.setattr(bench, "CACHE", tmp_path / "cache")
    monkeypatch.setenv("TOOLREC_SHARED_DIR", str(shared_dir))
    figures = bench.run([200], 30, time_build=False, large_from=200)
    row = figures["sizes"]["200"]
    assert row["cold_start_local"]["runs"] == 1 and row["cold_start_s3"]["runs"] == 1 and "warm" not in row
    assert figures["cold_start_s_200"] == row["cold_start_s3"]["process_start_to_first_answer_s"] > 0
    assert figures["rss_mb_200"] > 0 and figures["rss_s3_mb_200"] > 0 and figures["select_action_p50_ms_200"] > 0
    assert figures["build_s_200_source"] == "this run"
    index_dir, built_now = bench.cached_index(200, OnnxEmbedder(default_model_dir()), default_model_dir())
    assert built_now is None  # the second time it comes from the cache, with the time kept when it was built
    assert bench.build_figure(index_dir, None)["seconds"] == figures["build_s_200"]
