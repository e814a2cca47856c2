"""top_k (argpartition + partial sort) against the obvious reference: a full stable sort of the finite scores."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from handler.ranking.topk import at_least, best, top_k

# Few distinct values, so ties are the rule; -inf and nan stand for disallowed tools.
values = st.sampled_from([-np.inf, np.nan, -2.0, -0.5, 0.0, 0.25, 1.0, 1.0 + 2**-20, 3.0])


def reference(scores: np.ndarray, k: int) -> list[int]:
    finite = [i for i in range(len(scores)) if np.isfinite(scores[i])]
    return sorted(finite, key=lambda i: (-scores[i], i))[: max(k, 0)]


@given(st.lists(values, max_size=60), st.integers(-2, 70))
def test_top_k_equals_a_full_stable_sort(raw: list[float], k: int) -> None:
    scores = np.array(raw, dtype=np.float32)
    assert top_k(scores, k).tolist() == reference(scores, k)


@given(st.lists(st.floats(-1e6, 1e6, width=32), min_size=1, max_size=300), st.integers(1, 40))
def test_top_k_on_arbitrary_floats(raw: list[float], k: int) -> None:
    scores = np.array(raw, dtype=np.float32)
    assert top_k(scores, k).tolist() == reference(scores, k)


def test_disallowed_scores_never_fill_a_slot() -> None:
    scores = np.array([-np.inf, 0.5, -np.inf, 0.5, -np.inf], dtype=np.float32)
    assert top_k(scores, 5).tolist() == [1, 3]
    assert top_k(np.full(4, -np.inf, dtype=np.float32), 3).tolist() == []


@pytest.mark.parametrize("seed", range(4))
def test_top_k_of_a_large_catalog_reads_a_sample_and_still_equals_a_full_sort(seed: int) -> None:
    rng = np.random.default_rng(seed)
    scores = rng.integers(0, 3000, size=200_000).astype(np.float32)  # ties everywhere
    scores[rng.random(200_000) < 0.3] = -np.inf
    for k in (1, 5, 20, 100):
        expected = np.lexsort((np.arange(len(scores)), -scores))[:k]
        assert top_k(scores, k).tolist() == expected.tolist()
    assert len(at_least(scores, 100)) < 2_000  # a few candidates, not the catalog


def best_reference(scores: np.ndarray, count: int) -> list[int]:
    """Every finite score at or above the count-th best finite score (all of them when there are fewer)."""
    finite = np.sort(scores[np.isfinite(scores)])[::-1]
    if len(finite) <= count:
        return np.flatnonzero(np.isfinite(scores)).tolist()
    return np.flatnonzero(np.isfinite(scores) & (scores >= finite[count - 1])).tolist()


@given(st.lists(values, max_size=60), st.integers(1, 70))
def test_best_holds_the_count_best_and_the_ties_of_the_last(raw: list[float], count: int) -> None:
    scores = np.array(raw, dtype=np.float32)
    assert best(scores, count).tolist() == best_reference(scores, count)


@pytest.mark.parametrize("size", [4_095, 4_096, 10_000, 65_536, 200_000])
@pytest.mark.parametrize("seed", range(3))
def test_best_from_a_sample_of_a_catalog_equals_the_reference(size: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for scores in (
        rng.normal(size=size).astype(np.float32),
        rng.integers(0, 50, size=size).astype(np.float32),  # ties everywhere, at the threshold too
        np.sort(rng.normal(size=size)).astype(np.float32),  # the sample is not random
        np.where(rng.random(size) < 0.99, -np.inf, rng.normal(size=size)).astype(np.float32),  # few eligible
    ):
        for count in (1, 100, 400):
            assert best(scores, count).tolist() == best_reference(scores, count)
