"""The calibrated "no match": when no tool the user may use fits a task, select answers with nothing.

It reads the best cosine between the task and every tool the user may use, not only those shown, so it never
depends on ``top_k`` (PRODUCT.md §2); a cosine of unit vectors means the same in every catalog. A task half of whose
words one allowed tool holds is in the catalog's own words and never refused (retriever.RankingIndex.ranked). The
threshold (``confidence.NO_MATCH_COSINE``) is the highest at which every set of queries the model never trained on
is 95 % sure to refuse at most ``TARGET_FALSE_RATE`` of its real requests: a refusal costs the agent its tool, a
weak suggestion one look (its score says how weak).
Reproduce: ``toolrec calibrate-score``; measured: docs/quality.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import numpy.typing as npt

TARGET_FALSE_RATE = 0.01
CONFIDENCE_Z = 1.6449  # one-sided 95 %


def refusal_upper_bound(refused: npt.NDArray[np.int64] | int, queries: int) -> npt.NDArray[np.float64]:
    """One-sided 95 % upper bound (Wilson score) of the share of real requests refused, seen ``refused``
    times in ``queries``: the share a catalog like the calibration set could have, not just the share seen."""
    z2 = CONFIDENCE_Z * CONFIDENCE_Z
    share = np.asarray(refused, dtype=np.float64) / queries
    spread = CONFIDENCE_Z * np.sqrt(share * (1 - share) / queries + z2 / (4 * queries * queries))
    return np.asarray((share + z2 / (2 * queries) + spread) / (1 + z2 / queries))


def calibrate(best: Mapping[str, Iterable[float]], target_false_rate: float = TARGET_FALSE_RATE) -> float:
    """The highest threshold at which every calibration set is 95 % sure to refuse at most the target share.

    ``best`` maps each calibration set to the best cosine of each of its queries against its own catalog (1 for a
    query that names its tool: never refused). Each set is held to the target on its own, so a large set cannot
    hide a small one's refusals; a set too small to show the target even with no refusal (fewer than 268 queries
    at 1 %) cannot vote.
    """
    thresholds = []
    for values in best.values():
        ordered = np.sort(np.fromiter(values, dtype=np.float64))
        if not len(ordered):
            continue
        within = refusal_upper_bound(np.arange(len(ordered)), len(ordered)) <= target_false_rate
        if within[0]:  # refusing the k lowest (those below ordered[k]) stays within for k up to the last True
            thresholds.append(float(ordered[np.flatnonzero(within)[-1]]))
    if not thresholds:
        raise ValueError(f"calibration needs a set large enough to show a {target_false_rate:.1%} refusal rate")
    return min(thresholds)
