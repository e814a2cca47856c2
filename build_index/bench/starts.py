"""Cold starts for `toolrec bench`: fresh interpreters with a deployment's environment, reading the index from a
local directory or from S3 on moto_server (build_index/bench/coldstart.py is what each runs)."""

from __future__ import annotations

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

from build_index.ops.loopback import free_port

KEY = "bench-key-0123456789"
Figures = dict[str, Any]


def cold_start(env: dict[str, str], queries: Sequence[str], runs: int = 3) -> Figures:
    """Median over ``runs`` fresh interpreters with a deployment's environment, each timed to its first answer.

    Each run gets an empty index cache, as a new Lambda sandbox does: with one cache for all runs, an S3 start's
    later runs read the first run's download and timed a local start instead."""
    samples = []
    for _ in range(runs):
        with tempfile.TemporaryDirectory(dir=env["TOOLREC_INDEX_CACHE_DIR"]) as cache:
            samples.append(_cold_start_once({**env, "TOOLREC_INDEX_CACHE_DIR": cache}, queries))
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
    # The function logs to stdout as on Lambda (each select's line): the marker and the figures are read among them.
    with subprocess.Popen(command, env={**os.environ, **env}, stdout=subprocess.PIPE, text=True) as process:  # noqa: S603
        assert process.stdout is not None
        before = []
        for line in iter(process.stdout.readline, ""):
            if line.strip() == "first-answer":
                break
            before.append(line)
        wall = time.perf_counter() - started
        rest = process.stdout.read().splitlines()
    if not rest or process.returncode != 0:
        raise RuntimeError(f"cold start run failed (exit {process.returncode}): {''.join(before)}{rest}")
    figures: Figures = json.loads(rest[-1])
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
