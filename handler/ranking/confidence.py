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

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from handler.ranking.arrays import FloatArray

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
    """What the score reads of one task's chosen tools (best first) and of the allowed tools around them."""

    cosine: FloatArray  # each chosen tool's cosine (its best with the task or any of its parts)
    best_cosine: float  # the best of any allowed tool
    words_held: FloatArray  # share of the task's own terms each chosen tool holds, in [0, 1]
    lexical_place: npt.NDArray[np.float64]  # allowed tools sharing a word that score higher by BM25; -1: shares none
    semantic_place: npt.NDArray[np.float64]  # allowed tools with a higher cosine
    fused: FloatArray  # each chosen tool's ranking score
    crowding: int  # allowed tools within CROWD_COSINE below the best cosine
    query_words: int
    query_parts: int
    allowed_tools: int


Rows = npt.NDArray[np.float64]


def features(signals: Signals) -> Rows:
    """One row per chosen tool (best first), in FEATURES order."""
    count = len(signals.cosine)
    cosine = signals.cosine.astype(np.float64)
    place = np.arange(count, dtype=np.float64)
    top = float(signals.fused[0]) if count else 0.0
    words = np.log1p(signals.query_words)
    parts = np.log1p(signals.query_parts)
    matched = signals.lexical_place >= 0
    columns = (
        cosine,
        signals.best_cosine - cosine,
        signals.words_held.astype(np.float64),
        np.where(matched, 1.0 / (1.0 + np.where(matched, signals.lexical_place, 0.0)), 0.0),
        1.0 / (1.0 + signals.semantic_place),
        1.0 / (1.0 + place),
        signals.fused / top if top > 0 else np.ones(count),
        np.full(count, np.log1p(signals.crowding)),
        np.full(count, words),
        np.full(count, parts),
        np.full(count, np.log(signals.allowed_tools)),
        parts / (1.0 + place),
        words / (1.0 + place),
    )
    return np.stack(columns, axis=1)


def with_raised_cosines(rows: Rows, lift: FloatArray) -> Rows:
    """``rows`` with each tool's cosine raised by ``lift`` (what its past tasks added, usage.with_past_tasks), as the
    ranking's semantic signal read it: its distance below the best cosine shrinks by as much."""
    out = rows.copy()
    out[:, FEATURES.index("cosine")] += lift
    out[:, FEATURES.index("below_best_cosine")] -= lift
    return out


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
