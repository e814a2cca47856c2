"""`toolrec bench`'s figures as flat keys (`--json`) and as the table docs/performance.md shows."""

from __future__ import annotations

from typing import Any

Figures = dict[str, Any]


def headline(figures: Figures) -> Figures:
    """The flat keys issue #7 names, taken from the per-size rows."""
    sizes = figures["sizes"]
    out: Figures = {}
    for size, suffix in (("1000", "1k"), ("10000", "10k"), ("100000", "100k")):
        row = sizes.get(size)
        if row is None:
            continue
        out[f"select_p50_ms_{suffix}"] = row["in_process"]["select"]["p50_ms"]
        out[f"select_action_p50_ms_{suffix}"] = row["in_process"]["select_action"]["p50_ms"]
        out[f"select_action_http_p50_ms_{suffix}"] = row["http"]["select_action"]["p50_ms"]
        out[f"bm25_p50_ms_{suffix}"] = row["in_process"]["bm25"]["p50_ms"]
        out[f"select_http_p50_ms_{suffix}"] = row["http"]["select"]["p50_ms"]
        out[f"bm25_http_p50_ms_{suffix}"] = row["http"]["bm25"]["p50_ms"]
        out[f"rss_mb_{suffix}"] = row["cold_start_local"]["peak_rss_mb"]
        out[f"index_mb_{suffix}"] = row["index_mb"]
    if "10000" in sizes:
        out["search_p50_ms_10k"] = sizes["10000"]["in_process"]["bm25"]["p50_ms"]
        if "warm" in sizes["10000"]:
            out["select_action_p50_ms_10k_warm"] = sizes["10000"]["warm"]["select_action"]["warm"]["p50_ms"]
        out["cold_start_s_10k"] = sizes["10000"]["cold_start_local"]["process_start_to_first_answer_s"]
        if "cold_start_s3" in sizes["10000"]:
            out["cold_start_s3_s_10k"] = sizes["10000"]["cold_start_s3"]["process_start_to_first_answer_s"]
    return out


def format_report(figures: Figures) -> str:
    lines = [
        f"machine: {figures['machine']}; {figures['queries']} queries"
        f" ({figures['queries_skipped_over_task_limit']} skipped: longer than a task may be); 1 intra-op thread",
        "select: whole benchmark queries as one task; one action: the same queries split into their requests",
        "| tools | select p50 / p99 (ms) | one action p50 / p99 | BM25-only p50 | HTTP select p50 / p99 "
        "| HTTP one action p50 | HTTP search p50 | cold start (s) | peak RSS (MB) | index (MB) |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for size, row in figures["sizes"].items():
        sel, act, bm = row["in_process"]["select"], row["in_process"]["select_action"], row["in_process"]["bm25"]
        http, cold = row["http"], row["cold_start_local"]
        lines.append(
            f"| {int(size):,} | {sel['p50_ms']} / {sel['p99_ms']} | {act['p50_ms']} / {act['p99_ms']} "
            f"| {bm['p50_ms']} | {http['select']['p50_ms']} / {http['select']['p99_ms']} "
            f"| {http['select_action']['p50_ms']} | {http['bm25']['p50_ms']} "
            f"| {cold['process_start_to_first_answer_s']} ± {cold['spread_s']} | {cold['peak_rss_mb']} "
            f"| {row['index_mb']} |"
        )
    for size, row in figures["sizes"].items():
        for source in ("cold_start_local", "cold_start_s3"):
            if source in row:
                c = row[source]
                lines.append(
                    f"{source} @ {int(size):,}: import {c['import_s']} s, model {c['model_load_s']} s, "
                    f"index {c['index_load_s']} s, app {c['app_s']} s, first query {c['first_query_s']} s, "
                    f"total {c['process_start_to_first_answer_s']} s"
                )
    for size, row in figures["sizes"].items():
        if "warm" in row:
            warm = row["warm"]
            lines.append(
                f"warm @ {int(size):,} ({warm['executions']:,} executions, {warm['distinct_tasks']:,} distinct tasks, "
                f"{warm['tools_with_usage']:,} tools with usage): one-action select p50 "
                f"{warm['select_action']['cold']['p50_ms']} cold, {warm['select_action']['warm']['p50_ms']} warm, "
                f"taken in turns: +{warm['select_action_added_ms_p50']} ms; usage files {warm['usage_mb']} MB, "
                f"folded and published in {warm['fold_and_publish_s']} s"
            )
    if "build_s_10k" in figures:
        lines.append(f"build of 10,000 tools: {figures['build_s_10k']} s")
    return "\n".join(lines)
