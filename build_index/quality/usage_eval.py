"""`toolrec eval --usage-split`: learning from use measured by simulation, in one run (docs/quality.md).

A fixed share of a set's queries (by a hash of their id) becomes the history, each query one execution group with
the first tool of each of its relevant groups; cold (no usage) and warm (that history folded in) answer the same
other queries through select's path (build_index/quality/evaluate.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from build_index.quality.evaluate import Query, benchmark_queries, evaluate, format_report, gap_closed
from build_index.usage.fold import ExecutionGroup, UsageLog
from handler.ranking.query import Embedder


def in_history(query_id: str, share: float) -> bool:
    """A fixed split of a set's queries by a hash of their id: the same queries are history in every run."""
    return int(hashlib.sha256(query_id.encode()).hexdigest()[:8], 16) / 2**32 < share


def usage_from_queries(queries: Sequence[Query]) -> UsageLog:
    """Queries as executions: each query once, with the first tool of each of its relevant groups."""
    return UsageLog([ExecutionGroup(q.text, tuple(g[0] for g in q.groups if g)) for q in queries])


def evaluate_usage_split(
    bench_dir: Path, share: float, embedder: Embedder, model_id: str, **options: Any
) -> dict[str, Any]:
    """Cold (no usage) and warm (the ``share`` of queries in history as executions) on the same other queries.
    Test queries whose every tool ran in the history are labelled ``history=all tools seen``."""
    if not 0.0 < share < 1.0:
        raise ValueError(f"the history share must be between 0 and 1, not {share}")
    queries = benchmark_queries(bench_dir, with_instruction=bool(options.get("with_instruction")))
    history = [q for q in queries if in_history(q.id, share)]
    log = usage_from_queries(history)
    seen = {tool for group in log.groups for tool in group.tools}
    test = [
        replace(q, labels={**q.labels, "history": "all tools seen" if all(seen & set(g) for g in q.groups) else "new"})
        for q in queries
        if not in_history(q.id, share)
    ]
    cold = evaluate(bench_dir, embedder, model_id, queries=test, **options)
    warm = evaluate(bench_dir, embedder, model_id, usage=log, queries=test, **options)
    return {"set": bench_dir.name, "usage_split": share, "history_queries": len(history), "cold": cold, "warm": warm}


def format_split_report(split: dict[str, Any]) -> str:
    """Cold and warm side by side for one set, then each run's own report."""
    cold, warm = split["cold"], split["warm"]
    columns = ("c@5", "c@10", "ndcg@10")
    lines = [
        f"{split['set']}: {split['history_queries']} queries as history ({split['usage_split']:.0%} by id hash), "
        f"{cold['queries']} scored cold and warm",
        f"{'':<34}{'queries':>8}" + "".join(f"{c:>11}" for c in columns) + f"{'gap closed':>12}",
    ]
    for name, run in (("cold (no usage)", cold), ("warm (usage of the history)", warm)):
        lines.append(
            f"{name:<34}{run['queries']:>8}"
            + "".join(f"{run[c]:>11.2f}" for c in columns)
            + f"{run['gap_closed_reference']:>11.1f}%"
        )
    for label in sorted(set(cold["per_subset"]) & set(warm["per_subset"])):
        if label.startswith("history="):
            c, w = cold["per_subset"][label], warm["per_subset"][label]
            lines.append(
                f"{label[:33]:<34}{c['queries']:>8}  C@10 {c['c@10']:.2f} -> {w['c@10']:.2f}: "
                f"{gap_closed(w['c@10'], c['c@10'])}% of cold's misses recovered"
            )
    return "\n".join([*lines, "", format_report(cold), "", format_report(warm)])
