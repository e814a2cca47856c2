"""`toolrec bench`'s warm variant: the 10k-tool index with a usage log of 100k executions folded in."""

from __future__ import annotations

import random
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from build_index.bench.catalog import grow_catalog
from build_index.build import default_workers, embed_texts
from build_index.publish import publish
from build_index.usage.fold import ExecutionGroup, UsageLog, fold_usage
from handler.index.format import BUILDS, LATEST, USAGE_ARRAYS
from handler.index.load import load_build, rebuild_of
from handler.index.store import LocalIndexStore
from handler.inference.embedder import OnnxEmbedder

EXECUTIONS = 100_000
WORDINGS = 40  # ways each query is asked: about 20k distinct tasks in 100k executions


def synthetic_log(tool_names: Sequence[str], queries: Sequence[str], executions: int = EXECUTIONS) -> UsageLog:
    """Executions of benchmark queries (reworded) with one to three tools each, spread over every tool: the
    serving cost's worst case (every tool holds past tasks, so each query scores one usage row per tool)."""
    rng = random.Random(2)  # noqa: S311 - a fixed, reproducible log, not a secret
    groups = []
    for number in range(executions):
        task = f"{rng.choice(queries)} (request {rng.randrange(WORDINGS)})"
        tools = tuple(rng.sample(tool_names, rng.randint(1, 3)))
        groups.append(ExecutionGroup(task, tools, user_id=f"user{number % 500}"))
    return UsageLog(groups)


def warm_index(
    index_dir: Path, size: int, embedder: OnnxEmbedder, model_dir: Path, queries: Sequence[str]
) -> tuple[Path, dict[str, Any]]:
    """The size's cold index republished with the synthetic log: where it is, and what folding it cost."""
    tools = grow_catalog(size)
    names = [t.name for t in tools]
    store = LocalIndexStore(index_dir)
    started = time.perf_counter()
    directory = store.fetch(store.latest_build_id(), index_dir)
    cold = rebuild_of(directory, load_build(directory, embedder.fingerprint), tools)
    workers = default_workers()
    usage = fold_usage(
        synthetic_log(names, queries),
        names,
        lambda texts: embed_texts(texts, embedder, False, model_dir, workers),
        "bench",
    )
    target = Path(tempfile.mkdtemp(prefix="toolrec-bench-warm-"))
    publish(replace(cold, usage=usage), str(target))
    build = target / BUILDS / (target / LATEST).read_text().strip()
    usage_bytes = sum((build / f"{name}.npy").stat().st_size for name in USAGE_ARRAYS)
    figures: dict[str, Any] = {
        "executions": EXECUTIONS,
        "distinct_tasks": usage[1].distinct_tasks,
        "tools_with_usage": usage[1].tools_with_usage,
        "fold_and_publish_s": round(time.perf_counter() - started, 2),
        "usage_mb": round(usage_bytes / 2**20, 2),
    }
    return target, figures
