"""The build step: tools -> index text -> embeddings (int8) + precomputed BM25 -> a BuiltIndex."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import numpy as np

from handler.catalog import Tool
from handler.embedder import Embedder
from handler.index_format import BuiltIndex, ModelRef
from handler.ranking.analyzer import Analyzer
from handler.ranking.bm25 import BM25Params, build_bm25
from handler.ranking.dense import quantize
from handler.ranking.text import index_text

PROGRESS_MIN_TOOLS = 200


def build_index(
    tools: Sequence[Tool],
    embedder: Embedder,
    model_id: str,
    analyzer: Analyzer | None = None,
    bm25_params: BM25Params | None = None,
    progress: bool = True,
) -> BuiltIndex:
    analyzer = analyzer or Analyzer()
    bm25_params = bm25_params or BM25Params()
    texts = [index_text(tool.name, tool.description) for tool in tools]
    vectors = np.empty((len(texts), embedder.dimensions), dtype=np.float32)
    for i, text in enumerate(_progress(texts, enabled=progress and len(texts) >= PROGRESS_MIN_TOOLS)):
        vectors[i] = embedder.embed(text)
    bm25 = build_bm25([analyzer(text) for text in texts], bm25_params)
    model = ModelRef(model_id=model_id, fingerprint=embedder.fingerprint, dimensions=embedder.dimensions)
    return BuiltIndex(tools, quantize(vectors), bm25, analyzer, bm25_params, model)


def _progress(texts: Sequence[str], enabled: bool) -> Sequence[str]:
    if not enabled:
        return texts
    from tqdm import tqdm

    return tqdm(texts, desc="embedding tools", unit="tool", file=sys.stderr, mininterval=1.0)  # type: ignore[no-any-return]
