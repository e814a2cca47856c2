"""``toolrec stats``: was the recommended tool the one used? Computed from the query log: a deployment's
DynamoDB table, or the local file ``toolrec serve`` appends to (``policy.queries.jsonl`` beside the policy file).

Each select request logs what it recommended per task; each execution that carries the ``query_id`` is appended to
that record. An execution is a *hit* when the tool run is one of the tools recommended by that query, and its rank
is its position in the task's suggestions (best rank when several tasks suggested it).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field

from handler.policy.model import QueryRecord


@dataclass
class RecommendationStats:
    queries: int = 0
    queries_followed: int = 0  # queries with at least one linked execution
    executions: int = 0  # executions linked to a query
    hits: int = 0  # ... whose tool was among that query's recommendations
    hits_at_1: int = 0  # ... whose tool was a task's first suggestion
    rank_counts: dict[int, int] = field(default_factory=dict)
    outcomes: dict[str, int] = field(default_factory=dict)

    @property
    def hit_rate(self) -> float | None:
        return self.hits / self.executions if self.executions else None

    @property
    def hit_rate_at_1(self) -> float | None:
        return self.hits_at_1 / self.executions if self.executions else None

    @property
    def follow_rate(self) -> float | None:
        return self.queries_followed / self.queries if self.queries else None

    def as_json(self) -> dict[str, object]:
        fields = asdict(self)
        fields["rank_counts"] = {str(rank): n for rank, n in sorted(self.rank_counts.items())}
        return {
            **fields,
            "hit_rate": self.hit_rate,
            "hit_rate_at_1": self.hit_rate_at_1,
            "follow_rate": self.follow_rate,
        }


def best_rank(record: QueryRecord, tool_name: str) -> int | None:
    """1-based rank of ``tool_name`` among the record's suggestions (best over its tasks), or None."""
    wanted = tool_name.casefold()
    ranks = [i + 1 for task in record.recommended for i, name in enumerate(task) if name.casefold() == wanted]
    return min(ranks) if ranks else None


def recommendation_stats(records: Iterable[QueryRecord]) -> RecommendationStats:
    stats = RecommendationStats()
    ranks: Counter[int] = Counter()
    outcomes: Counter[str] = Counter()
    for record in records:
        stats.queries += 1
        stats.queries_followed += bool(record.executions)
        for execution in record.executions:
            stats.executions += 1
            outcomes[execution.outcome] += 1
            rank = best_rank(record, execution.tool_name)
            if rank is not None:
                stats.hits += 1
                stats.hits_at_1 += rank == 1
                ranks[rank] += 1
    stats.rank_counts = dict(ranks)
    stats.outcomes = dict(outcomes)
    return stats


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def stats_report(stats: RecommendationStats) -> str:
    lines = [
        f"queries logged            {stats.queries}",
        f"  followed by an execution {stats.queries_followed} ({_percent(stats.follow_rate)})",
        f"linked executions         {stats.executions}",
        f"  recommended tool used    {stats.hits} ({_percent(stats.hit_rate)})",
        f"  first suggestion used    {stats.hits_at_1} ({_percent(stats.hit_rate_at_1)})",
    ]
    if stats.rank_counts:
        ranks = ", ".join(f"#{rank}: {n}" for rank, n in sorted(stats.rank_counts.items()))
        lines.append(f"  rank of the tool used    {ranks}")
    if stats.outcomes:
        outcomes = ", ".join(f"{name}: {n}" for name, n in sorted(stats.outcomes.items()))
        lines.append(f"  outcomes                 {outcomes}")
    return "\n".join(lines)
