"""Okapi BM25 with scores precomputed at build time (after bm25s): a query sums sparse term columns.

The index is a term-major sparse matrix: for term t, ``doc_ids[indptr[t]:indptr[t+1]]`` are the tools
containing it and ``weights[...]`` their full BM25 contribution ``idf(t) * tf*(k1+1) / (tf + k1*norm)``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from handler.ranking.arrays import FloatArray


@dataclass(frozen=True)
class BM25Params:
    k1: float = 1.2
    b: float = 0.75


@dataclass(frozen=True)
class BM25Index:
    vocabulary: dict[str, int]
    indptr: npt.NDArray[np.int64]
    doc_ids: npt.NDArray[np.int32]
    weights: FloatArray
    doc_count: int

    def score(self, query_terms: Iterable[str]) -> FloatArray:
        """BM25 score of every document; each distinct query term counts once."""
        return self.score_weighted(dict.fromkeys(query_terms, 1.0))

    def score_weighted(self, term_weights: Mapping[str, float]) -> FloatArray:
        """BM25 score of every document, each query term's contribution scaled by its weight."""
        scores = np.zeros(self.doc_count, dtype=np.float32)
        for term, weight in term_weights.items():
            term_id = self.vocabulary.get(term)
            if term_id is None or weight <= 0:
                continue
            start, end = self.indptr[term_id], self.indptr[term_id + 1]
            scores[self.doc_ids[start:end]] += np.float32(weight) * self.weights[start:end]
        return scores

    def term_scores(self, term_weights: Mapping[str, float], doc: int) -> dict[str, float]:
        """What ``score_weighted`` of one document is made of: each weighted query term it holds, with its share."""
        shares: dict[str, float] = {}
        for term, weight in term_weights.items():
            term_id = self.vocabulary.get(term)
            if term_id is None or weight <= 0:
                continue
            start, end = int(self.indptr[term_id]), int(self.indptr[term_id + 1])
            at = start + int(np.searchsorted(self.doc_ids[start:end], doc))  # a posting list is ascending
            if at < end and self.doc_ids[at] == doc:
                shares[term] = float(np.float32(weight) * self.weights[at])
        return shares

    def terms_held(self, query_terms: Iterable[str]) -> npt.NDArray[np.int32]:
        """How many of the distinct query terms each document holds."""
        held = np.zeros(self.doc_count, dtype=np.int32)
        for term in dict.fromkeys(query_terms):
            term_id = self.vocabulary.get(term)
            if term_id is not None:
                held[self.doc_ids[self.indptr[term_id] : self.indptr[term_id + 1]]] += 1
        return held


def build_bm25(documents: Sequence[Sequence[str]], params: BM25Params = BM25Params()) -> BM25Index:
    """Precompute every (term, document) BM25 weight, with Lucene's idf log(1 + (N - df + .5)/(df + .5))."""
    doc_count = len(documents)
    lengths = np.array([len(d) for d in documents], dtype=np.float64)
    avg_length = float(lengths.mean()) if doc_count and lengths.sum() > 0 else 1.0
    vocabulary: dict[str, int] = {}
    postings: list[list[tuple[int, int]]] = []
    for doc_id, terms in enumerate(documents):
        for term, tf in Counter(terms).items():
            term_id = vocabulary.setdefault(term, len(vocabulary))
            if term_id == len(postings):
                postings.append([])
            postings[term_id].append((doc_id, tf))
    indptr = np.zeros(len(postings) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(p) for p in postings])
    doc_ids = np.empty(int(indptr[-1]), dtype=np.int32)
    weights = np.empty(int(indptr[-1]), dtype=np.float32)
    for term_id, plist in enumerate(postings):
        ids = np.array([d for d, _ in plist], dtype=np.int64)
        tfs = np.array([tf for _, tf in plist], dtype=np.float64)
        df = len(plist)
        idf = np.log1p((doc_count - df + 0.5) / (df + 0.5))
        norm = params.k1 * (1 - params.b + params.b * lengths[ids] / avg_length)
        start, end = indptr[term_id], indptr[term_id + 1]
        doc_ids[start:end] = ids
        weights[start:end] = idf * tfs * (params.k1 + 1) / (tfs + norm)
    return BM25Index(vocabulary, indptr, doc_ids, weights, doc_count)
