"""The benchmark metrics on hand-made rankings, with groups of interchangeable tools."""

from __future__ import annotations

import math

import pytest

from build_index.quality.metrics import completeness, ndcg, recall

RANKED = ["a", "b", "c", "d", "e", "f"]


@pytest.mark.parametrize(
    ("groups", "k", "c", "r"),
    [
        ([["a"]], 1, 1.0, 1.0),
        ([["b"]], 1, 0.0, 0.0),
        ([["a"], ["c"]], 3, 1.0, 1.0),
        ([["a"], ["e"]], 3, 0.0, 0.5),
        ([["x", "e"], ["y", "b"]], 5, 1.0, 1.0),  # any member of a group finds it
        ([["x", "y"], ["a"], ["f"]], 6, 0.0, 2 / 3),
        ([["a", "b"]], 2, 1.0, 1.0),
    ],
)
def test_completeness_and_recall(groups: list[list[str]], k: int, c: float, r: float) -> None:
    assert completeness(RANKED, groups, k) == c
    assert recall(RANKED, groups, k) == pytest.approx(r)


def test_ndcg_credits_each_group_once_at_its_first_member() -> None:
    # Group 1 found at rank 0 (via "a"; "b" is the same group and adds nothing), group 2 at rank 3.
    groups = [["a", "b"], ["d"]]
    expected = (1 + 1 / math.log2(5)) / (1 + 1 / math.log2(3))
    assert ndcg(RANKED, groups, 10) == pytest.approx(expected)


def test_ndcg_bounds() -> None:
    assert ndcg(RANKED, [["a"], ["b"]], 10) == pytest.approx(1.0)
    assert ndcg(RANKED, [["z"]], 10) == 0.0
    assert ndcg(RANKED, [["f"]], 5) == 0.0  # beyond the cut-off
    assert ndcg(RANKED, [["c"]], 10) == pytest.approx(1 / math.log2(4))
    # The ideal DCG counts at most k groups: 12 groups, the top 10 all found, is perfect at k = 10.
    many = [[str(i)] for i in range(12)]
    assert ndcg([str(i) for i in range(12)], many, 10) == pytest.approx(1.0)


def test_empty_rankings_and_duplicated_ids() -> None:
    assert completeness([], [["a"]], 10) == 0.0
    assert recall([], [["a"]], 10) == 0.0
    assert recall(["b", "b", "a"], [["a"]], 3) == 1.0
