"""Combining the lexical and the semantic signal into one score per tool."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float32]
BoolArray = npt.NDArray[np.bool_]


def min_max(scores: FloatArray, allowed: BoolArray) -> FloatArray:
    """Scale the allowed scores to [0, 1]; a flat signal (e.g. no query word in the catalog) becomes 0."""
    if not allowed.any():
        return np.zeros_like(scores)
    lo, hi = float(scores[allowed].min()), float(scores[allowed].max())
    if hi - lo <= 1e-9:
        return np.zeros_like(scores)
    return ((scores - lo) / (hi - lo)).astype(np.float32)


def weighted_sum(lexical: FloatArray, semantic: FloatArray, allowed: BoolArray, semantic_weight: float) -> FloatArray:
    """Min-max normalize each signal over the allowed tools, then mix them linearly."""
    return (1.0 - semantic_weight) * min_max(lexical, allowed) + semantic_weight * min_max(semantic, allowed)
