"""`toolrec bench`'s figures as flat keys (`--json`) and as the table docs/performance.md shows."""

from __future__ import annotations

from typing import Any

Figures = dict[str, Any]


def suffix(size: int) -> str:
    """A size as the flat keys spell it: 1000 -> 1k, 100000 -> 100k, 1000000 -> 1m; any other size its digits."""
    for unit, letter in ((1_000_000, "m"), (1_000, "k")):
        if size >= unit and size % unit == 0:
            return f"{size // unit}{letter}"
    return str(size)


def headline(figures: Figures) -> Figures:
    """The flat keys issues #7 and #27 name, for every size measured (``select_action_p50_ms_1m``).

    ``cold_start_s_10k`` is the start from a local directory, as issue #7 defined it; at every other size
    ``cold_start_s_<size>`` is the start from S3 where the bench measured one (the deployment path: at 1M the
    download is most of it). Both sources also have their own keys, ``cold_start_local_s_*`` and
    ``cold_start_s3_s_*``. ``rss_mb_*`` is the local start's peak RSS at every size; ``rss_s3_mb_*`` the S3 one's.
    ``build_s_*`` is the size's build, timed by this run or recorded when the cached index was built, and
    ``build_s_*_source`` says which; a fresh 10k build (``build_s_10k`` without ``--no-build-timing``) wins.
    """
    out: Figures = {}
    for size, row in figures["sizes"].items():
        key = suffix(int(size))
        process, http, local = row["in_process"], row["http"], row["cold_start_local"]
        out[f"select_p50_ms_{key}"] = process["select"]["p50_ms"]
        out[f"select_action_p50_ms_{key}"] = process["select_action"]["p50_ms"]
        out[f"embed_action_p50_ms_{key}"] = process["embed_action"]["p50_ms"]
        out[f"select_action_http_p50_ms_{key}"] = http["select_action"]["p50_ms"]
        out[f"bm25_p50_ms_{key}"] = process["bm25"]["p50_ms"]
        out[f"search_p50_ms_{key}"] = process["bm25"]["p50_ms"]
        out[f"select_http_p50_ms_{key}"] = http["select"]["p50_ms"]
        out[f"bm25_http_p50_ms_{key}"] = http["bm25"]["p50_ms"]
        out[f"rss_mb_{key}"] = local["peak_rss_mb"]
        out[f"index_mb_{key}"] = row["index_mb"]
        out[f"cold_start_local_s_{key}"] = local["process_start_to_first_answer_s"]
        if "cold_start_s3" in row:
            out[f"cold_start_s3_s_{key}"] = row["cold_start_s3"]["process_start_to_first_answer_s"]
            out[f"rss_s3_mb_{key}"] = row["cold_start_s3"]["peak_rss_mb"]
        if key == "10k":
            out["cold_start_s_10k"] = local["process_start_to_first_answer_s"]
        elif "cold_start_s3" in row:
            out[f"cold_start_s_{key}"] = row["cold_start_s3"]["process_start_to_first_answer_s"]
        if "warm" in row:
            out[f"select_action_p50_ms_{key}_warm"] = row["warm"]["select_action"]["warm"]["p50_ms"]
        if row.get("build", {}).get("seconds") is not None:
            out[f"build_s_{key}"] = row["build"]["seconds"]
            out[f"build_s_{key}_source"] = row["build"]["source"]
    if "build_s_10k" in figures:
        out["build_s_10k"] = figures["build_s_10k"]
        out["build_s_10k_source"] = "this run: a fresh build of 10,000 tools"
    return out


def format_report(figures: Figures) -> str:
    lines = [
        f"machine: {figures['machine']}; {figures['queries']} queries"
        f" ({figures['queries_skipped_over_task_limit']} skipped: longer than a task may be); 1 intra-op thread",
        "select: whole benchmark queries as one task; one action: the same queries split into their requests",
        "| tools | select p50 / p99 (ms) | one action p50 / p99 | BM25-only p50 | HTTP select p50 / p99 "
        "| HTTP one action p50 | HTTP search p50 | cold start, local (s) | peak RSS, local (MB) | index (MB) |",
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
    for size, row in figures["sizes"].items():  # issue 35: the ranking after the embedding, same run, same tasks
        act, embed = row["in_process"]["select_action"]["p50_ms"], row["in_process"]["embed_action"]["p50_ms"]
        lines.append(
            f"one action @ {int(size):,}: select p50 {act} ms, of which its task's embedding p50 {embed} ms; "
            f"everything else (ranking, policy, query log) {round(act - embed, 3)} ms"
        )
    for size, row in figures["sizes"].items():
        for source in ("cold_start_local", "cold_start_s3"):
            if source in row:
                c = row[source]
                lines.append(
                    f"{source} @ {int(size):,}: import {c['import_s']} s, model {c['model_load_s']} s, "
                    f"index {c['index_load_s']} s, app {c['app_s']} s, first query {c['first_query_s']} s, "
                    f"total {c['process_start_to_first_answer_s']} s, peak RSS {c['peak_rss_mb']} MB, "
                    f"median of {c['runs']} {'run' if c['runs'] == 1 else 'runs'}"
                )
    for size, row in figures["sizes"].items():
        if "cold_start_s3" in row:  # moto_server's throughput on this machine, not S3's: docs/scale.md
            extra = row["cold_start_s3"]["index_load_s"] - row["cold_start_local"]["index_load_s"]
            rate = f"{row['index_mb'] / extra:.0f} MB/s" if extra > 0.01 else "no slower than a local read"
            lines.append(
                f"S3 @ {int(size):,}: the index loads {extra:.2f} s slower than from a local directory: "
                f"{rate} for its {row['index_mb']} MB from moto_server"
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
    for size, row in figures["sizes"].items():
        lines.extend(f"@ {int(size):,}: {note}" for note in row.get("notes", ()))
        build = row.get("build", {})
        seconds = "unknown" if build.get("seconds") is None else f"{build['seconds']} s"
        lines.append(f"build of {int(size):,} tools: {seconds} ({build.get('source', 'not recorded')})")
    if "build_s_10k" in figures:
        lines.append(f"fresh build of 10,000 tools: {figures['build_s_10k']} s")
    return "\n".join(lines)
