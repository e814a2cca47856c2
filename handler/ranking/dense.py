"""int8 vector quantization and scoring.

Rows are L2-normalized embeddings; each row keeps its own scale (symmetric, max |x| -> 127), so the
round-trip error of any component is at most half a quantization step of that row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

from handler.ranking.arrays import FloatArray, IndexArray

Int8Array = npt.NDArray[np.int8]


@dataclass(frozen=True)
class QuantizedVectors:
    values: Int8Array  # (n, d)
    scales: FloatArray  # (n,): row i ~= values[i] * scales[i]

    def dequantize(self) -> FloatArray:
        return self.values.astype(np.float32) * self.scales[:, None]


def quantize(vectors: FloatArray) -> QuantizedVectors:
    vectors = np.asarray(vectors, dtype=np.float32)
    peak = np.abs(vectors).max(axis=1) if vectors.size else np.zeros(len(vectors), dtype=np.float32)
    step = (peak / 127.0).astype(np.float32)
    # A row of only subnormal values has a step that underflows to 0: give it scale 1 (all zeros, error < 1e-38).
    scales = np.where(step > 0, step, 1.0).astype(np.float32)
    values = np.clip(np.rint(vectors / scales[:, None]), -127, 127).astype(np.int8)
    return QuantizedVectors(values, scales)


QUERY_LEVELS = 63  # a query is quantized to 7 bits: handler/inference/int8_scoring.py says why


def quantize_query(query_vector: FloatArray) -> tuple[npt.NDArray[np.int16], float]:
    """The query as integers in -QUERY_LEVELS..QUERY_LEVELS and the step they count; step 0 for a zero query."""
    query = np.asarray(query_vector, dtype=np.float32)
    peak = float(np.abs(query).max()) if query.size else 0.0
    if peak == 0.0:
        return np.zeros(query.shape, dtype=np.int16), 0.0
    step = peak / QUERY_LEVELS
    return np.rint(query / step).astype(np.int16), step


def exact_int8_cosines(rows: Int8Array, scales: FloatArray, query_vector: FloatArray) -> FloatArray:
    """The int8 scan's cosines for some rows (n, d), bit for bit: the integer products are summed in float32, which
    is exact here (each sum stays under 2**24: 384 x 127 x 63 < 3.1 million), then scaled as the scan scales them."""
    levels, step = quantize_query(query_vector)
    exact = np.asarray(rows, dtype=np.float32) @ levels.astype(np.float32)
    scores: FloatArray = exact * np.float32(step) * scales.astype(np.float32)
    return scores


class DenseScorer(Protocol):
    """Scores every tool vector against a unit-length query vector (cosine similarity)."""

    def score(self, query_vector: FloatArray) -> FloatArray: ...


@dataclass(frozen=True)
class DenseMatrix:
    """The reference scorer: a float32 copy of the dequantized rows and one BLAS matrix-vector product.

    The service uses the exact int8 scorer (handler/inference/int8_scoring.py) instead, which reads 4x fewer
    bytes per query; this one is what tests and the numpy-only path compare it with.
    """

    rows: FloatArray

    @classmethod
    def from_quantized(cls, quantized: QuantizedVectors) -> DenseMatrix:
        return cls(np.ascontiguousarray(quantized.dequantize()))

    def score(self, query_vector: FloatArray) -> FloatArray:
        """Cosine similarity of every row with a unit-length query vector."""
        return self.rows @ np.asarray(query_vector, dtype=np.float32)


class RowScorer(DenseScorer, Protocol):
    """A DenseScorer that also scores chosen rows alone (a coarse build's exact stage, coarse.py)."""

    def score_rows(self, query_vector: FloatArray, ids: IndexArray) -> FloatArray: ...


@dataclass(frozen=True)
class ExactRows:
    """The int8 scan's exact cosines from row-major vectors, in numpy: the reference the onnxruntime scorers
    (handler/inference/int8_scoring.py) are checked against."""

    rows: Int8Array  # (n, d)
    scales: FloatArray

    def score_rows(self, query_vector: FloatArray, ids: IndexArray) -> FloatArray:
        return exact_int8_cosines(self.rows[ids], self.scales[ids], query_vector)

    def score(self, query_vector: FloatArray) -> FloatArray:
        return exact_int8_cosines(self.rows, self.scales, query_vector)
