"""One call into the ranking core per task: query formation, its embeddings, the ranking and the no match.

Select and ``toolrec eval`` both answer a task through ``recommend``, so what eval measures is what an agent
receives (PRODUCT.md §5: C@5 at ``top_k`` 5, the no match applied).
"""

from __future__ import annotations

from handler.ranking.arrays import BoolArray
from handler.ranking.confidence import SHIPPED, Calibration
from handler.ranking.query import Embedder, embed_query, query_text
from handler.ranking.retriever import Method, RankingIndex, Recommendation


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
    query = query_text(task, context)
    vectors = None if method is Method.BM25 else embed_query(embedder, query)
    return ranking.recommend(query.lexical, vectors, k, allowed, method, calibration)
