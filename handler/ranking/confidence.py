"""How sure the ranking is: each suggestion's calibrated probability of being a right tool for the task.

A logistic model over what the ranking already knows of a suggestion (PRODUCT.md §2 ``score``): its cosine and how
far it lies below the best one, how many of the task's words it holds, its place in each signal and in the fused
list, how crowded the catalog is around the best cosine, and the task's shape (its words, its parts). Fit on sets
the service was never tuned on, one set left out at a time (``toolrec calibrate-score``; docs/quality.md
reports each set's calibration), so that 0.8 means right about 8 times in 10 on a catalog never seen. Down the
list the score never rises (``probabilities`` keeps the running minimum): an agent reads the list in order.

The no match is decided beside it, on the best cosine of any allowed tool (no_match.py): measured leave-one-set-out,
the first suggestion's probability separates requests no tool serves from real ones less well than that cosine
does (docs/quality.md "No match"), since a right tool lower in the list keeps a real request worth answering.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from handler.ranking.arrays import BoolArray, FloatArray

FEATURES = (
    "cosine",
    "below_best_cosine",
    "words_held",
    "lexical_place",
    "semantic_place",
    "place",
    "fused_share",
    "crowding",
    "query_words",
    "query_parts",
    "allowed_tools",
    "place_x_parts",
    "place_x_words",
)
# `toolrec calibrate-score --max-queries 2000` over the ten visible sets and the held-out agent tasks, with the
# shipped model and ranking (docs/quality.md "Score"): refit with every model or ranking change.
WEIGHTS = np.array(
    [
        5.660245,  # cosine
        -2.299009,  # below_best_cosine
        -0.135803,  # words_held
        1.259068,  # lexical_place
        0.411332,  # semantic_place
        0.840444,  # place
        1.823447,  # fused_share
        -0.617521,  # crowding
        0.636501,  # query_words
        -0.394556,  # query_parts
        -0.299374,  # allowed_tools
        0.475957,  # place_x_parts
        -0.269563,  # place_x_words
    ],
    dtype=np.float64,
)
BIAS = -5.267181
NO_MATCH_COSINE = 0.2510  # the best allowed cosine below which a task gets no tool (no_match.py)
CROWD_COSINE = 0.05  # tools this close below the best cosine compete with it


@dataclass(frozen=True)
class Signals:
    """One task's ranking evidence over every tool (disallowed tools included: ``allowed`` masks them)."""

    lexical: FloatArray  # BM25
    semantic: FloatArray  # cosines (a tool's best with the task or any of its parts)
    fused: FloatArray
    words_held: FloatArray  # share of the task's own terms each tool holds, in [0, 1]
    query_words: int
    query_parts: int
    allowed: BoolArray


Rows = npt.NDArray[np.float64]


def _places(scores: FloatArray, eligible: BoolArray, chosen: Sequence[int]) -> Rows:
    """How many eligible tools score strictly above each chosen one."""
    pool = scores[eligible]
    return np.array([(pool > scores[i]).sum() for i in chosen], dtype=np.float64)


def features(signals: Signals, chosen: Sequence[int]) -> Rows:
    """One row per chosen tool (best first), in FEATURES order."""
    allowed = signals.allowed
    cosine = signals.semantic[chosen].astype(np.float64)
    best = float(signals.semantic[allowed].max())
    lexical_place = _places(signals.lexical, allowed & (signals.lexical > 0), chosen)
    matched = signals.lexical[chosen] > 0
    place = np.arange(len(chosen), dtype=np.float64)
    top = float(signals.fused[chosen[0]])
    words = np.log1p(signals.query_words)
    parts = np.log1p(signals.query_parts)
    columns = (
        cosine,
        best - cosine,
        signals.words_held[chosen].astype(np.float64),
        np.where(matched, 1.0 / (1.0 + lexical_place), 0.0),
        1.0 / (1.0 + _places(signals.semantic, allowed, chosen)),
        1.0 / (1.0 + place),
        signals.fused[chosen] / top if top > 0 else np.ones(len(chosen)),
        np.full(len(chosen), np.log1p(int((signals.semantic[allowed] >= best - CROWD_COSINE).sum()))),
        np.full(len(chosen), words),
        np.full(len(chosen), parts),
        np.full(len(chosen), np.log(int(allowed.sum()))),
        parts / (1.0 + place),
        words / (1.0 + place),
    )
    return np.stack(columns, axis=1)


@dataclass(frozen=True)
class Calibration:
    """A fitted model: its weights over FEATURES, and the best cosine below which a task gets no tool."""

    weights: npt.NDArray[np.float64]
    bias: float
    no_match: float | None  # the cosine threshold (no_match.py); None: never refuse

    def probabilities(self, rows: Rows) -> Rows:
        """The calibrated probability of each row of one list (best first), never rising down the list."""
        return np.minimum.accumulate(self.each(rows)) if len(rows) else np.empty(0, dtype=np.float64)

    def each(self, rows: Rows) -> Rows:
        """Each row's probability on its own (the first of a list is its probability as shown)."""
        # A row-wise sum, not ``rows @ weights``: BLAS rounds a matrix product differently with the number of rows,
        # and a suggestion's score must not depend on how many are shown.
        logits = (rows * self.weights).sum(axis=1) + self.bias
        return np.asarray(1.0 / (1.0 + np.exp(-logits)), dtype=np.float64)

    def refuses(self, best_cosine: float) -> bool:
        return self.no_match is not None and best_cosine < self.no_match


SHIPPED = Calibration(WEIGHTS, BIAS, NO_MATCH_COSINE)
