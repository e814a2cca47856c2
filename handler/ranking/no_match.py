"""The calibrated "no match": when no tool the user may use fits a task, select answers with nothing.

The decision reads the semantic signal only: the cosine between the task and the best tool. BM25
scores are not comparable across queries (they grow with the query's length and rare words), while
the cosine of unit vectors is bounded and means the same in every catalog.

The threshold is calibrated on the training data, never on an evaluation set
(``calibrate`` below; reproduce with ``toolrec calibrate-no-match DIR...``): for each training set
(metatool, bfcl, toolalpaca in ../shared/training) its queries are run against its own catalog, and the
threshold is the highest one whose wrongly-refused share, averaged over the sets, stays within
``TARGET_FALSE_RATE``. Measured by ``toolrec eval --no-match-against`` (README "Quality"): real requests
refused 0-0.96% per benchmark set, but only 1.4-7.2% of other sets' requests refused: an unrelated request
usually still finds some tool with cosine above it in a catalog of thousands, so this signal alone cannot
reach the 80% aim at a 1% false rate. It is deliberately conservative: refusing a real request costs the
agent its tool, while a weak suggestion costs it one look.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

import numpy as np

TARGET_FALSE_RATE = 0.01
NO_MATCH_COSINE = 0.2297
"""From ``toolrec calibrate-no-match --max-queries 2000 ../shared/training/{metatool,bfcl,toolalpaca}`` with
all-MiniLM-L6-v2 int8 (build_index/model_prepare.py MODEL_ID) and task parts (query.embed_query): 0.22971.
A new model or a change in query formation needs a new value."""


class ScoredHit(Protocol):
    @property
    def semantic(self) -> float | None: ...


def is_no_match(hits: Sequence[ScoredHit], threshold: float = NO_MATCH_COSINE) -> bool:
    """True when none of the ranked hits is semantically close enough to the task to be offered.

    Hits without a semantic score (keyword-only ranking) never trigger it: BM25 returns only tools
    sharing a word with the query, which is its own notion of a match. An empty list is a no match.
    """
    if not hits:
        return True
    cosines = [h.semantic for h in hits if h.semantic is not None]
    return bool(cosines) and max(cosines) < threshold


def calibrate(best_cosines: Mapping[str, Iterable[float]], target_false_rate: float = TARGET_FALSE_RATE) -> float:
    """The highest threshold whose share of refused real queries, averaged over the sets, is within the target.

    ``best_cosines`` maps each calibration set to the best cosine of each of its queries against its own
    catalog. Averaging per set keeps a large set from hiding the refusals of a small one.
    """
    per_set = [np.sort(np.fromiter(v, dtype=np.float64)) for v in best_cosines.values()]
    per_set = [v for v in per_set if len(v)]
    if not per_set:
        raise ValueError("calibration needs at least one query")
    candidates = np.unique(np.concatenate(per_set))
    best = 0.0
    for threshold in candidates:  # a query is refused when its best cosine is strictly below the threshold
        refused = np.mean([np.searchsorted(v, threshold, side="left") / len(v) for v in per_set])
        if refused > target_false_rate:
            break
        best = float(threshold)
    return best
