"""The build step: tools -> index text -> embeddings (int8) + precomputed BM25 -> a BuiltIndex."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import TypeVar

import numpy as np

from build_index.ingest.catalog_files import MAX_REPORTED
from handler.catalog.json_limits import catalog_schema_problems
from handler.catalog.names import DEFAULT_NAMESPACE, describe_collisions, describe_reserved
from handler.catalog.tool import Tool
from handler.errors import CatalogError
from handler.index.format import BuiltIndex, ModelRef
from handler.inference.embedder import OnnxEmbedder
from handler.ranking.analyzer import Analyzer
from handler.ranking.arrays import FloatArray
from handler.ranking.bm25 import BM25Params, build_bm25
from handler.ranking.dense import quantize
from handler.ranking.query import Embedder
from handler.ranking.text import index_text

PROGRESS_MIN_TOOLS = 200
# Below this many texts a worker pool costs more (each worker loads the model, ~0.3 s) than it saves.
PARALLEL_MIN_TOOLS = 2000
CHUNK = 256
T = TypeVar("T")


def index_tools(
    tools: Sequence[Tool],
    embedder: Embedder,
    model_id: str,
    analyzer: Analyzer | None = None,
    bm25_params: BM25Params | None = None,
    progress: bool = True,
    model_dir: Path | None = None,
    workers: int = 1,
    namespace: str = DEFAULT_NAMESPACE,
) -> BuiltIndex:
    """Index a catalog. With ``model_dir`` and ``workers`` > 1, large catalogs embed in worker processes.
    ``namespace``: the deployment's (``TOOLREC_MCP_NAMESPACE``), whose own tools' names no catalog tool may take."""
    names = [tool.name for tool in tools]
    problem = describe_collisions(names) or describe_reserved(names, namespace)
    if problem is not None:  # read_catalogs names the rows; this holds for tools that arrive any other way
        raise CatalogError(f"nothing was built: {problem}")
    check_schemas(tools)
    analyzer = analyzer or Analyzer()
    bm25_params = bm25_params or BM25Params()
    texts = [index_text(tool.name, tool.description) for tool in tools]
    vectors = embed_texts(texts, embedder, progress, model_dir, workers)
    bm25 = build_bm25([analyzer(text) for text in texts], bm25_params)
    model = ModelRef(model_id=model_id, fingerprint=embedder.fingerprint, dimensions=embedder.dimensions)
    return BuiltIndex(tools, quantize(vectors), bm25, analyzer, bm25_params, model)


def embed_texts(
    texts: Sequence[str],
    embedder: Embedder,
    progress: bool = False,
    model_dir: Path | None = None,
    workers: int = 1,
    what: str = "tools",
) -> FloatArray:
    """One unit vector per text, as the query path embeds one; many texts embed in worker processes."""
    if model_dir is not None and workers > 1 and len(texts) >= PARALLEL_MIN_TOOLS:
        return _embed_in_workers(texts, model_dir, workers, progress, what)
    vectors = np.empty((len(texts), embedder.dimensions), dtype=np.float32)
    for i, text in enumerate(_progress(texts, len(texts), progress, what=what)):
        vectors[i] = embedder.embed(text)
    return vectors


def check_schemas(tools: Sequence[Tool]) -> None:
    """Refuse input schemas that execute could not check offline (a remote ``$ref``, absurd nesting) or that no
    answer could carry (past MAX_SCHEMA_BYTES), naming each tool and where: every catalog source (files,
    ``--from-mcp``) is built here, and a schema is copied verbatim."""
    problems = [
        f"{tool.name}: input_schema{problem}"
        for tool in tools
        for problem in catalog_schema_problems(tool.input_schema)
    ]
    if problems:
        shown = "\n  ".join(problems[:MAX_REPORTED])
        more = f"\n  ... and {len(problems) - MAX_REPORTED} more" if len(problems) > MAX_REPORTED else ""
        raise CatalogError(f"{len(problems)} input_schema problem(s); nothing was built:\n  {shown}{more}")


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)))


_worker_embedder: OnnxEmbedder | None = None


def _init_worker(model_dir: Path) -> None:
    global _worker_embedder  # noqa: PLW0603 - one embedder per worker process, loaded once
    # Ctrl-C reaches the whole process group: the parent stops the build (and the pool), each worker printing its
    # own KeyboardInterrupt traceback would only bury the one line that says so (issue 33 item 12).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker_embedder = OnnxEmbedder(model_dir, threads=1, verify=False)


def _embed_chunk(texts: list[str]) -> FloatArray:
    assert _worker_embedder is not None
    return np.stack([_worker_embedder.embed(text) for text in texts])


def _embed_in_workers(texts: Sequence[str], model_dir: Path, workers: int, progress: bool, what: str) -> FloatArray:
    """One text at a time in each worker (so vectors equal the query path's), chunks merged in order."""
    chunks = [list(texts[i : i + CHUNK]) for i in range(0, len(texts), CHUNK)]
    pool = ProcessPoolExecutor(workers, initializer=_init_worker, initargs=(model_dir,))
    try:
        parts = list(_progress(pool.map(_embed_chunk, chunks), len(chunks), progress, unit="chunk", what=what))
    finally:
        pool.shutdown(cancel_futures=True)  # interrupted: the chunks not started are dropped, not embedded first
    return np.concatenate(parts).astype(np.float32)


def _progress(items: Iterable[T], total: int, enabled: bool, unit: str = "text", what: str = "tools") -> Iterator[T]:
    if not enabled or total * (CHUNK if unit == "chunk" else 1) < PROGRESS_MIN_TOOLS:
        yield from items
        return
    from tqdm import tqdm

    yield from tqdm(items, total=total, desc=f"embedding {what}", unit=unit, file=sys.stderr, mininterval=1.0)
