"""The benchmark runner behind `toolrec bench`."""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from build_index.bench.catalog import action_tasks, bench_queries, grow_catalog
from build_index.bench.report import headline
from build_index.build import default_workers, index_tools
from build_index.model_prepare import MODEL_ID
from build_index.ops.loopback import free_port, serve_subprocess
from build_index.publish import publish
from handler.api.schemas import MAX_TASK_CHARS
from handler.index.format import BUILDS, LATEST
from handler.inference.embedder import OnnxEmbedder

CACHE = Path.home() / ".cache" / "toolrec" / "bench"
KEY = "bench-key-0123456789"
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
    """The size's index, built once per model and code version; the build time when built now."""
    from build_index.bench import catalog
    from handler.index.format import SCHEMA_VERSION
    from handler.ranking import analyzer, text

    version = hashlib.sha256(b"".join(Path(m.__file__ or "").read_bytes() for m in (text, analyzer, catalog)))
    version.update(str(SCHEMA_VERSION).encode())
    root = CACHE / f"n{size}-{embedder.fingerprint[:10]}-{version.hexdigest()[:12]}"
    if (root / LATEST).is_file():
        return root, None
    return root, build_timed(size, root, embedder, model_dir)


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
    from handler.services.access import Caller
    from handler.services.container import Services

    services: Services = app.state.services
    principal = Principal(key_id="bench")

    def caller() -> Caller:  # resolved per request, as a route does
        return services.access.caller(principal, DEMO_USER, "default")

    def select(task: str) -> object:
        return services.finder.select(caller(), [task], None, 5)

    return {
        "select": timed(select, queries),
        "select_action": timed(select, action_tasks(queries)),
        "bm25": timed(lambda q: services.finder.search(caller(), q, 5), queries),
    }


def over_http(index_dir: Path, workdir: Path, queries: Sequence[str]) -> Figures:
    """``toolrec serve`` (uvicorn) in its own process on 127.0.0.1, as a client would reach it: the client's
    time (httpx in this process) is not charged to the server's interpreter."""
    import httpx

    from build_index.ops.serve import DEMO_USER

    env = deployment_env(str(index_dir), workdir)
    args = ["--root", str(workdir / "serve"), "--index", str(index_dir), "--policy", env["TOOLREC_POLICY_FILE"]]
    env = {**env, "TOOLREC_API_KEY": KEY}
    headers = {"authorization": f"Bearer {KEY}"}
    with serve_subprocess(args, env) as (url, _), httpx.Client(base_url=url, headers=headers, timeout=30) as client:

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


def cold_start(env: dict[str, str], queries: Sequence[str], runs: int = 3) -> Figures:
    """Median over ``runs`` fresh interpreters with a deployment's environment, each timed to its first answer."""
    samples = [_cold_start_once(env, queries) for _ in range(runs)]
    median: Figures = {
        name: round(statistics.median(s[name] for s in samples), 3)
        for name, value in samples[0].items()
        if isinstance(value, float)
    }
    starts = [s["process_start_to_first_answer_s"] for s in samples]
    return {**median, "runs": runs, "spread_s": round(max(starts) - min(starts), 3)}


def _cold_start_once(env: dict[str, str], queries: Sequence[str]) -> Figures:
    from build_index.ops.serve import DEMO_USER

    command = [sys.executable, "-m", "build_index.bench.coldstart", KEY, DEMO_USER, json.dumps(list(queries))]
    started = time.perf_counter()
    with subprocess.Popen(command, env={**os.environ, **env}, stdout=subprocess.PIPE, text=True) as process:  # noqa: S603
        assert process.stdout is not None
        first_line = process.stdout.readline()
        wall = time.perf_counter() - started
        rest = process.stdout.read()
    if first_line.strip() != "first-answer" or process.returncode != 0:
        raise RuntimeError(f"cold start run failed: {first_line}{rest}")
    figures: Figures = json.loads(rest)
    return {**figures, "process_start_to_first_answer_s": round(wall, 3)}


@contextmanager
def moto_s3(index_dir: Path) -> Iterator[dict[str, str]]:
    """moto_server on 127.0.0.1 holding a copy of the index; yields the environment pointing at it."""
    import boto3

    port = free_port()
    moto = Path(sys.executable).parent / "moto_server"
    env = {
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
    }
    with subprocess.Popen([str(moto), "-H", "127.0.0.1", "-p", str(port)], stderr=subprocess.DEVNULL) as server:  # noqa: S603
        try:
            client = boto3.client(
                "s3",
                endpoint_url=env["AWS_ENDPOINT_URL"],
                region_name="us-east-1",
                aws_access_key_id="bench",
                aws_secret_access_key="bench",  # noqa: S106 - moto accepts any credentials
            )
            _wait_for(client.list_buckets)
            client.create_bucket(Bucket="bench")
            for path in sorted(index_dir.rglob("*")):
                if path.is_file():
                    client.upload_file(str(path), "bench", f"index/{path.relative_to(index_dir)}")
            yield {**env, "TOOLREC_INDEX_LOCATION": "s3://bench/index"}
        finally:
            server.terminate()


def _wait_for(probe: Callable[[], object], timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            probe()
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def deployment_env(index_location: str, workdir: Path) -> dict[str, str]:
    from build_index.ops.serve import ensure_policy, open_access

    policy = workdir / "policy.json"
    ensure_policy(policy, KEY, open_access())
    cache = tempfile.mkdtemp(dir=workdir)  # empty: an S3 cold start downloads the build
    return {
        "TOOLREC_INDEX_LOCATION": index_location,
        "TOOLREC_POLICY_BACKEND": "file",
        "TOOLREC_POLICY_FILE": str(policy),
        "TOOLREC_INDEX_CACHE_DIR": cache,
        "TOOLREC_INTRA_OP_THREADS": "1",
        "TOOLREC_LOG_LEVEL": "WARNING",
    }


def run(sizes: Sequence[int], query_count: int, time_build: bool = True) -> Figures:
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
        index_dir, built_s = cached_index(size, embedder, model_dir)
        row: Figures = {"index_mb": round(index_bytes(index_dir) / 2**20, 2)}
        with embedded(index_dir) as app:
            row["in_process"] = in_process(app, queries)
        with tempfile.TemporaryDirectory() as tmp:
            row["http"] = over_http(index_dir, Path(tmp), queries)
            row["cold_start_local"] = cold_start(deployment_env(str(index_dir), Path(tmp)), queries[:200])
            if size == 10_000:
                with moto_s3(index_dir) as s3_env:
                    env = {**deployment_env(s3_env["TOOLREC_INDEX_LOCATION"], Path(tmp)), **s3_env}
                    row["cold_start_s3"] = cold_start(env, queries[:200])
        if built_s is not None:
            row["build_s_first_run"] = round(built_s, 2)
        if size == 10_000:
            row["warm"] = warm_variant(index_dir, size, embedder, model_dir, queries)
        figures["sizes"][str(size)] = row
    if time_build:
        with tempfile.TemporaryDirectory() as tmp:
            figures["build_s_10k"] = round(build_timed(10_000, Path(tmp), embedder, model_dir), 2)
    figures.update(headline(figures))
    return figures


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
