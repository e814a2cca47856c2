"""Retrieval metrics over relevant *groups* (../shared/benchmarks/README.md): a group is found when any
of its interchangeable members is retrieved."""

from __future__ import annotations

import math
from collections.abc import Sequence


def _group_ranks(ranked: Sequence[str], groups: Sequence[Sequence[str]]) -> list[int | None]:
    """0-based rank of each group's first retrieved member, or None."""
    position = {tool: rank for rank, tool in reversed(list(enumerate(ranked)))}
    ranks: list[int | None] = []
    for group in groups:
        found = [position[t] for t in group if t in position]
        ranks.append(min(found) if found else None)
    return ranks


def completeness(ranked: Sequence[str], groups: Sequence[Sequence[str]], k: int) -> float:
    return float(all(r is not None and r < k for r in _group_ranks(ranked, groups)))


def recall(ranked: Sequence[str], groups: Sequence[Sequence[str]], k: int) -> float:
    ranks = _group_ranks(ranked, groups)
    return sum(r is not None and r < k for r in ranks) / len(ranks) if ranks else 0.0


def ndcg(ranked: Sequence[str], groups: Sequence[Sequence[str]], k: int) -> float:
    """Binary gain, each group credited once at the rank of its first retrieved member."""
    ranks = _group_ranks(ranked, groups)
    dcg = sum(1.0 / math.log2(r + 2) for r in ranks if r is not None and r < k)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(ranks), k)))
    return dcg / ideal if ideal else 0.0
