"""The benchmark runner behind `toolrec bench`."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from build_index.bench.catalog import action_tasks, bench_queries, grow_catalog
from build_index.bench.report import headline
from build_index.bench.starts import KEY, cold_start, deployment_env, moto_s3
from build_index.build import default_workers, index_tools
from build_index.model_prepare import MODEL_ID
from build_index.ops.loopback import serve_subprocess
from build_index.publish import publish
from handler.api.schemas import MAX_TASK_CHARS
from handler.index.format import BUILDS, LATEST
from handler.inference.embedder import OnnxEmbedder

CACHE = Path.home() / ".cache" / "toolrec" / "bench"
Figures = dict[str, Any]


def percentiles(samples_ms: Sequence[float]) -> Figures:
    ordered = sorted(samples_ms)
    return {
        "p50_ms": round(statistics.median(ordered), 3),
        "p99_ms": round(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 3),
        "spread_ms": round(ordered[int(0.9 * len(ordered))] - ordered[int(0.1 * len(ordered))], 3),
    }


def timed(call: Callable[[str], object], queries: Sequence[str], warmup: int = 20) -> Figures:
    for query in queries[:warmup]:
        call(query)
    samples = []
    for query in queries:
        started = time.perf_counter()
        call(query)
        samples.append(1000 * (time.perf_counter() - started))
    return percentiles(samples)


def build_timed(size: int, target: Path, embedder: OnnxEmbedder, model_dir: Path) -> float:
    tools = grow_catalog(size)
    started = time.perf_counter()
    publish(index_tools(tools, embedder, MODEL_ID, model_dir=model_dir, workers=default_workers()), str(target))
    return time.perf_counter() - started


def cached_index(size: int, embedder: OnnxEmbedder, model_dir: Path) -> tuple[Path, float | None]:
    """The size's index, built once per model and code version; the build time when built now (and then also
    recorded beside the cache, see recorded_build)."""
    root = cache_root(size, embedder.fingerprint)
    if (root / LATEST).is_file():
        return root, None
    seconds = build_timed(size, root, embedder, model_dir)
    record_build(root, seconds, f"timed by toolrec bench on {machine()}, {default_workers()} build workers")
    return root, seconds


def cache_root(size: int, model_fingerprint: str) -> Path:
    """Where the size's cached index lives: keyed by the model and by what decides the build's contents (the tools'
    text, the analyzer, the bench catalog, the format, and a large build's coarse layout)."""
    from build_index.bench import catalog
    from handler.index.format import SCHEMA_VERSION, expected_files
    from handler.ranking import analyzer, coarse, text

    version = hashlib.sha256(b"".join(Path(m.__file__ or "").read_bytes() for m in (text, analyzer, catalog)))
    version.update(str(SCHEMA_VERSION).encode())
    if size >= coarse.COARSE_MIN_TOOLS:  # a large build's files and codes (a smaller build's key is what it was)
        files = expected_files(SCHEMA_VERSION, with_coarse=True, with_coarse_moments=True)
        version.update(f"{sorted(files)} {coarse.COARSE_DIMENSIONS}".encode())
    return CACHE / f"n{size}-{model_fingerprint[:10]}-{version.hexdigest()[:12]}"


def build_record_path(root: Path) -> Path:
    """Beside the cached index, not in it: the whole index directory is what the S3 cold start uploads."""
    return root.with_name(f"{root.name}.build.json")


def record_build(root: Path, seconds: float, how: str) -> None:
    """Keep a cached index's build time, so a later run reading the cache reports it (issue #27's ``build_s_1m``:
    a 1M build takes most of an hour, and is not redone per run)."""
    recorded_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    build_record_path(root).write_text(
        json.dumps({"build_s": round(seconds, 2), "recorded_at": recorded_at, "how": how})
    )


def build_figure(root: Path, built_s: float | None) -> Figures:
    """The size's build time and where it comes from: this run, the record kept with the cache, or nowhere."""
    if built_s is not None:
        return {"seconds": round(built_s, 2), "source": "this run"}
    record = build_record_path(root)
    if not record.is_file():
        return {"seconds": None, "source": "cached by a run that kept no build time"}
    kept = json.loads(record.read_text())
    return {"seconds": kept["build_s"], "source": f"recorded {kept['recorded_at']} when it was cached: {kept['how']}"}


def index_bytes(root: Path) -> int:
    build = root / BUILDS / (root / LATEST).read_text().strip()
    return sum(path.stat().st_size for path in build.iterdir())


@contextmanager
def embedded(index_dir: Path) -> Iterator[Any]:
    """The app `toolrec serve` runs (same composition root), over a benchmark index and an open policy."""
    from build_index.ops.serve import embedded_app, ensure_policy, open_access

    with tempfile.TemporaryDirectory() as tmp:
        policy = Path(tmp) / "policy.json"
        ensure_policy(policy, KEY, open_access())  # a new file for another catalog than the demo's starts empty
        app, _ = embedded_app(Path(tmp), KEY, index=str(index_dir), policy=policy)
        yield app


def in_process(app: Any, queries: Sequence[str]) -> Figures:
    from build_index.ops.serve import DEMO_USER
    from handler.policy.model import Principal
    from handler.ranking.query import embed_query, query_text
    from handler.services.access import Caller
    from handler.services.container import Services

    services: Services = app.state.services
    principal = Principal(key_id="bench")

    def caller() -> Caller:  # resolved per request, as a route does
        return services.access.caller(principal, DEMO_USER, "default")

    def select(task: str) -> object:
        return services.finder.select(caller(), [task], None, 5)

    def embed(task: str) -> object:  # the embedding a one-step select makes of its task (its parts included)
        ranking = services.holder.current().ranking
        return embed_query(services.finder.embedder, query_text(task, None, ranking.with_meanings))

    return {
        "select": timed(select, queries),
        "select_action": timed(select, action_tasks(queries)),
        "embed_action": timed(embed, action_tasks(queries)),
        "bm25": timed(lambda q: services.finder.search(caller(), q, 5), queries),
    }


def over_http(index_dir: Path, workdir: Path, queries: Sequence[str], startup_timeout_s: float = 60) -> Figures:
    """``toolrec serve`` (uvicorn) in its own process on 127.0.0.1, as a client would reach it: the client's
    time (httpx in this process) is not charged to the server's interpreter."""
    import httpx

    from build_index.ops.serve import DEMO_USER

    env = deployment_env(str(index_dir), workdir)
    args = ["--root", str(workdir / "serve"), "--index", str(index_dir), "--policy", env["TOOLREC_POLICY_FILE"]]
    env = {**env, "TOOLREC_API_KEY": KEY}
    headers = {"authorization": f"Bearer {KEY}"}
    with (
        serve_subprocess(args, env, startup_timeout_s) as (url, _),
        httpx.Client(base_url=url, headers=headers, timeout=30) as client,
    ):

        def select(query: str) -> None:
            body = {"tasks": [query], "user_id": DEMO_USER, "gateway_id": "default"}
            client.post("/v1/tools/select", json=body).raise_for_status()

        def search(query: str) -> None:
            body = {"query": query, "user_id": DEMO_USER, "gateway_id": "default", "top_k": 5}
            client.post("/v1/tools/search", json=body).raise_for_status()

        return {
            "select": timed(select, queries),
            "select_action": timed(select, action_tasks(queries)),
            "bm25": timed(search, queries),
        }


LARGE = 1_000_000  # issue #27's size: where the 10k-only steps stop and the cold starts get fewer


@dataclass(frozen=True)
class Plan:
    """What the bench measures at one size, beside select, search and HTTP, which it measures at every size."""

    cold_start_runs: int
    s3: bool  # cold start from S3 on moto_server, besides the one from a local directory
    warm: bool  # the usage variant (docs/quality.md, "Cost")
    notes: tuple[str, ...] = ()


def plan(size: int, large_from: int = LARGE) -> Plan:
    """10k: three cold starts from each source and the warm variant, as issue #7 asked. From 1M (issue #27): S3,
    since that is how a deployment starts and the download is most of the start, and one start per source, since
    each reads the whole index (~1 GB); no warm variant, which folds 100k executions and republishes the index
    (its cost at 10k is in docs/quality.md)."""
    if size >= large_from:
        notes = (
            "1 cold start per source at this size (3 below it): each reads the whole index",
            "no warm variant at this size (it republishes the index with 100k executions; measured at 10,000)",
        )
        return Plan(cold_start_runs=1, s3=True, warm=False, notes=notes)
    return Plan(cold_start_runs=3, s3=size == 10_000, warm=size == 10_000)


def run(sizes: Sequence[int], query_count: int, time_build: bool = True, large_from: int = LARGE) -> Figures:
    from handler.inference.model_files import default_model_dir

    model_dir = default_model_dir()
    embedder = OnnxEmbedder(model_dir, threads=1)
    queries, over_limit = bench_queries(query_count)
    if over_limit:  # stdout is stderr here (cmd_bench): said in the report's mode and in --json's
        print(f"skipped {over_limit} benchmark queries longer than a task may be ({MAX_TASK_CHARS} characters)")
    figures: Figures = {
        "machine": machine(),
        "queries": len(queries),
        "queries_skipped_over_task_limit": over_limit,
        "intra_op_threads": 1,
        "sizes": {},
    }
    for size in sizes:
        figures["sizes"][str(size)] = measure_size(size, plan(size, large_from), embedder, model_dir, queries)
    if time_build:
        with tempfile.TemporaryDirectory() as tmp:
            figures["build_s_10k"] = round(build_timed(10_000, Path(tmp), embedder, model_dir), 2)
    figures.update(headline(figures))
    return figures


def measure_size(size: int, steps: Plan, embedder: OnnxEmbedder, model_dir: Path, queries: Sequence[str]) -> Figures:
    index_dir, built_s = cached_index(size, embedder, model_dir)
    row: Figures = {"index_mb": round(index_bytes(index_dir) / 2**20, 2), "build": build_figure(index_dir, built_s)}
    row["in_process"] = in_process_figures(index_dir, queries)
    gc.collect()  # the in-process app's index is gone before a subprocess loads its own: one index at a time
    cold_queries = queries[:200]
    with tempfile.TemporaryDirectory() as tmp:
        row["http"] = over_http(index_dir, Path(tmp), queries, startup_timeout_s=60 + size / 5_000)
        env = deployment_env(str(index_dir), Path(tmp))
        row["cold_start_local"] = cold_start(env, cold_queries, steps.cold_start_runs)
        if steps.s3:
            with moto_s3(index_dir) as s3_env:
                env = {**deployment_env(s3_env["TOOLREC_INDEX_LOCATION"], Path(tmp)), **s3_env}
                row["cold_start_s3"] = cold_start(env, cold_queries, steps.cold_start_runs)
    if steps.warm:
        row["warm"] = warm_variant(index_dir, size, embedder, model_dir, queries)
    if steps.notes:
        row["notes"] = list(steps.notes)
    return row


def in_process_figures(index_dir: Path, queries: Sequence[str]) -> Figures:
    """In a function of its own so that the app, and the index it holds, are released when it returns."""
    with embedded(index_dir) as app:
        return in_process(app, queries)


def warm_variant(
    index_dir: Path, size: int, embedder: OnnxEmbedder, model_dir: Path, queries: Sequence[str]
) -> Figures:
    """The same index with 100k executions of usage (docs/quality.md, "Cost"): one-action selects on the cold
    and the warm index taken in turns, query by query, so the machine's drift between two runs is not charged to
    usage."""
    import shutil

    from build_index.bench.usage import warm_index
    from build_index.ops.serve import DEMO_USER
    from handler.policy.model import Principal
    from handler.services.container import Services

    warm_dir, figures = warm_index(index_dir, size, embedder, model_dir, queries)
    principal = Principal(key_id="bench")
    try:
        with embedded(index_dir) as cold_app, embedded(warm_dir) as warm_app:
            apps: dict[str, Services] = {"cold": cold_app.state.services, "warm": warm_app.state.services}
            samples: dict[str, list[float]] = {"cold": [], "warm": []}
            tasks = action_tasks(queries)
            for number, task in enumerate(tasks):
                for name, services in apps.items():
                    started = time.perf_counter()
                    services.finder.select(services.access.caller(principal, DEMO_USER, "default"), [task], None, 5)
                    if number >= 20:  # the first ones warm the caches
                        samples[name].append(1000 * (time.perf_counter() - started))
    finally:
        shutil.rmtree(warm_dir, ignore_errors=True)
    figures["select_action"] = {name: percentiles(values) for name, values in samples.items()}
    differences = [w - c for w, c in zip(samples["warm"], samples["cold"], strict=True)]
    figures["select_action_added_ms_p50"] = round(statistics.median(differences), 3)
    return figures


def machine() -> str:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        "unknown CPU",
    )
    return f"{cpu}, {len(os.sched_getaffinity(0))} cores, Python {sys.version.split()[0]}"
