"""`toolrec calibrate-no-match`: the no-match threshold from real requests the model never trained on, and each
set's threshold from the others (leave one set out). The rule itself is handler/ranking/no_match.py."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from build_index.quality.evaluate import EVAL_CACHE, Query, answer, benchmark_queries, cached_index
from build_index.quality.training_split import unseen_by_model
from handler.ranking.no_match import calibrate
from handler.ranking.query import Embedder
from handler.ranking.retriever import Method


def best_cosines(
    directory: Path, embedder: Embedder, model_id: str, max_queries: int | None = None, cache: Path = EVAL_CACHE
) -> list[float]:
    """The best cosine of any of the set's tools with each of its queries the model never trained on."""
    loaded = cached_index(directory, embedder, model_id, cache)
    return [
        answer(loaded, embedder, q.text, Method.HYBRID, no_match_cosine=None, k=1).best_cosine or 0.0
        for q in calibration_queries(directory, max_queries)
    ]


def calibrate_no_match(
    set_dirs: Sequence[Path],
    embedder: Embedder,
    model_id: str,
    max_queries: int | None = None,
    cache: Path = EVAL_CACHE,
) -> dict[str, Any]:
    """The no-match threshold from the given sets: each set's queries the model never trained on
    (build_index/quality/training_split.py), ranked against the whole catalog exactly as select ranks them, give the
    best cosine of a real request; see handler/ranking/no_match.py. Also, for every set, the threshold the
    others give (leave one set out): the figure to report for that set. ``max_queries`` takes an evenly
    spaced, deterministic sample of a large set."""
    best = {d.name: best_cosines(d, embedder, model_id, max_queries, cache) for d in set_dirs}
    left_out = {}
    for name in best:
        others = {other: values for other, values in best.items() if other != name}
        try:
            left_out[name] = calibrate(others)
        except ValueError:
            continue  # the others are too small to vote without it
    return {
        "threshold": calibrate(best),
        "queries": {name: len(v) for name, v in best.items()},
        "threshold_without": left_out,
    }


def calibration_queries(set_dir: Path, max_queries: int | None = None) -> list[Query]:
    """The set's queries about tools the model was not trained on; with ``max_queries``, an evenly spaced,
    deterministic sample of them."""
    queries = [q for q in benchmark_queries(set_dir, with_instruction=False) if unseen_by_model(set_dir.name, q.groups)]
    if max_queries is not None and len(queries) > max_queries:
        step = len(queries) / max_queries
        queries = [queries[int(i * step)] for i in range(max_queries)]
    return queries
