"""Top-k selection: argpartition, then sort only the k survivors; ties go to the lower index."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from handler.ranking.arrays import IndexArray


def top_k(scores: npt.NDArray[np.floating], k: int) -> IndexArray:
    """Indices of the k best finite scores, best first, ties broken by index (as a stable full sort would)."""
    finite = np.isfinite(scores)
    k = min(k, int(finite.sum()))
    if k <= 0:
        return np.empty(0, dtype=np.intp)
    masked = np.where(finite, scores, -np.inf)
    candidates = np.argpartition(-masked, k - 1)[:k]
    kth = masked[candidates].min()
    above = np.flatnonzero(masked > kth)
    ties = np.flatnonzero(masked == kth)[: k - len(above)]
    chosen = np.concatenate([above, ties])
    order = np.lexsort((chosen, -masked[chosen]))
    return chosen[order]
