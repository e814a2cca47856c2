"""Load, bounded: ``toolrec loadtest`` (the documented command; its full size is 10,000 requests at 32 concurrent)
run small against a real ``toolrec serve`` subprocess on loopback: no errors, flat memory, and the query log holds
exactly one record per request. Plus the query log's own guarantee: records beyond the in-memory cap are kept."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

import handler.policy.file_store as file_store
from build_index.cli import main as toolrec
from build_index.loadtest import run_loadtest
from handler.policy.file_store import FilePolicyStore, query_log_file
from handler.policy.model import QueryRecord


@pytest.mark.slow
def test_small_load_run_has_no_errors_flat_memory_and_a_complete_query_log(tmp_path: Path) -> None:
    report = run_loadtest(requests=500, concurrency=16, root=tmp_path / "root")
    print("\n" + "\n".join(report.lines()))
    assert report.errors == 0 and report.statuses == {"200": 500}
    assert report.query_log["records"] == report.query_log["expected"] == 500 + 32  # with the warm-up
    assert report.query_log["missing"] == report.query_log["unexpected"] == report.query_log["duplicated"] == 0
    assert report.rss_growth_mb <= report.rss_bound_mb
    assert report.latency_ms["p50"] <= report.latency_ms["p99"]
    assert report.passed


def test_the_cli_refuses_a_run_too_small_to_measure(capsys: pytest.CaptureFixture[str]) -> None:
    assert toolrec(["loadtest", "--requests", "1", "--concurrency", "1", "--json"]) == 2
    assert "--requests >= 2" in capsys.readouterr().err


def test_the_local_query_log_keeps_records_beyond_the_memory_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(file_store, "MAX_LOGGED_QUERIES", 10)
    store = FilePolicyStore(tmp_path / "policy.json")
    now = datetime.now(UTC)
    for number in range(25):
        store.put_query(
            QueryRecord(
                query_id=f"q{number}",
                user_id="u",
                tasks=("t",),
                recommended=(("A.B",),),
                created_at=now,
                expires_at=int(now.timestamp()) + 60,
            )
        )
    lines = [json.loads(line) for line in query_log_file(tmp_path / "policy.json").read_text().splitlines()]
    assert [entry["record"]["query_id"] for entry in lines] == [f"q{n}" for n in range(25)]  # none lost
    assert len(store.queries(now.timestamp())) == 10  # memory stays bounded
