"""Ranking tools for one query over an index held in memory. Pure: arrays in, ranked indices out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np

from handler.catalog.names import ToolNames
from handler.ranking.arrays import BoolArray, FloatArray
from handler.ranking.bm25 import BM25Index
from handler.ranking.catalog_words import CatalogWords
from handler.ranking.dense import DenseScorer
from handler.ranking.fusion import reciprocal_rank_fusion
from handler.ranking.no_match import NO_MATCH_COSINE
from handler.ranking.topk import top_k
from handler.ranking.usage import UsageEvidence, companion_votes, with_past_tasks


class Method(StrEnum):
    HYBRID = "hybrid"
    BM25 = "bm25"
    DENSE = "dense"


@dataclass(frozen=True)
class Hit:
    index: int
    score: float
    semantic: float | None = None  # the tool's cosine with the query, when the query was embedded


@dataclass(frozen=True)
class Recommendation:
    hits: tuple[Hit, ...]  # best first; empty when nothing allowed matches (the calibrated no match)
    best_cosine: float | None  # the best cosine of any allowed tool; None when the query was not embedded

    @property
    def no_match(self) -> bool:
        return not self.hits


@dataclass(frozen=True)
class RankingIndex:
    names: Sequence[str]
    bm25: BM25Index
    dense: DenseScorer
    analyzer: Callable[[str], list[str]]
    usage: UsageEvidence | None = None  # what the tenant's agents ran before (ranking/usage.py); None: text alone
    _resolver: ToolNames = field(init=False, repr=False, compare=False)
    _words: CatalogWords = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # The one resolver of a spelling (handler/catalog/names.py): the build's own when it is given one.
        resolver = self.names if isinstance(self.names, ToolNames) else ToolNames(self.names)
        object.__setattr__(self, "_resolver", resolver)
        object.__setattr__(self, "_words", CatalogWords(self.bm25.vocabulary, self.names, self.analyzer))

    def __len__(self) -> int:
        return len(self.names)

    def exact_match(self, query: str) -> int | None:
        return self._resolver.position(query)

    def rank(
        self,
        query: str,
        query_vector: FloatArray | None,
        k: int,
        allowed: BoolArray | None = None,
        method: Method = Method.HYBRID,
    ) -> list[Hit]:
        """The k best allowed tools for a query, best first; a disallowed tool never takes a slot.

        ``query_vector`` is the unit-length embedding of the query, or one row per part of it
        (query.embed_query); unused by BM25 alone, which returns only tools sharing a term with the query.
        A query equal to an allowed tool's name ranks it first.
        """
        return list(self.recommend(query, query_vector, k, allowed, method, no_match_cosine=None).hits)

    def recommend(
        self,
        query: str,
        query_vector: FloatArray | None,
        k: int,
        allowed: BoolArray | None = None,
        method: Method = Method.HYBRID,
        no_match_cosine: float | None = NO_MATCH_COSINE,
    ) -> Recommendation:
        """``rank``, with the calibrated no match decided over every allowed tool's cosine, not the k shown:
        a property of the query and the allowed tools, never of k (PRODUCT.md §2). ``None`` never refuses."""
        if allowed is None:
            allowed = np.ones(len(self), dtype=bool)
        terms = list(dict.fromkeys(self._words.expand(self.analyzer(query), query)))  # analyzed once, read twice
        scores, cosines = self._scores(terms, query_vector, allowed, method)
        usable = allowed & (scores > 0) if method is Method.BM25 else allowed
        scores = np.where(usable, scores, -np.inf).astype(np.float32)
        exact = self.exact_match(query)
        if exact is not None and not allowed[exact]:
            exact = None
        if exact is not None:
            scores[exact] = np.float32(scores[usable].max(initial=0.0) + 1.0)
        best = None if cosines is None or not allowed.any() else float(cosines[allowed].max())
        weak = no_match_cosine is not None and best is not None and best < no_match_cosine
        if weak and exact is None and not self._words_name_a_tool(terms, allowed):  # a named tool is never refused
            return Recommendation((), best)
        hits = (Hit(int(i), float(scores[i]), None if cosines is None else float(cosines[i])) for i in top_k(scores, k))
        return Recommendation(tuple(hits), best)

    def _scores(
        self, terms: list[str], query_vector: FloatArray | None, allowed: BoolArray, method: Method
    ) -> tuple[FloatArray, FloatArray | None]:
        """The ranking scores, and the cosines they came from (None for BM25 alone: no query vector)."""
        if method is Method.BM25:
            return self.bm25.score(terms), None
        if query_vector is None:
            raise ValueError(f"the {method} method needs a query vector")
        semantic = self._semantic(query_vector)
        if method is Method.DENSE:
            return semantic, semantic
        if self.usage is None:
            return reciprocal_rank_fusion(self.bm25.score(terms), semantic, allowed), semantic
        task_vector = query_vector if query_vector.ndim == 1 else query_vector[0]
        lifted = with_past_tasks(semantic, self.usage, task_vector)
        fused = reciprocal_rank_fusion(self.bm25.score(terms), lifted, allowed)
        fused = fused + companion_votes(self.usage, fused, allowed)
        # The no match and each hit's cosine stay the text's: usage reorders what the text finds, never more.
        return fused, semantic

    def _words_name_a_tool(self, terms: list[str], allowed: BoolArray) -> bool:
        """Whether one allowed tool holds at least half of the query's words (as the catalog words expand them):
        a short task in the catalog's own words ("find the open PRs assigned to me") is a match even where the
        model's cosine is low for it, so no-match never refuses it; an unrelated task sharing one word is not."""
        if not terms:
            return False
        held = self.bm25.terms_held(terms)
        return bool(allowed.any()) and int(held[allowed].max()) * 2 >= len(terms)

    def _semantic(self, query_vector: FloatArray) -> FloatArray:
        """Cosines with the query; with several rows (a task and its parts, query.embed_query) a tool's best."""
        if query_vector.ndim == 1:
            return self.dense.score(query_vector)
        best = self.dense.score(query_vector[0])
        for row in query_vector[1:]:
            best = np.maximum(best, self.dense.score(row))
        return best
