"""The fused ranking over a shortlist (fusion.shortlist_fusion) returns the exhaustive fusion's k best, in the same
order and with the same floats, whatever the catalog's size, its policy and its ties (issue #27)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handler.ranking.fusion import DEPTH, RANK_CONSTANT, reciprocal_rank_fusion, shortlist_fusion, top_votes
from handler.ranking.topk import top_k


def exhaustive(lexical: np.ndarray, semantic: np.ndarray, allowed: np.ndarray, weight: float, k: int) -> tuple:
    fused = np.where(allowed, reciprocal_rank_fusion(lexical, semantic, allowed, weight), -np.inf)
    chosen = top_k(fused, k)
    return chosen.tolist(), fused[chosen].tolist()


def shortlisted(lexical: np.ndarray, semantic: np.ndarray, allowed: np.ndarray, weight: float, k: int) -> tuple:
    eligible = np.flatnonzero(allowed & (lexical > 0))
    found = shortlist_fusion(lexical, eligible, semantic, allowed, int(allowed.sum()), weight, k)
    order = top_k(found.scores, k)
    return found.ids[order].tolist(), found.scores[order].tolist()


def signals(rng: np.random.Generator, count: int, matched: float, levels: int | None) -> tuple:
    semantic = rng.normal(0.2, 0.15, size=count).astype(np.float32)
    lexical = np.where(rng.random(count) < matched, rng.gamma(2.0, 2.0, size=count), 0.0).astype(np.float32)
    if levels is not None:  # coarse values: ties everywhere
        semantic = np.round(semantic * levels) / levels
        lexical = np.round(lexical)
    return lexical.astype(np.float32), semantic.astype(np.float32)


@settings(max_examples=80, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    count=st.integers(1, 400),
    matched=st.sampled_from([0.0, 0.05, 0.5, 1.0]),
    allowed_share=st.sampled_from([0.02, 0.3, 1.0]),
    levels=st.sampled_from([None, 4, 50]),
    k=st.sampled_from([1, 5, 20]),
    weight=st.sampled_from([0.25, 1.0]),
)
def test_the_shortlist_gives_the_exhaustive_k_best(
    seed: int, count: int, matched: float, allowed_share: float, levels: int | None, k: int, weight: float
) -> None:
    rng = np.random.default_rng(seed)
    lexical, semantic = signals(rng, count, matched, levels)
    allowed = rng.random(count) < allowed_share
    assert shortlisted(lexical, semantic, allowed, weight, k) == exhaustive(lexical, semantic, allowed, weight, k)


@pytest.mark.parametrize(("seed", "levels"), [(0, None), (1, 1000), (2, None)])
def test_at_a_hundred_thousand_tools_the_shortlist_is_small_and_exact(seed: int, levels: int | None) -> None:
    rng = np.random.default_rng(seed)
    lexical, semantic = signals(rng, 100_000, 0.01, levels)
    allowed = rng.random(100_000) < 0.9
    for k in (1, 5, 20):
        assert shortlisted(lexical, semantic, allowed, 1.0, k) == exhaustive(lexical, semantic, allowed, 1.0, k)
    eligible = np.flatnonzero(allowed & (lexical > 0))
    found = shortlist_fusion(lexical, eligible, semantic, allowed, int(allowed.sum()), 1.0, 5)
    assert len(found.ids) < 1_000  # the two signals' voters (ties share a rank), not the catalog


def test_a_tool_asked_for_is_on_the_shortlist_with_its_exhaustive_score() -> None:
    rng = np.random.default_rng(5)
    lexical, semantic = signals(rng, 50_000, 0.02, None)
    allowed = np.ones(50_000, dtype=bool)
    eligible = np.flatnonzero(lexical > 0)
    weakest = int(np.argmin(semantic))
    found = shortlist_fusion(lexical, eligible, semantic, allowed, 50_000, 1.0, 5, also=np.array([weakest]))
    fused = reciprocal_rank_fusion(lexical, semantic, allowed, 1.0)
    assert weakest in found.ids.tolist() and len(found.ids) < 1_000
    np.testing.assert_array_equal(found.scores, fused[found.ids])


def reference_votes(scores: np.ndarray, depth: int) -> np.ndarray:
    """Each finite score's vote from its rank among all of them, by a full sort: 0 from ``depth`` on."""
    finite = np.isfinite(scores)
    descending = np.sort(scores[finite])[::-1]
    ranks = np.searchsorted(-descending, -scores[finite], side="left")
    votes = np.zeros(len(scores), dtype=np.float32)
    votes[finite] = np.where(ranks < depth, 1.0 / (RANK_CONSTANT + 1 + ranks), 0.0)
    return votes


@pytest.mark.parametrize("size", [300, 5_000, 10_000, 100_000])
@pytest.mark.parametrize("levels", [None, 30])
def test_the_votes_of_the_best_alone_are_those_of_a_full_sort(size: int, levels: int | None) -> None:
    rng = np.random.default_rng(size)
    lexical, semantic = signals(rng, size, 0.3, levels)
    for scores in (semantic, np.where(rng.random(size) < 0.5, semantic, -np.inf).astype(np.float32), lexical):
        found = top_votes(scores)
        votes = np.zeros(size, dtype=np.float32)
        votes[found.pool] = found.votes
        np.testing.assert_array_equal(votes, reference_votes(scores, DEPTH))
        assert (found.votes > 0).all() and found.floor == scores[votes > 0].min()


def test_votes_found_once_by_the_caller_fuse_as_votes_found_by_the_shortlist() -> None:
    rng = np.random.default_rng(9)
    lexical, semantic = signals(rng, 10_000, 0.05, 100)
    allowed = rng.random(10_000) < 0.8
    eligible = np.flatnonzero(allowed & (lexical > 0))
    count = int(allowed.sum())
    found = shortlist_fusion(lexical, eligible, semantic, allowed, count, 0.5, 5)
    votes = (top_votes(lexical[eligible]), top_votes(np.where(allowed, semantic, -np.inf).astype(np.float32)))
    given_votes = shortlist_fusion(lexical, eligible, semantic, allowed, count, 0.5, 5, votes=votes)
    np.testing.assert_array_equal(given_votes.ids, found.ids)
    np.testing.assert_array_equal(given_votes.scores, found.scores)
