"""What a build's arrays must be to fit its tools: their dtypes, shapes and the ranges of the ids and offsets they
hold, checked once at load so that a build no query can be answered from is refused there, and the previous build
keeps serving (issue 33 item 2: a build whose BM25 document ids named no tool loaded, then answered every select 500).

A checksum says a file is the one the manifest lists, not that the manifest's build is sound: a build edited by hand,
or written by a faulty tool, can list sha256 values of arrays that do not fit. Every check is one vectorized pass over
an array (min, max, a difference), never a Python loop over rows: it runs at cold start, on builds of a million tools.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from handler.errors import IntegrityError

Array = np.ndarray[Any, Any]
INT8, INT32, INT64, FLOAT32, FLOAT64 = (np.dtype(t) for t in (np.int8, np.int32, np.int64, np.float32, np.float64))


class Misfit:
    """Checks the arrays of one build, each refusal naming the build, the file and what was expected."""

    def __init__(self, build_id: str, tool_count: int) -> None:
        self.build_id = build_id
        self.tool_count = tool_count

    def fail(self, name: str, problem: str) -> IntegrityError:
        return IntegrityError(f"index {self.build_id}: {name} {problem}; the build does not fit its tools")

    def shaped(self, name: str, array: Array, dtype: np.dtype[Any], shape: tuple[int | None, ...]) -> None:
        """``shape``: None where any length fits."""
        fits = len(array.shape) == len(shape) and all(w in (None, h) for h, w in zip(array.shape, shape, strict=True))
        if array.dtype != dtype or not fits:
            wanted = ", ".join("any" if w is None else str(w) for w in shape)
            raise self.fail(f"{name}.npy", f"is {array.dtype}{list(array.shape)}, expected {dtype}[{wanted}]")

    def finite(self, name: str, array: Array) -> None:
        if array.size and not np.isfinite(array).all():
            raise self.fail(f"{name}.npy", "holds a value that is not a finite number")

    def tool_ids(self, name: str, array: Array) -> None:
        if array.size and (int(array.min()) < 0 or int(array.max()) >= self.tool_count):
            raise self.fail(f"{name}.npy", f"holds a tool id outside 0..{self.tool_count - 1}")

    def offsets(self, name: str, indptr: Array, length: int) -> None:
        """Row offsets into an array of ``length`` items: from 0 to ``length``, never decreasing."""
        if indptr[0] != 0 or indptr[-1] != length or bool((np.diff(indptr) < 0).any()):
            raise self.fail(f"{name}.npy", f"is not offsets rising from 0 to {length}")


def check_vectors(misfit: Misfit, arrays: Mapping[str, Array], dimensions: int) -> None:
    misfit.shaped("vectors", arrays["vectors"], INT8, (misfit.tool_count, dimensions))
    misfit.shaped("vector_scales", arrays["vector_scales"], FLOAT32, (misfit.tool_count,))
    misfit.finite("vector_scales", arrays["vector_scales"])


def check_bm25(misfit: Misfit, arrays: Mapping[str, Array], vocabulary: object) -> dict[str, int]:
    """The vocabulary (term -> id) once it and the postings fit: every id names one row of the postings."""
    if not isinstance(vocabulary, dict) or not all(type(i) is int for i in vocabulary.values()):
        raise misfit.fail("bm25_vocabulary.json", "is not an object of terms and their integer ids")
    terms = len(vocabulary)
    ids = np.fromiter(vocabulary.values(), dtype=np.int64, count=terms)
    if terms and (ids.min() < 0 or ids.max() >= terms or np.bincount(ids, minlength=terms).max() > 1):
        raise misfit.fail("bm25_vocabulary.json", f"does not number its {terms} terms 0..{terms - 1} once each")
    doc_ids = arrays["bm25_doc_ids"]
    misfit.shaped("bm25_indptr", arrays["bm25_indptr"], INT64, (terms + 1,))
    misfit.shaped("bm25_doc_ids", doc_ids, INT32, (None,))
    misfit.shaped("bm25_weights", arrays["bm25_weights"], FLOAT32, doc_ids.shape)
    misfit.offsets("bm25_indptr", arrays["bm25_indptr"], len(doc_ids))
    misfit.tool_ids("bm25_doc_ids", doc_ids)
    misfit.finite("bm25_weights", arrays["bm25_weights"])
    return vocabulary


def check_coarse(misfit: Misfit, arrays: Mapping[str, Array], dimensions: int, coarse_dimensions: int) -> None:
    misfit.shaped("coarse_codes", arrays["coarse_codes"], INT8, (misfit.tool_count, coarse_dimensions))
    misfit.shaped("coarse_scales", arrays["coarse_scales"], FLOAT32, (misfit.tool_count,))
    misfit.shaped("coarse_projection", arrays["coarse_projection"], FLOAT32, (dimensions, coarse_dimensions))
    misfit.shaped("coarse_mean", arrays["coarse_mean"], FLOAT32, (dimensions,))
    for name in ("coarse_scales", "coarse_projection", "coarse_mean"):
        misfit.finite(name, arrays[name])
    if "coarse_second_moment" in arrays:
        misfit.shaped("coarse_second_moment", arrays["coarse_second_moment"], FLOAT64, (dimensions, dimensions))
        misfit.finite("coarse_second_moment", arrays["coarse_second_moment"])


def check_usage(misfit: Misfit, arrays: Mapping[str, Array], dimensions: int, classifier: bool) -> None:
    rows = arrays["usage_tools"]
    misfit.shaped("usage_tools", rows, INT32, (None,))
    past = len(rows)
    misfit.shaped("usage_vectors", arrays["usage_vectors"], INT8, (past, dimensions))
    misfit.shaped("usage_scales", arrays["usage_scales"], FLOAT32, (past,))
    misfit.tool_ids("usage_tools", rows)
    misfit.finite("usage_scales", arrays["usage_scales"])
    companions = arrays["co_usage_tools"]
    misfit.shaped("co_usage_indptr", arrays["co_usage_indptr"], INT64, (misfit.tool_count + 1,))
    misfit.shaped("co_usage_tools", companions, INT32, (None,))
    misfit.shaped("co_usage_shares", arrays["co_usage_shares"], FLOAT32, companions.shape)
    misfit.offsets("co_usage_indptr", arrays["co_usage_indptr"], len(companions))
    misfit.tool_ids("co_usage_tools", companions)
    misfit.finite("co_usage_shares", arrays["co_usage_shares"])
    if classifier:
        misfit.shaped("usage_classifier", arrays["usage_classifier"], INT8, (past, dimensions))
        misfit.shaped("usage_classifier_scales", arrays["usage_classifier_scales"], FLOAT32, (past,))
        misfit.finite("usage_classifier_scales", arrays["usage_classifier_scales"])
