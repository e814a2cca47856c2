"""The fixed baseline "past BM25" is measured against (PRODUCT.md §5): plain bm25s with ToolRet's settings.

bm25s 0.2.5, Lucene variant, k1 1.5, b 0.75, its English stopwords, no stemming, over "{name}: {first line}";
a query left with no term becomes "none". It never changes when the product's own analyzer or BM25 does,
so a gap closed against it means the same from one change to the next. Ties keep catalog order.
"""

from __future__ import annotations

from collections.abc import Sequence

import bm25s
import numpy as np

from handler.ranking.text import first_line

K1 = 1.5
B = 0.75
EMPTY_QUERY = "none"


def reference_text(name: str, description: str) -> str:
    return f"{name}: {first_line(description)}"


class ReferenceBM25:
    def __init__(self, texts: Sequence[str]) -> None:
        self._retriever = bm25s.BM25(method="lucene", k1=K1, b=B)
        self._retriever.index(bm25s.tokenize(list(texts), stopwords="en", show_progress=False), show_progress=False)
        self._size = len(texts)

    def rank(self, query: str, k: int) -> list[int]:
        """The k best tools for the query, best first (catalog order among equal scores)."""
        terms = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0] or [EMPTY_QUERY]
        known = [t for t in terms if t in self._retriever.vocab_dict]
        scores = self._retriever.get_scores(known) if known else np.zeros(self._size)
        return [int(i) for i in np.argsort(-np.asarray(scores), kind="stable")[:k]]
