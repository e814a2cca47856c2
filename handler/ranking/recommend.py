"""One call into the ranking core per task: query formation, its embeddings, the ranking and the no match.

Select and ``toolrec eval`` both answer a task through ``recommend``, and ``toolrec calibrate-score`` reads the
same ranking through ``ranked``, so what is measured and fit is what an agent receives (PRODUCT.md §5: C@5 at
``top_k`` 5, the no match applied).
"""

from __future__ import annotations

from handler.ranking.arrays import BoolArray, FloatArray
from handler.ranking.confidence import SHIPPED, Calibration
from handler.ranking.query import Embedder, QueryText, embed_query, query_text
from handler.ranking.retriever import Method, Ranked, RankingIndex, Recommendation


def recommend(
    ranking: RankingIndex,
    embedder: Embedder,
    task: str,
    context: str | None,
    k: int,
    allowed: BoolArray | None = None,
    method: Method = Method.HYBRID,
    calibration: Calibration | None = SHIPPED,
) -> Recommendation:
    """Up to ``k`` allowed tools for the task, best first, or none when nothing allowed matches it."""
    query, vectors = _formed(ranking, embedder, task, context, method)
    return ranking.recommend(query.lexical, vectors, k, allowed, method, calibration)


def ranked(ranking: RankingIndex, embedder: Embedder, task: str, context: str | None, k: int) -> Ranked:
    """The k best tools for the task with what the score reads of them, before any refusal (hybrid)."""
    query, vectors = _formed(ranking, embedder, task, context, Method.HYBRID)
    return ranking.ranked(query.lexical, vectors, k)


def _formed(
    ranking: RankingIndex, embedder: Embedder, task: str, context: str | None, method: Method
) -> tuple[QueryText, FloatArray | None]:
    query = query_text(task, context, ranking.with_meanings)
    return query, None if method is Method.BM25 else embed_query(embedder, query)
