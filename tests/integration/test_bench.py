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
    assert row["cold_start_local"]["runs"] == 3
