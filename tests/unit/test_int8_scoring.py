"""The int8 dense scorer: exact integer arithmetic, the same ranking as the float reference."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import TensorProto, helper

from handler.inference.int8_scoring import (
    PACKED_MODEL,
    ROWS_MODEL,
    Int8Rows,
    Int8Scorer,
    _constant_b,
)
from handler.ranking.dense import QUERY_LEVELS, DenseMatrix, quantize


def unit_rows(rng: np.random.Generator, n: int, d: int = 384) -> np.ndarray:
    rows = rng.normal(size=(n, d)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_embedded_packed_graph_is_the_matmul_integer_graph_with_b_declared_after_it() -> None:
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["A", "B"], ["s"])],
        "packed",
        [helper.make_tensor_value_info("A", TensorProto.UINT8, [1, "d"])],
        [helper.make_tensor_value_info("s", TensorProto.INT32, [1, "n"])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    assert model.SerializeToString() == PACKED_MODEL
    b = onnx.TensorProto.FromString(_constant_b(384, 300_000))  # dims past one varint byte
    assert (list(b.dims), b.data_type, b.name, b.data_location) == ([384, 300_000], TensorProto.INT8, "B", 1)
    assert [(e.key, e.value) for e in b.external_data] == [("location", "B")]


def test_embedded_rows_graph_is_the_signed_matmul_integer_graph() -> None:
    graph = helper.make_graph(
        [helper.make_node("MatMulInteger", ["A", "B"], ["s"])],
        "rows",
        [
            helper.make_tensor_value_info("A", TensorProto.INT8, ["m", "d"]),
            helper.make_tensor_value_info("B", TensorProto.INT8, ["d", 1]),
        ],
        [helper.make_tensor_value_info("s", TensorProto.INT32, ["m", 1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    assert model.SerializeToString() == ROWS_MODEL


def test_integer_products_are_exact_even_at_full_range() -> None:
    # Rows of +-127 and a query at its peak are the case where a saturating int16 kernel would overflow.
    rng = np.random.default_rng(7)
    values = rng.choice(np.array([-127, 127], dtype=np.int8), size=(64, 384))
    scorer = Int8Scorer(quantize(values.astype(np.float32)))
    query = rng.choice(np.array([-1.0, 1.0], dtype=np.float32), size=384)
    expected = values.astype(np.int64) @ np.rint(query * QUERY_LEVELS).astype(np.int64)
    got = scorer.score(query / np.linalg.norm(query)) / (1 / QUERY_LEVELS / np.linalg.norm(query))
    np.testing.assert_allclose(got, expected.astype(np.float32), rtol=1e-5)
    rows = Int8Rows(quantize(values.astype(np.float32)))  # the signed kernel a coarse build rescores with
    np.testing.assert_array_equal(
        rows.score_rows(query / np.linalg.norm(query), np.arange(64)), scorer.score(query / np.linalg.norm(query))
    )


def test_scores_match_the_float_reference_within_query_rounding() -> None:
    rng = np.random.default_rng(3)
    quantized = quantize(unit_rows(rng, 2000))
    reference, fast = DenseMatrix.from_quantized(quantized), Int8Scorer(quantized)
    for query in unit_rows(rng, 20):
        step = float(np.abs(query).max()) / QUERY_LEVELS
        bound = 0.5 * step * float(np.abs(reference.rows).sum(axis=1).max())
        assert np.abs(fast.score(query) - reference.score(query)).max() <= bound


def test_a_zero_query_and_an_empty_matrix_score_zero() -> None:
    rng = np.random.default_rng(5)
    scorer = Int8Scorer(quantize(unit_rows(rng, 10)))
    assert not scorer.score(np.zeros(384, dtype=np.float32)).any()
    empty = Int8Scorer(quantize(np.zeros((0, 384), dtype=np.float32)))
    assert empty.score(unit_rows(rng, 1)[0]).shape == (0,)


def test_a_column_major_matrix_is_scored_without_a_copy() -> None:
    rng = np.random.default_rng(13)
    quantized = quantize(unit_rows(rng, 50))
    column_major = type(quantized)(np.asfortranarray(quantized.values), quantized.scales)
    scorer = Int8Scorer(column_major)
    assert np.shares_memory(scorer._columns, column_major.values)
    query = unit_rows(rng, 1)[0]
    np.testing.assert_array_equal(scorer.score(query), Int8Scorer(quantized).score(query))


def test_a_packed_matrix_scores_bit_for_bit_as_its_rows_gathered() -> None:
    rng = np.random.default_rng(17)
    values = np.concatenate(
        [
            rng.choice(np.array([-127, 127], dtype=np.int8), size=(64, 384)),
            rng.integers(-127, 128, size=(3000, 384), dtype=np.int8),
        ]
    )
    quantized = quantize(values.astype(np.float32))
    read_only = type(quantized)(np.asfortranarray(quantized.values), quantized.scales)
    read_only.values.setflags(write=False)  # as a memory-mapped build is
    packed, rows = Int8Scorer(read_only), Int8Rows(quantized)  # the same integers, by the signed kernel
    assert np.shares_memory(packed._columns, read_only.values)
    for query in unit_rows(rng, 20):
        np.testing.assert_array_equal(packed.score(query), rows.score(query))
