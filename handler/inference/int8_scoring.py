"""Exact int8 inner products for the dense signal, run by onnxruntime's MatMulInteger kernel.

At 100k tools the vectors are 38 MB as int8 but 154 MB as float32: a float matrix-vector product over a
dequantized copy reads 4x the memory per query (measured here: ~25 ms at 100k on one thread, against
~3 ms for MatMulInteger). numpy has no fast int8 product (it does not call BLAS for integers).

MLAS's u8 x s8 kernel multiplies byte pairs into saturating int16 sums, so a full-range uint8 query
could overflow (2 x 255 x 127 > 32767). The query is therefore quantized to 7 bits (-63..63) and shifted
by +64 into 1..127, which keeps every pair sum below 2 x 127 x 127 = 32258: the integer result is exact,
and the shift is undone with the precomputed row sums. The only approximation is the query's 7-bit
rounding (error <= half a step per component), which leaves rankings unchanged on the benchmark sets.

A catalog's matrix is handed to onnxruntime as a constant of the graph, not as an input of each run: the kernel then
packs it into its own layout once, when the session is made, instead of on every query (10k tools: 0.53 -> 0.15 ms a
scan, 100k: 10.6 -> 1.6 ms; the same integers). The packed copy costs as many bytes as the matrix.
"""

from __future__ import annotations

import base64
import mmap
from collections.abc import Mapping
from typing import Any

import numpy as np

from handler.ranking.arrays import FloatArray, IndexArray
from handler.ranking.dense import Int8Array, QuantizedVectors, quantize_query

QUERY_SHIFT = 64
# onnx graph `s[1, n] = MatMulInteger(A: uint8[1, d], B)` with B (int8[d, n]) a constant of the graph, opset 13, IR 8
# (88 bytes), B declared by ``_constant_b`` after it (tests/unit/test_int8_scoring.py rebuilds both).
PACKED_MODEL = base64.b64decode(
    "CAg6TgoYCgFBCgFCEgFzIg1NYXRNdWxJbnRlZ2VyEgZwYWNrZWRaFAoBQRIPCg0IAhIJCgIIAQoDEgFkYhQKAXMSDwoNCAYSCQoCCAEKAxIBbkIECgAQDQ=="
)
_TENSOR_INT8 = 3  # onnx TensorProto.INT8
_EXTERNAL = 1  # onnx TensorProto.EXTERNAL: the bytes come from the session's options (add_external_initializers)


# `s[m, 1] = MatMulInteger(A: int8[m, d], B: int8[d, 1])`, opset 13, IR 8 (109 bytes): some gathered rows against the
# query, both signed (the query's 7 bits fit int8), so the rows are read as gathered, never transposed
# (tests/unit/test_int8_scoring.py rebuilds it too). Measured at 20,000 rows: 7 ms, against 18 ms to transpose them
# for a graph taking them as its unsigned B and run it.
ROWS_MODEL = base64.b64decode(
    "CAg6YwoYCgFBCgFCEgFzIg1NYXRNdWxJbnRlZ2VyEgRyb3dzWhUKAUESEAoOCAMSCgoDEgFtCgMSAWRaFAoBQhIPCg0IAxIJCgMSAWQKAggBYhQKAXMSDwoNCAYSCQoDEgFtCgIIAUIECgAQDQ=="
)


def _session(threads: int, model: bytes, external: Mapping[str, Any] | None = None) -> Any:
    """A session of ``model``; ``external``: the bytes of its external initializers, by name."""
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    if external:
        options.add_external_initializers(list(external), list(external.values()))
    return onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])


def _packed_session(columns: Int8Array, threads: int) -> tuple[Any, Any]:
    """A session whose graph holds ``columns`` (d, n) as its constant B, read from the array without a copy, and
    the onnxruntime value wrapping the array, which the caller keeps as long as the session (as the array)."""
    import onnxruntime

    b = onnxruntime.OrtValue.ortvalue_from_numpy(columns)
    # B's declaration in a second graph field: a protobuf parser merges it into the first.
    model = PACKED_MODEL + _field(7, _field(5, _constant_b(*columns.shape)))
    return _session(threads, model, {"B": b}), b


def _constant_b(rows: int, columns: int) -> bytes:
    """onnx TensorProto bytes declaring B: int8 (rows, columns), its data external (given in the session's options)."""
    location = _field(1, b"location") + _field(2, b"B")
    dims = _key(1, 0) + _varint(rows) + _key(1, 0) + _varint(columns)
    return (
        dims
        + _key(2, 0)
        + _varint(_TENSOR_INT8)
        + _field(8, b"B")
        + _field(13, location)
        + _key(14, 0)
        + _varint(_EXTERNAL)
    )


def _field(number: int, payload: bytes) -> bytes:
    """A protobuf length-delimited field."""
    return _key(number, 2) + _varint(len(payload)) + payload


def _key(number: int, wire_type: int) -> bytes:
    return _varint(number << 3 | wire_type)


def _varint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _release_pages(array: Int8Array) -> None:
    """Drop a memory-mapped matrix's pages from the process (a build's, handler/index/load.py): they stay in the page
    cache, and a read maps them again. At a million tools the coarse codes held 122 MB of RSS (docs/performance.md)."""
    base: object = array
    while isinstance(base, np.ndarray) and not isinstance(base, np.memmap):
        base = base.base
    mapped = getattr(base, "_mmap", None)  # where numpy's memmap keeps its mmap
    if isinstance(mapped, mmap.mmap):
        mapped.madvise(mmap.MADV_DONTNEED)


class Int8Scorer:
    """Cosine scores from int8 rows (n, d) with per-row scales, without a float copy of the matrix. The kernel keeps
    its own copy of the matrix in its layout (the module's docstring), a coarse build's codes too: at a million tools
    that is 128 MB more, and a select 22 ms faster (docs/performance.md)."""

    def __init__(self, quantized: QuantizedVectors, threads: int = 1) -> None:
        # (d, n) C-contiguous, the layout MatMulInteger reads: a view of column-major vectors (write_build stores them
        # so), a copy of row-major ones. The session reads it in place: it lives as long as the scorer.
        self._columns = np.ascontiguousarray(quantized.values.T)
        if self._columns.shape[1] > 0:
            self._session, self._b = _packed_session(self._columns, threads)
        self._shift_correction = QUERY_SHIFT * quantized.values.sum(axis=1, dtype=np.int32)
        self._row_scales = quantized.scales.astype(np.float32)
        _release_pages(quantized.values)  # read for the last time: the kernel scans its packed copy

    def score(self, query_vector: FloatArray) -> FloatArray:
        """Cosines of every row with the query."""
        levels, step = quantize_query(query_vector)
        if step == 0.0 or self._columns.shape[1] == 0:
            return np.zeros(self._columns.shape[1], dtype=np.float32)
        shifted = (levels + QUERY_SHIFT).astype(np.uint8)[None, :]
        (raw,) = self._session.run(None, {"A": shifted})
        exact = np.subtract(raw[0], self._shift_correction, out=raw[0])
        # Each step as its own float32 product, the first one casting the integers as it goes: the same floats as
        # casting first, one pass over n fewer, and no temporary of n (4 MB each at 1M).
        scores: FloatArray = np.multiply(exact, np.float32(step), dtype=np.float32)
        scores *= self._row_scales
        return scores


class Int8Rows:
    """The same cosines for chosen rows of a row-major matrix (a coarse build's vectors, handler/ranking/coarse.py),
    bit for bit what the full scan gives them: the same integer products, scaled the same way."""

    CHUNK = 65_536  # rows at a time when every row is scored (the exhaustive reference)

    def __init__(self, quantized: QuantizedVectors, threads: int = 1) -> None:
        self._session = _session(threads, ROWS_MODEL)
        self._rows = np.ascontiguousarray(quantized.values)
        self._scales = quantized.scales.astype(np.float32)

    def score_rows(self, query_vector: FloatArray, ids: IndexArray) -> FloatArray:
        levels, step = quantize_query(query_vector)
        if step == 0.0 or not len(ids):
            return np.zeros(len(ids), dtype=np.float32)
        (raw,) = self._session.run(None, {"A": self._rows[ids], "B": levels.astype(np.int8)[:, None]})
        scores: FloatArray = raw[:, 0].astype(np.float32) * np.float32(step) * self._scales[ids]
        return scores

    def score(self, query_vector: FloatArray) -> FloatArray:
        count = len(self._rows)
        parts = [
            self.score_rows(query_vector, np.arange(s, min(s + self.CHUNK, count))) for s in range(0, count, self.CHUNK)
        ]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float32)
