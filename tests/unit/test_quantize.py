"""int8 quantization: every component comes back within one quantization step of its row."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from handler.ranking.dense import DenseMatrix, quantize

finite = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, width=32)
matrices = st.tuples(st.integers(1, 8), st.integers(1, 48)).flatmap(
    lambda shape: arrays(np.float32, shape, elements=finite)
)


@given(matrices)
def test_round_trip_is_within_one_step_per_component(vectors: np.ndarray) -> None:
    quantized = quantize(vectors)
    assert quantized.values.dtype == np.int8 and quantized.values.shape == vectors.shape
    step = quantized.scales[:, None].astype(np.float64)
    error = np.abs(quantized.dequantize().astype(np.float64) - vectors.astype(np.float64))
    # Rounding gives half a step; the float32 arithmetic of scale and product may add a few ulps.
    assert np.all(error <= step * (0.5 + 1e-4) + 1e-30)


@given(matrices)
def test_largest_component_keeps_full_range(vectors: np.ndarray) -> None:
    quantized = quantize(vectors)
    peak = np.abs(vectors).max(axis=1)
    normal = peak / 127 >= np.finfo(np.float32).tiny  # a subnormal step cannot be represented exactly
    assert np.all(np.abs(quantized.values[normal]).max(axis=1) == 127)
    assert np.all(quantized.values[peak == 0] == 0)
    assert np.all(np.isfinite(quantized.scales)) and np.all(quantized.scales > 0)


def test_unit_vectors_score_like_their_float_originals() -> None:
    rng = np.random.default_rng(7)
    rows = rng.normal(size=(200, 384)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    query = rows[3]
    exact = rows @ query
    scored = DenseMatrix.from_quantized(quantize(rows)).score(query)
    assert np.max(np.abs(scored - exact)) < 0.01
    assert int(np.argmax(scored)) == 3
