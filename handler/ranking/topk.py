"""Top-k selection without sorting the catalog: a threshold read from an even sample of the scores keeps a few
candidates in one comparison of every score, then only those are sorted; ties go to the lower index."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from handler.ranking.arrays import IndexArray

SAMPLE = 16_384  # scores a threshold is read from; below 4x this many, every finite score is a candidate
BEST_SAMPLE = 1_024  # best's sample: a threshold near a signal's 100th best from a tenth of 10k scores


def at_least(scores: npt.NDArray[np.floating], count: int, sample: int | None = None) -> IndexArray:
    """The positions, ascending, of every finite score at or above a threshold at least ``count`` finite scores
    reach (of every finite score when there are fewer, or when the sample cannot tell): so the ``count`` best, and
    every tie of the last of them, are among them. The threshold is read from an even sample of about ``sample``
    (else ``SAMPLE``) scores, aiming at about twice ``count`` candidates; the scores are compared once, never sorted."""
    stride = len(scores) // (sample or SAMPLE)
    if stride >= 4 and 0 < count * 8 < len(scores):
        even = scores[::stride]
        place = min(len(even), 2 * count // stride + 1)
        threshold = np.partition(even, len(even) - place)[len(even) - place]
        if np.isfinite(threshold):
            found = np.flatnonzero(scores >= threshold)
            if len(found) >= count:
                return found
    return np.flatnonzero(np.isfinite(scores))


def best(scores: npt.NDArray[np.floating], count: int) -> IndexArray:
    """The positions, ascending, of the ``count`` best finite scores and every tie of the last of them (of every
    finite score when there are fewer). From 4 * ``BEST_SAMPLE`` scores up, a threshold read from a sample of
    ``BEST_SAMPLE`` keeps a few hundred candidates (at_least), and only those are partitioned: at 10k tools that is a
    fifth of partitioning every score (issue #35)."""
    candidates = at_least(scores, count, BEST_SAMPLE)
    if len(candidates) <= count:
        return candidates
    values = scores[candidates]
    place = len(values) - count
    kept: IndexArray = candidates[values >= np.partition(values, place)[place]]
    return kept


def top_k(scores: npt.NDArray[np.floating], k: int) -> IndexArray:
    """Indices of the k best finite scores, best first, ties broken by index (as a stable full sort would)."""
    if k <= 0:
        return np.empty(0, dtype=np.intp)
    candidates = at_least(scores, k)
    order = np.lexsort((candidates, -scores[candidates]))  # candidates ascend: ties go to the lower index
    return candidates[order[:k]]
