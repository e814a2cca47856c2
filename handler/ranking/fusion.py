"""Combining the lexical and the semantic signal into one score per tool: reciprocal rank fusion, refined.

Each signal votes with the ranks of its best ``DEPTH`` allowed tools, 1 / (``RANK_CONSTANT`` + rank); BM25
votes only for tools sharing a word with the query. Ranks mean the same in every catalog and for every query,
so neither signal's scale decides how much it counts: one BM25 outlier on a long, chatty query cannot outvote
the dense signal. A little of how far a tool stands out in each signal (``STANDOUT_WEIGHT`` times its mean
z-score) settles the exact ties two tools swapping ranks between the signals leave, by evidence rather than
catalog order. Chosen leave-one-set-out; measured: docs/quality.md, "How we got here".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from handler.ranking.arrays import BoolArray, FloatArray, IndexArray, IntArray
from handler.ranking.topk import best

RANK_CONSTANT = 5
STANDOUT_WEIGHT = 0.01  # one standard deviation is worth about a quarter of the gap between ranks 1 and 2
DEPTH = 100  # each signal votes with its best 100, as RRF fuses top-N lists: deeper than any top_k (20)
# Chosen leave-one-set-out (docs/quality.md "How we got here"): every held-out set's choice.
EVIDENCE_SHARE = 1.0
EVIDENCE_WORDS = 6
MIN_LEXICAL_WEIGHT = 0.25


@dataclass(frozen=True)
class Votes:
    """One signal's votes: ``pool`` holds the positions (ascending) of every eligible score at or above a threshold
    the best ``depth`` reach, so their ranks among the pool are their ranks among every eligible tool."""

    pool: IndexArray
    pool_scores: FloatArray
    ranks: IndexArray  # of each pool member: how many eligible tools score strictly higher
    votes: FloatArray  # of each pool member: 1 / (RANK_CONSTANT + 1 + rank) below ``depth``, else 0

    @property
    def voters(self) -> IndexArray:
        return self.pool[self.votes > 0]

    @property
    def floor(self) -> float:
        """The least score that votes (-inf when none does): every eligible tool without a vote scores below it."""
        return float(self.pool_scores[self.votes > 0].min(initial=np.inf)) if self.pool.size else -np.inf


def top_votes(scores: FloatArray, depth: int = DEPTH) -> Votes:
    """The votes of the finite scores (-inf: not eligible), found without sorting them all (topk.best).

    Only the best ``depth`` and their ties vote, and the pool keeps just those: their ranks are counted among them,
    never among the catalog (a tool scoring higher than one of them is one of them)."""
    pool = best(scores, depth)
    pool_scores = scores[pool]
    descending = np.sort(pool_scores)[::-1]
    ranks = np.searchsorted(-descending, -pool_scores, side="left")  # tools scoring strictly higher
    votes = np.where(ranks < depth, 1.0 / (RANK_CONSTANT + 1 + ranks), 0.0).astype(np.float32)
    return Votes(pool, pool_scores, ranks, votes)


def rank_votes(scores: FloatArray, eligible: BoolArray, depth: int = DEPTH) -> FloatArray:
    """1 / (RANK_CONSTANT + rank) for the eligible tools ranked above ``depth``, 0 for the others.

    A tool's rank is how many eligible tools score strictly higher (tied tools share a rank), so the
    votes never depend on the catalog's order.
    """
    votes = np.zeros(len(scores), dtype=np.float32)
    if not eligible.any():
        return votes
    found = top_votes(np.where(eligible, scores, -np.inf).astype(np.float32), depth)
    votes[found.pool] = found.votes
    return votes


def moments(nonzero: FloatArray, count: int) -> tuple[float, float] | None:
    """The mean and standard deviation of ``count`` scores of which ``nonzero`` are the ones not 0 (a lexical signal
    is 0 for most tools, which then need not be read); None for a flat or empty signal, which carries no evidence."""
    if count <= 0:
        return None
    values = nonzero.astype(np.float64)
    mean = float(values.sum()) / count
    deviations = np.square(np.subtract(values, mean, out=values), out=values)  # in place: a million scores at 1M
    return mean_and_spread(mean, (float(deviations.sum()) + (count - len(values)) * mean * mean) / count)


def mean_and_spread(mean: float, variance: float) -> tuple[float, float] | None:
    """A signal's mean and standard deviation; None for a flat signal, which carries no evidence."""
    spread = math.sqrt(max(variance, 0.0))
    return None if spread <= 1e-9 else (mean, spread)


def z_score(scores: FloatArray, allowed: BoolArray) -> FloatArray:
    """Standardize by the allowed tools' mean and deviation; a flat signal carries no evidence and becomes 0."""
    kept = scores[allowed]
    return _z_of(scores, moments(kept[kept != 0], len(kept)))


def evidence_weight(lexical: FloatArray, held: IntArray, terms: int) -> float:
    """How much the lexical vote counts for this task: fully where the best lexical match holds at least
    ``EVIDENCE_SHARE`` of the task's own words (of its first ``EVIDENCE_WORDS``: a long request is not one tool's
    words), less where it rests on a side word ("next" in "next Tuesday"), down to ``MIN_LEXICAL_WEIGHT``; there the
    dense signal decides. ``lexical`` and ``held``: the allowed tools sharing a word with the task, in catalog order."""
    if not len(lexical) or not terms:
        return 1.0
    best = int(np.argmax(lexical))
    share = int(held[best]) / min(terms, EVIDENCE_WORDS)
    return min(max(share / EVIDENCE_SHARE, MIN_LEXICAL_WEIGHT), 1.0)  # np.clip of one float costs a few µs


def reciprocal_rank_fusion(
    lexical: FloatArray,
    semantic: FloatArray,
    allowed: BoolArray,
    lexical_weight: float = 1.0,
    semantic_moments: tuple[float, float] | None = None,
) -> FloatArray:
    """The hybrid score of every tool: its lexical (times ``lexical_weight``) and semantic rank votes among the
    allowed tools, plus a little for how far it stands out in each (``semantic_moments``: as shortlist_fusion's)."""
    votes = lexical_weight * rank_votes(lexical, allowed & (lexical > 0)) + rank_votes(semantic, allowed)
    semantic_z = z_score(semantic, allowed) if semantic_moments is None else _z_of(semantic, semantic_moments)
    standout = 0.5 * (z_score(lexical, allowed) + semantic_z)
    return (votes + STANDOUT_WEIGHT * np.where(allowed, standout, 0.0)).astype(np.float32)


@dataclass(frozen=True)
class Shortlist:
    """The fused scores of some allowed tools (``ids`` ascending) that hold the k best of every allowed tool, each
    with the very float ``reciprocal_rank_fusion`` gives it; and the semantic signal's votes, which the score reads."""

    ids: IndexArray
    scores: FloatArray
    semantic: Votes


def shortlist_fusion(
    lexical: FloatArray,
    eligible: IndexArray,
    semantic: FloatArray,
    allowed: BoolArray,
    allowed_count: int,
    lexical_weight: float,
    k: int,
    also: IndexArray | None = None,
    *,
    votes: tuple[Votes, Votes | None] | None = None,
    semantic_moments: tuple[float, float] | None = None,
) -> Shortlist:
    """``reciprocal_rank_fusion``'s k best without fusing every tool of a large catalog (issue #27).

    Only a tool one signal votes for scores more than ``STANDOUT_WEIGHT`` times its mean z-score, and a tool without
    either vote scores below each signal's least voting score: that bounds every tool off the shortlist. When the
    shortlist's k-th best is above the bound, the k best are among the shortlist; otherwise (a flat or tiny catalog)
    every allowed tool is fused. ``eligible``: the allowed tools sharing a word with the task, ascending; ``also``:
    allowed tools to keep on the shortlist whatever their votes (a vote added after the fusion may lift them);
    ``votes``: the lexical and, where already found, the semantic signal's ``top_votes`` (the caller's, not redone);
    ``semantic_moments``: the semantic signal's mean and spread over the allowed tools where the caller has them
    without reading every score (coarse.CoarseSemantic.moments), else read from ``semantic``."""
    every = allowed_count == len(allowed)
    lexical_values = lexical[eligible]
    lexical_votes, semantic_votes = votes or (top_votes(lexical_values), None)
    if semantic_votes is None:
        semantic_votes = top_votes(semantic if every else np.where(allowed, semantic, -np.inf).astype(np.float32))
    if semantic_moments is None:
        kept = semantic if every else semantic[allowed]
        semantic_moments = moments(kept[kept != 0], allowed_count)
    stats = (moments(lexical_values, allowed_count), semantic_moments)
    ids = np.union1d(eligible[lexical_votes.voters], semantic_votes.voters)
    if also is not None:
        ids = np.union1d(ids, also)
    if len(ids) < allowed_count:
        unvoted_lexical = lexical_votes.floor if len(lexical_votes.voters) < len(eligible) else 0.0
        bound = (
            STANDOUT_WEIGHT
            * 0.5
            * sum(_z(x, s) for x, s in zip((unvoted_lexical, semantic_votes.floor), stats, strict=True))
        )
        voted = lexical_weight * _votes_of(ids, eligible[lexical_votes.pool], lexical_votes.votes)
        voted = voted + _votes_of(ids, semantic_votes.pool, semantic_votes.votes)
        standout = 0.5 * (_z_of(lexical[ids], stats[0]) + _z_of(semantic[ids], stats[1]))
        scores = (voted + STANDOUT_WEIGHT * standout).astype(np.float32)
        place = min(k, len(scores))
        if place > 0 and float(np.partition(scores, len(scores) - place)[len(scores) - place]) > bound + 1e-6:
            return Shortlist(ids, scores, semantic_votes)
    ids = np.flatnonzero(allowed)
    fused = reciprocal_rank_fusion(lexical, semantic, allowed, lexical_weight, semantic_moments)
    return Shortlist(ids, fused[ids], semantic_votes)


def _votes_of(ids: IndexArray, pool: IndexArray, votes: FloatArray) -> FloatArray:
    """The votes of ``ids`` (ascending) from a signal's pool (ascending) and its votes; 0 off the pool."""
    at = np.minimum(np.searchsorted(pool, ids), max(len(pool) - 1, 0))
    found = (pool[at] == ids) if len(pool) else np.zeros(len(ids), dtype=bool)
    return np.where(found, votes[at] if len(pool) else 0.0, 0.0).astype(np.float32)


def _z_of(scores: FloatArray, stats: tuple[float, float] | None) -> FloatArray:
    if stats is None:
        return np.zeros(len(scores), dtype=np.float32)
    mean, spread = stats
    return ((scores - mean) / spread).astype(np.float32)


def _z(score: float, stats: tuple[float, float] | None) -> float:
    return 0.0 if stats is None or not math.isfinite(score) else (score - stats[0]) / stats[1]
