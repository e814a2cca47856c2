"""The calibrated "no match": when no tool the user may use fits a task, select answers with nothing.

The decision reads the semantic signal only: the best cosine between the task and the tools ranked. BM25
scores are not comparable across queries (they grow with the query's length and rare words), while
the cosine of unit vectors is bounded and means the same in every catalog.

The threshold is calibrated on the training data, never on an evaluation set (``calibrate`` below;
reproduce with ``toolrec calibrate-no-match DIR...``). The model was fine-tuned on those sets, so only the
queries about the fifth of their tools it never saw are used (build_index/training_split.py): like every
customer's tools, those are new to it. Each query is ranked against its whole set's catalog exactly as
select ranks it, and the threshold is the highest at which every set is 95 % sure (a Wilson bound, not
just the share seen) to refuse at most ``TARGET_FALSE_RATE`` of its real requests. The bound replaced the
share seen averaged over sets because that rule did not transfer: a 22-query set refusing none let the
other two refuse 1.5 % on average, and the threshold it gave this model refused 3.9 % of arcade_evals'
real requests. Measured by ``toolrec eval --no-match-against`` (README "Quality"). An unrelated
request usually still finds some tool with a fair cosine in a catalog of thousands, so this signal alone
refuses few off-catalog requests; it is deliberately conservative: refusing a real request costs the agent
its tool, while a weak suggestion costs it one look.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

TARGET_FALSE_RATE = 0.01
CONFIDENCE_Z = 1.6449  # one-sided 95 %
NO_MATCH_COSINE = 0.2357
"""From ``toolrec calibrate-no-match --max-queries 2000 ../shared/training/{metatool,bfcl,toolalpaca}`` with the
shipped model (build_index/model_prepare.py MODEL_ID) and task parts (query.embed_query): 0.23575, the lower
of metatool's (2,000 held-out queries) and bfcl's (861); toolalpaca's 35 are too few to vote.
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


def refusal_upper_bound(refused: npt.NDArray[np.int64] | int, queries: int) -> npt.NDArray[np.float64]:
    """One-sided 95 % upper bound (Wilson score) of the share of real requests refused, seen ``refused``
    times in ``queries``: the share a catalog like the calibration set could have, not just the share seen."""
    z2 = CONFIDENCE_Z * CONFIDENCE_Z
    share = np.asarray(refused, dtype=np.float64) / queries
    spread = CONFIDENCE_Z * np.sqrt(share * (1 - share) / queries + z2 / (4 * queries * queries))
    return np.asarray((share + z2 / (2 * queries) + spread) / (1 + z2 / queries))


def calibrate(best_cosines: Mapping[str, Iterable[float]], target_false_rate: float = TARGET_FALSE_RATE) -> float:
    """The highest threshold at which every calibration set is 95 % sure to refuse at most the target share.

    ``best_cosines`` maps each calibration set to the best cosine of each of its queries against its own
    catalog. Each set is held to the target on its own, so a large set cannot hide a small one's refusals;
    a set too small to show the target even with no refusal (fewer than 268 queries at 1 %) cannot vote.
    """
    thresholds = []
    for values in best_cosines.values():
        cosines = np.sort(np.fromiter(values, dtype=np.float64))
        if not len(cosines):
            continue
        within = refusal_upper_bound(np.arange(len(cosines)), len(cosines)) <= target_false_rate
        if within[0]:  # refusing the k lowest (those below cosines[k]) stays within for k up to the last True
            thresholds.append(float(cosines[np.flatnonzero(within)[-1]]))
    if not thresholds:
        raise ValueError(f"calibration needs a set large enough to show a {target_false_rate:.1%} refusal rate")
    return min(thresholds)
