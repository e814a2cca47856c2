"""`toolrec eval --usage-split`: learning from use measured by simulation, in one run (docs/quality.md).

A fixed share of a set's queries (by a hash of their id) becomes the history, each query one execution group with
the first tool of each of its relevant groups; cold (no usage) and warm (that history folded in) answer the same
other queries through select's path (build_index/quality/evaluate.py).

With ``traffic="real"`` (issue 25 item 3) the history is a query log instead, folded as a deployment's is
(``groups_from_queries``, with its per-user and per-key bounds): each history request is asked by one to four
users under their own keys, select suggests what the cold index ranks for it, and an agent runs the first tool of
each relevant group when the suggestions hold it (often not the first suggestion), fails now and then, runs
nothing at all for some requests, and runs tools it found elsewhere (not suggested: ignored by the fold).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from build_index.quality.evaluate import (
    EVAL_CACHE,
    Query,
    answer,
    benchmark_queries,
    benchmark_tools,
    cached_index,
    evaluate,
    format_report,
    gap_closed,
)
from build_index.usage.fold import ExecutionGroup, UsageLog, groups_from_queries
from handler.policy.model import ExecutionRecord, QueryRecord
from handler.ranking.query import Embedder
from handler.ranking.retriever import Method

TRAFFIC = ("simple", "real")
KEYS = 6  # the simulated tenant's API keys; a user asks under one of them
NEVER_RUN = 0.2  # share of requests after which no suggested tool runs
FAILED = 0.1  # share of runs that fail


def in_history(query_id: str, share: float) -> bool:
    """A fixed split of a set's queries by a hash of their id: the same queries are history in every run."""
    return int(hashlib.sha256(query_id.encode()).hexdigest()[:8], 16) / 2**32 < share


def usage_from_queries(queries: Sequence[Query]) -> UsageLog:
    """Queries as executions: each query once, with the first tool of each of its relevant groups."""
    return UsageLog([ExecutionGroup(q.text, tuple(g[0] for g in q.groups if g)) for q in queries])


def _draw(*parts: object) -> float:
    """A fixed number in [0, 1) per ``parts``: the same traffic in every run."""
    return int(hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:8], 16) / 2**32


def traffic_records(queries: Sequence[Query], suggest: Callable[[str], list[str]], now: datetime) -> list[QueryRecord]:
    """The query log of ``queries`` asked as real traffic (the module's docstring): tool labels are the set's ids."""
    records = []
    expires = int((now + timedelta(days=30)).timestamp())
    for query in queries:
        suggested = suggest(query.text)
        for repeat in range(1 + int(4 * _draw(query.id, "users"))):
            user, key = f"user-{int(1000 * _draw(query.id, repeat))}", f"key-{int(KEYS * _draw(query.id, repeat, 'k'))}"
            at = now - timedelta(hours=int(500 * _draw(query.id, repeat, "at")))
            runs: list[ExecutionRecord] = []
            if _draw(query.id, repeat, "ran") >= NEVER_RUN:
                for tool in (group[0] for group in query.groups if group):
                    failed = _draw(query.id, repeat, tool) < FAILED
                    outcome = "error" if failed else "ok"
                    runs.append(ExecutionRecord(tool_name=tool, user_id=user, key_id=key, at=at, outcome=outcome))
            records.append(
                QueryRecord(
                    query_id=f"{query.id}-{repeat}",
                    user_id=user,
                    key_id=key,
                    tasks=(query.text,),
                    recommended=(tuple(suggested),),
                    created_at=at,
                    expires_at=expires,
                    executions=tuple(runs),
                )
            )
    return records


def real_traffic(
    bench_dir: Path, history: Sequence[Query], embedder: Embedder, model_id: str, options: dict[str, Any]
) -> UsageLog:
    """The history as a folded query log: select's suggestions come from the cold index (top 10)."""
    ids, _ = benchmark_tools(bench_dir)
    index = cached_index(bench_dir, embedder, model_id, options.get("cache", EVAL_CACHE))
    method = options.get("method", Method.HYBRID)

    def suggest(text: str) -> list[str]:
        return [ids[hit.index] for hit in answer(index, embedder, text, method).hits]

    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)  # the same clock hours in every run
    return groups_from_queries(traffic_records(history, suggest, now), now.timestamp())


def evaluate_usage_split(
    bench_dir: Path, share: float, embedder: Embedder, model_id: str, traffic: str = "simple", **options: Any
) -> dict[str, Any]:
    """Cold (no usage) and warm (the ``share`` of queries in history as executions, or with ``traffic="real"`` as
    a query log) on the same other queries. Test queries whose every tool ran in the history are labelled
    ``history=all tools seen``."""
    if not 0.0 < share < 1.0:
        raise ValueError(f"the history share must be between 0 and 1, not {share}")
    if traffic not in TRAFFIC:
        raise ValueError(f"traffic is one of {', '.join(TRAFFIC)}, not {traffic!r}")
    queries = benchmark_queries(bench_dir, with_instruction=bool(options.get("with_instruction")))
    history = [q for q in queries if in_history(q.id, share)]
    log = (
        usage_from_queries(history)
        if traffic == "simple"
        else real_traffic(bench_dir, history, embedder, model_id, options)
    )
    seen = {tool for group in log.groups for tool in group.tools}
    test = [
        replace(q, labels={**q.labels, "history": "all tools seen" if all(seen & set(g) for g in q.groups) else "new"})
        for q in queries
        if not in_history(q.id, share)
    ]
    cold = evaluate(bench_dir, embedder, model_id, queries=test, **options)
    warm = evaluate(bench_dir, embedder, model_id, usage=log, queries=test, **options)
    return {
        "set": bench_dir.name,
        "usage_split": share,
        "traffic": traffic,
        "history_queries": len(history),
        "cold": cold,
        "warm": warm,
    }


def format_split_report(split: dict[str, Any]) -> str:
    """Cold and warm side by side for one set, then each run's own report."""
    cold, warm = split["cold"], split["warm"]
    columns = ("c@5", "c@10", "ndcg@10")
    traffic = " asked as real traffic" if split.get("traffic") == "real" else ""
    lines = [
        f"{split['set']}: {split['history_queries']} queries as history{traffic} "
        f"({split['usage_split']:.0%} by id hash), "
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
