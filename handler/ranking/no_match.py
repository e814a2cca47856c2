"""The calibrated "no match": when no tool the user may use fits a task, select answers with nothing.

The decision reads the best cosine between the task and every tool the user may use (not only the ones shown,
so it never depends on ``top_k``: PRODUCT.md §2): BM25 scores are not comparable across queries (they grow with
the query's length and rare words), while the cosine of unit vectors is bounded and means the same in every
catalog. One lexical fact overrides a low cosine (``RankingIndex._words_name_a_tool``): a task half of whose
words one allowed tool holds is in the catalog's own words, and is never refused.

The threshold comes from queries the model never trained on (the benchmark sets, the training sets' held-out
tools: build_index/quality/training_split.py), each ranked against its whole catalog as select ranks it: the highest at
which every set is 95 % sure (a Wilson bound, not just the share seen) to refuse at most ``TARGET_FALSE_RATE`` of
its real requests. Reproduce with ``toolrec calibrate-no-match``, which also gives each set's threshold from the
others (leave one set out: README "Quality"). It is deliberately conservative: refusing a real request costs the
agent its tool, while a weak suggestion costs it one look; an unrelated request in a catalog of thousands still
finds some tool with a fair cosine, so this signal alone refuses few off-catalog requests.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

TARGET_FALSE_RATE = 0.01
CONFIDENCE_Z = 1.6449  # one-sided 95 %
NO_MATCH_COSINE = 0.2401
"""From ``toolrec calibrate-no-match --max-queries 2000`` over the four benchmark and six training sets with the
shipped model (build_index/model_prepare.py MODEL_ID) and task parts (query.embed_query): 0.24007, set by
arcade_evals (without it: 0.2638); toolalpaca's, nestful's, restbench's and callnavi's held-out queries are too few
to vote. A new model or a change in query formation needs a new value."""


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
