"""Ranking tools for one query over an index held in memory. Pure: arrays in, ranked indices out."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import numpy as np
import numpy.typing as npt

from handler.catalog.names import ToolNames
from handler.ranking.arrays import BoolArray, FloatArray, IntArray
from handler.ranking.bm25 import BM25Index
from handler.ranking.confidence import SHIPPED, Calibration, Signals, features
from handler.ranking.dense import DenseScorer
from handler.ranking.fusion import evidence_weight, reciprocal_rank_fusion
from handler.ranking.lexical import LexicalAnalysis, LexicalQuery
from handler.ranking.topk import top_k
from handler.ranking.usage import UsageEvidence, classifier_votes, companion_votes, with_past_tasks


class Method(StrEnum):
    HYBRID = "hybrid"
    BM25 = "bm25"
    DENSE = "dense"


@dataclass(frozen=True)
class Hit:
    index: int
    score: float
    semantic: float | None = None  # the tool's cosine with the query, when the query was embedded
    probability: float | None = None  # calibrated: that it is a right tool for the query (confidence.py)


@dataclass(frozen=True)
class Recommendation:
    hits: tuple[Hit, ...]  # best first; empty when nothing allowed matches (the calibrated no match)
    best_cosine: float | None  # the best cosine of any allowed tool; None when the query was not embedded

    @property
    def no_match(self) -> bool:
        return not self.hits


@dataclass(frozen=True)
class Ranked:
    chosen: list[int]  # the k best allowed tools, best first
    scores: FloatArray  # the ranking's, over every tool (-inf: not allowed)
    cosines: FloatArray | None  # None when the query was not embedded (BM25 alone)
    best: float | None  # the best cosine of any allowed tool
    named: bool  # the task names an allowed tool, or one holds half its words: never refused
    evidence: npt.NDArray[np.float64] | None  # one row of confidence.FEATURES per chosen tool


@dataclass(frozen=True)
class RankingIndex:
    names: Sequence[str]
    bm25: BM25Index
    dense: DenseScorer
    analyzer: Callable[[str], list[str]]
    usage: UsageEvidence | None = None  # what the tenant's agents ran before (ranking/usage.py); None: text alone
    lexicon: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # abbreviations (ranking/abbreviations.py)
    _resolver: ToolNames = field(init=False, repr=False, compare=False)
    _lexical: LexicalAnalysis = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # The one resolver of a spelling (handler/catalog/names.py): the build's own when it is given one.
        resolver = self.names if isinstance(self.names, ToolNames) else ToolNames(self.names)
        object.__setattr__(self, "_resolver", resolver)
        lexical = LexicalAnalysis(self.bm25.vocabulary, self.names, self.analyzer, self.lexicon)
        object.__setattr__(self, "_lexical", lexical)

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
        return list(self.recommend(query, query_vector, k, allowed, method, calibration=None).hits)

    def recommend(
        self,
        query: str,
        query_vector: FloatArray | None,
        k: int,
        allowed: BoolArray | None = None,
        method: Method = Method.HYBRID,
        calibration: Calibration | None = SHIPPED,
    ) -> Recommendation:
        """``rank``, each hit with its calibrated probability (confidence.py), and the no match decided on the best
        cosine of every allowed tool: a property of the query and the allowed tools, never of k (PRODUCT.md §2).
        With ``calibration`` None, no probability and no refusal."""
        found = self.ranked(query, query_vector, k, allowed, method)
        scores, cosines = found.scores, found.cosines
        if cosines is None or found.evidence is None or calibration is None:
            hits = (Hit(i, float(scores[i]), None if cosines is None else float(cosines[i])) for i in found.chosen)
            return Recommendation(tuple(hits), found.best)
        if found.best is not None and calibration.refuses(found.best) and not found.named:  # a named tool: never
            return Recommendation((), found.best)
        probability = calibration.probabilities(found.evidence).tolist()
        rows = zip(found.chosen, probability, strict=True)
        return Recommendation(tuple(Hit(i, float(scores[i]), float(cosines[i]), p) for i, p in rows), found.best)

    def ranked(
        self,
        query: str,
        query_vector: FloatArray | None,
        k: int,
        allowed: BoolArray | None = None,
        method: Method = Method.HYBRID,
    ) -> Ranked:
        """The k best allowed tools with what the score reads of them (confidence.py), before any refusal."""
        if allowed is None:
            allowed = np.ones(len(self), dtype=bool)
        lexical = self.lexical_query(query)  # analyzed once, read twice
        words = self.bm25.score_weighted(lexical.weights)
        held = self.bm25.terms_held(lexical.terms)
        scores, cosines = self._scores(words, held, len(lexical.terms), query_vector, allowed, method)
        usable = allowed & (scores > 0) if method is Method.BM25 else allowed
        scores = np.where(usable, scores, -np.inf).astype(np.float32)
        exact = self.exact_match(query)
        if exact is not None and not allowed[exact]:
            exact = None
        if exact is not None:
            scores[exact] = np.float32(scores[usable].max(initial=0.0) + 1.0)
        chosen = top_k(scores, k).tolist()
        if cosines is None or not chosen:
            best = None if cosines is None or not allowed.any() else float(cosines[allowed].max())
            return Ranked(chosen, scores, cosines, best, exact is not None, None)
        # A task half of whose words one allowed tool holds is in the catalog's own words ("find the open PRs
        # assigned to me"): a match even where the model's cosine is low for it. One shared word is not.
        named = exact is not None or (bool(lexical.terms) and int(held[allowed].max()) * 2 >= len(lexical.terms))
        parts = 0 if query_vector is None or query_vector.ndim == 1 else len(query_vector) - 1
        share = (held / max(len(lexical.terms), 1)).astype(np.float32)
        signals = Signals(words, cosines, scores, share, len(lexical.terms), parts, allowed)
        return Ranked(chosen, scores, cosines, float(cosines[allowed].max()), named, features(signals, chosen))

    def lexical_query(self, query: str) -> LexicalQuery:
        return self._lexical.query(query)

    def with_meanings(self, task: str) -> str:
        """The task as the embedder reads it here: with what its short forms mean in this catalog (lexical.py)."""
        return self._lexical.with_meanings(task)

    def _scores(
        self,
        words: FloatArray,
        held: IntArray,
        terms: int,
        query_vector: FloatArray | None,
        allowed: BoolArray,
        method: Method,
    ) -> tuple[FloatArray, FloatArray | None]:
        """The ranking scores from the lexical ones (and how many of the task's ``terms`` each tool holds), and the
        cosines they came from (None for BM25 alone)."""
        if method is Method.BM25:
            return words, None
        if query_vector is None:
            raise ValueError(f"the {method} method needs a query vector")
        semantic = self._semantic(query_vector)
        if method is Method.DENSE:
            return semantic, semantic
        lexical_weight = evidence_weight(words, held, terms, allowed)
        if self.usage is None:
            fused = reciprocal_rank_fusion(words, semantic, allowed, lexical_weight)
        else:
            task_vector = query_vector if query_vector.ndim == 1 else query_vector[0]
            past = self.usage.past_task_cosines(task_vector, len(semantic))
            lifted = with_past_tasks(semantic, self.usage, task_vector, past)
            fused = reciprocal_rank_fusion(words, lifted, allowed, lexical_weight)
            fused = fused + classifier_votes(self.usage, task_vector, past, allowed)
            fused = fused + companion_votes(self.usage, fused, allowed)
        # The no match and each hit's cosine stay the text's: usage reorders what the text finds, never more.
        return fused, semantic

    def _semantic(self, query_vector: FloatArray) -> FloatArray:
        """Cosines with the query; with several rows (a task and its parts, query.embed_query) a tool's best."""
        if query_vector.ndim == 1:
            return self.dense.score(query_vector)
        best = self.dense.score(query_vector[0])
        for row in query_vector[1:]:
            best = np.maximum(best, self.dense.score(row))
        return best
