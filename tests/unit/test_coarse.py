"""The two-stage dense signal of a large build (handler/ranking/coarse.py): its candidates get the exact scan's
cosines bit for bit, the others never outrank them, policy chooses the candidates, and the signal's mean and spread
are the full scan's."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from handler.inference.int8_scoring import Int8Rows, Int8Scorer
from handler.ranking import coarse as coarse_module
from handler.ranking import topk
from handler.ranking.coarse import CoarseSemantic, _with_others, candidates, fit_coarse
from handler.ranking.dense import ExactRows, QuantizedVectors, exact_int8_cosines, quantize
from handler.ranking.fusion import moments


def unit_rows(rng: np.random.Generator, count: int, width: int = 384, rank: int = 48) -> np.ndarray:
    # Like real tool vectors: a shared direction and most of the variance in a few directions, a little noise.
    basis = np.random.default_rng(0).standard_normal((rank, width)).astype(np.float32)
    latent = rng.standard_normal((count, rank)).astype(np.float32) @ basis
    rows = latent + 0.1 * rng.standard_normal((count, width)).astype(np.float32) + 2 * basis[0]
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def two_stage(vectors: QuantizedVectors, dimensions: int = 32) -> CoarseSemantic:
    codes = fit_coarse(vectors, dimensions)
    scan = Int8Scorer(codes.codes)
    return CoarseSemantic(codes.projection, codes.mean, scan, Int8Rows(vectors), codes.second_moment)


def test_the_closed_form_moments_are_the_full_scans() -> None:
    rng = np.random.default_rng(4)
    vectors = quantize(unit_rows(rng, 3000))
    signal = two_stage(vectors)
    scan = Int8Scorer(vectors)
    for query in unit_rows(rng, 20):
        closed = signal.moments(query)
        full = scan.score(query)
        read = moments(full[full != 0], len(full))  # what the fusion reads from every tool's exact cosine
        assert closed is not None and read is not None
        np.testing.assert_allclose(closed, read, rtol=1e-6)
    assert signal.moments(np.zeros(384, dtype=np.float32)) is None  # a flat signal, as fusion.moments says
    assert replace(signal, second_moment=None).moments(unit_rows(rng, 1)[0]) is None  # a build from before it


def test_exact_cosines_of_some_rows_are_the_full_scans_bit_for_bit() -> None:
    rng = np.random.default_rng(1)
    vectors = quantize(unit_rows(rng, 500))
    scan = Int8Scorer(vectors)
    for _ in range(20):
        query = unit_rows(rng, 1)[0]
        picked = rng.choice(500, size=37, replace=False)
        full = scan.score(query)
        np.testing.assert_array_equal(
            exact_int8_cosines(vectors.values[picked], vectors.scales[picked], query), full[picked]
        )
        np.testing.assert_array_equal(ExactRows(vectors.values, vectors.scales).score(query), full)
        np.testing.assert_array_equal(Int8Rows(vectors).score_rows(query, picked), full[picked])
        np.testing.assert_array_equal(Int8Rows(vectors).score(query), full)


def test_the_principal_directions_are_orthonormal_and_codes_approximate_the_vectors() -> None:
    rng = np.random.default_rng(2)
    vectors = quantize(unit_rows(rng, 3000, 64))
    codes = fit_coarse(vectors, 64)  # every direction: the codes hold the whole vector
    np.testing.assert_allclose(codes.projection.T @ codes.projection, np.eye(64), atol=1e-4)
    rebuilt = codes.codes.dequantize() @ codes.projection.T + codes.mean
    assert np.abs(rebuilt - vectors.dequantize()).max() < 0.02


@pytest.mark.parametrize("seed", range(5))
def test_candidates_are_exact_and_every_other_tool_stays_below_them(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coarse_module, "MIN_CANDIDATES", 50)
    monkeypatch.setattr(topk, "SAMPLE", 256)
    rng = np.random.default_rng(seed)
    vectors = quantize(unit_rows(rng, 4000))
    signal = two_stage(vectors)
    allowed = rng.random(4000) < 0.7
    named = np.array([3, 17, 999])
    query = unit_rows(rng, 1)[0]
    exact = Int8Scorer(vectors).score(query)
    scores = signal.score(query, allowed, named)
    estimate = signal.scan.score(query @ signal.projection) + np.float32(query @ signal.mean)
    count = coarse_module._candidate_count(4000)
    picked = candidates(estimate, allowed, count)
    chosen = np.union1d(picked, named)
    assert count // 2 <= len(picked) < 5 * count  # about the count asked for, from a sample of the estimates
    np.testing.assert_array_equal(scores[chosen], exact[chosen])
    others = np.setdiff1d(np.arange(4000), chosen)
    assert scores[others].max() < estimate[picked].min()
    assert allowed[np.setdiff1d(chosen, named)].all()  # only allowed tools are candidates (besides the named)


def test_the_exact_best_tools_are_found_among_the_candidates(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coarse_module, "MIN_CANDIDATES", 200)
    monkeypatch.setattr(topk, "SAMPLE", 1024)
    rng = np.random.default_rng(7)
    vectors = quantize(unit_rows(rng, 5000))
    signal = two_stage(vectors, 96)
    scan = Int8Scorer(vectors)
    found = 0
    for _ in range(30):
        query = unit_rows(rng, 1)[0]
        best = np.argsort(-scan.score(query), kind="stable")[:10]
        found += int(np.array_equal(np.argsort(-signal.score(query, None, best[:0]), kind="stable")[:10], best))
    assert found >= 28


def test_few_allowed_tools_are_all_candidates() -> None:
    rng = np.random.default_rng(3)
    estimate = rng.standard_normal(10_000).astype(np.float32)
    allowed = np.zeros(10_000, dtype=bool)
    allowed[rng.choice(10_000, size=30, replace=False)] = True
    np.testing.assert_array_equal(candidates(estimate, allowed, 2000), np.flatnonzero(allowed))
    assert len(candidates(estimate, np.zeros(10_000, dtype=bool), 2000)) == 0


def test_the_named_tools_join_the_candidates_as_a_union_would() -> None:
    rng = np.random.default_rng(5)
    for _ in range(500):
        picked = np.unique(rng.integers(0, 200, rng.integers(0, 60))).astype(np.intp)
        named = rng.integers(0, 220, rng.integers(0, 12)).astype(np.intp)  # repeats, and some among the picked
        np.testing.assert_array_equal(_with_others(picked, named), np.union1d(picked, named))
