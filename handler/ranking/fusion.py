"""Combining the lexical and the semantic signal into one score per tool: reciprocal rank fusion, refined.

Each signal votes with the ranks of its best ``DEPTH`` allowed tools, 1 / (``RANK_CONSTANT`` + rank); BM25
votes only for tools sharing a word with the query. Ranks mean the same in every catalog and for every query,
so neither signal's scale decides how much it counts: one BM25 outlier on a long, chatty query cannot outvote
the dense signal. A little of how far a tool stands out in each signal (``STANDOUT_WEIGHT`` times its mean
z-score) settles the exact ties two tools swapping ranks between the signals leave, by evidence rather than
catalog order. Chosen leave-one-set-out; measured: docs/quality.md, "How we got here".
"""

from __future__ import annotations

import numpy as np

from handler.ranking.arrays import BoolArray, FloatArray, IntArray

RANK_CONSTANT = 5
STANDOUT_WEIGHT = 0.01  # one standard deviation is worth about a quarter of the gap between ranks 1 and 2
DEPTH = 100  # each signal votes with its best 100, as RRF fuses top-N lists: deeper than any top_k (20)
# Chosen leave-one-set-out (docs/quality.md "How we got here"): every held-out set's choice.
EVIDENCE_SHARE = 1.0
EVIDENCE_WORDS = 6
MIN_LEXICAL_WEIGHT = 0.25


def rank_votes(scores: FloatArray, eligible: BoolArray, depth: int = DEPTH) -> FloatArray:
    """1 / (RANK_CONSTANT + rank) for the eligible tools ranked above ``depth``, 0 for the others.

    A tool's rank is how many eligible tools score strictly higher (tied tools share a rank), so the
    votes never depend on the catalog's order.
    """
    votes = np.zeros(len(scores), dtype=np.float32)
    count = int(eligible.sum())
    if not count:
        return votes
    masked = np.where(eligible, scores, -np.inf)
    if count > depth:
        kth = masked[np.argpartition(-masked, depth - 1)[depth - 1]]
        candidates = np.flatnonzero(masked >= kth)
    else:
        candidates = np.flatnonzero(eligible)
    values = masked[candidates]
    descending = np.sort(values)[::-1]
    ranks = np.searchsorted(-descending, -values, side="left")  # tools scoring strictly higher
    kept = ranks < depth
    votes[candidates[kept]] = 1.0 / (RANK_CONSTANT + 1 + ranks[kept])
    return votes


def z_score(scores: FloatArray, allowed: BoolArray) -> FloatArray:
    """Standardize by the allowed tools' mean and deviation; a flat signal carries no evidence and becomes 0."""
    if not allowed.any():
        return np.zeros_like(scores)
    kept = scores[allowed].astype(np.float64)
    spread = float(kept.std())
    if spread <= 1e-9:
        return np.zeros_like(scores)
    return ((scores - float(kept.mean())) / spread).astype(np.float32)


def evidence_weight(lexical: FloatArray, held: IntArray, terms: int, allowed: BoolArray) -> float:
    """How much the lexical vote counts for this task: fully where the best lexical match holds at least
    ``EVIDENCE_SHARE`` of the task's own words (of its first ``EVIDENCE_WORDS``: a long request is not one tool's
    words), less where it rests on a side word ("next" in "next Tuesday"), down to ``MIN_LEXICAL_WEIGHT``; there the
    dense signal decides."""
    eligible = allowed & (lexical > 0)
    if not eligible.any() or not terms:
        return 1.0
    best = int(np.argmax(np.where(eligible, lexical, -np.inf)))
    share = int(held[best]) / min(terms, EVIDENCE_WORDS)
    return float(np.clip(share / EVIDENCE_SHARE, MIN_LEXICAL_WEIGHT, 1.0))


def reciprocal_rank_fusion(
    lexical: FloatArray, semantic: FloatArray, allowed: BoolArray, lexical_weight: float = 1.0
) -> FloatArray:
    """The hybrid score of every tool: its lexical (times ``lexical_weight``) and semantic rank votes among the
    allowed tools, plus a little for how far it stands out in each."""
    votes = lexical_weight * rank_votes(lexical, allowed & (lexical > 0)) + rank_votes(semantic, allowed)
    standout = 0.5 * (z_score(lexical, allowed) + z_score(semantic, allowed))
    return (votes + STANDOUT_WEIGHT * np.where(allowed, standout, 0.0)).astype(np.float32)
