"""The bench's cached indexes (build_index/bench/run.py): a cached build is reused only where this code would build
the same one, so a run never measures a build of another layout."""

from __future__ import annotations

import pytest

from build_index.bench.run import cache_root
from handler.ranking import coarse

MODEL = "96075f13d9ea17acc06a1cfebff20fabdd6d34dfeecb006d60982512d58bcd1f"


def test_a_large_builds_cache_follows_its_coarse_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    small, large = coarse.COARSE_MIN_TOOLS - 1, coarse.COARSE_MIN_TOOLS
    before = cache_root(small, MODEL), cache_root(large, MODEL)
    monkeypatch.setattr(coarse, "COARSE_DIMENSIONS", coarse.COARSE_DIMENSIONS * 2)
    assert cache_root(large, MODEL) != before[1]
    assert cache_root(small, MODEL) == before[0]  # a build that scans every vector holds no codes


def test_the_cache_is_per_size_and_model() -> None:
    assert cache_root(10_000, MODEL) != cache_root(20_000, MODEL)
    assert cache_root(10_000, MODEL) != cache_root(10_000, "0" * 64)
    assert cache_root(10_000, MODEL).name.startswith("n10000-96075f13d9-")
