"""`toolrec bench`'s flat keys (issues #7 and #27) from per-size rows, without running a benchmark."""

from __future__ import annotations

from typing import Any

from build_index.bench.report import format_report, headline, suffix


def timing(p50: float) -> dict[str, float]:
    return {"p50_ms": p50, "p99_ms": 2 * p50, "spread_ms": 1.0}


def start(total: float, rss: float, runs: int) -> dict[str, Any]:
    phases = {"import_s": 1.0, "model_load_s": 0.3, "index_load_s": 0.5, "app_s": 0.0, "first_query_s": 0.1}
    return {**phases, "process_start_to_first_answer_s": total, "peak_rss_mb": rss, "runs": runs, "spread_s": 0.0}


def row(select: float, local: float, s3: float | None, runs: int, build: dict[str, Any]) -> dict[str, Any]:
    mixes = {"select": timing(select), "select_action": timing(select / 3), "bm25": timing(select / 10)}
    process = {**mixes, "embed_action": timing(select / 4)}
    out: dict[str, Any] = {"index_mb": 10.0, "build": build, "in_process": process, "http": mixes}
    out["cold_start_local"] = start(local, 170.0, runs)
    if s3 is not None:
        out["cold_start_s3"] = start(s3, 180.0, runs)
    return out


def figures() -> dict[str, Any]:
    recorded = {"seconds": 2400.0, "source": "recorded 2026-12-02T05:00:00Z when it was cached: by hand"}
    sizes = {
        "200": row(6.0, 1.2, None, 3, {"seconds": 1.5, "source": "this run"}),
        "10000": row(9.0, 1.6, 2.0, 3, {"seconds": None, "source": "cached by a run that kept no build time"}),
        "1000000": {**row(30.0, 9.0, 12.0, 1, recorded), "notes": ["1 cold start per source at this size"]},
    }
    base = {"machine": "test", "queries": 30, "queries_skipped_over_task_limit": 0, "sizes": sizes}
    return {**base, "build_s_10k": 45.0}


def test_sizes_are_spelled_as_the_issues_spell_them() -> None:
    assert [suffix(n) for n in (1_000, 10_000, 100_000, 1_000_000, 200, 1_500)] == [
        "1k",
        "10k",
        "100k",
        "1m",
        "200",
        "1500",
    ]


def test_every_size_gets_the_10k_keys_with_its_own_suffix() -> None:
    keys = headline(figures())
    for key in ("1m", "10k", "200"):
        assert keys[f"select_action_p50_ms_{key}"] > 0 and keys[f"rss_mb_{key}"] == 170.0
    assert keys["select_action_p50_ms_1m"] == 10.0 and keys["search_p50_ms_1m"] == 3.0


def test_cold_start_at_10k_stays_local_and_at_1m_is_from_s3() -> None:
    keys = headline(figures())
    assert keys["cold_start_s_10k"] == 1.6 and keys["cold_start_s3_s_10k"] == 2.0
    assert keys["cold_start_s_1m"] == 12.0 and keys["cold_start_local_s_1m"] == 9.0 and keys["rss_s3_mb_1m"] == 180.0
    assert "cold_start_s_200" not in keys  # no S3 start at that size: no key rather than a local figure under it


def test_a_build_time_says_where_it_came_from() -> None:
    keys = headline(figures())
    assert keys["build_s_1m"] == 2400.0 and keys["build_s_1m_source"].startswith("recorded")
    assert keys["build_s_200"] == 1.5 and keys["build_s_200_source"] == "this run"
    assert keys["build_s_10k"] == 45.0 and "fresh build" in keys["build_s_10k_source"]  # the timed one wins


def test_the_report_says_when_a_size_ran_fewer_cold_starts() -> None:
    report = format_report(figures())
    assert "| 1,000,000 |" in report and "@ 1,000,000: 1 cold start per source at this size" in report
    assert "cold_start_s3 @ 1,000,000:" in report and "median of 1 run" in report
    assert "build of 10,000 tools: unknown (cached by a run that kept no build time)" in report


def test_one_action_select_is_set_against_its_tasks_own_embedding() -> None:
    assert headline(figures())["embed_action_p50_ms_10k"] == 2.25
    report = format_report(figures())
    assert "one action @ 10,000: select p50 3.0 ms, of which its task's embedding p50 2.25 ms" in report
    assert "everything else (ranking, policy, query log) 0.75 ms" in report
