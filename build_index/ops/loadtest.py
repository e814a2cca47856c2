"""``toolrec loadtest``: a bounded load test of ``toolrec serve`` on loopback.

It starts ``toolrec serve`` in a subprocess on a free 127.0.0.1 port (embedded default: the demo index and a policy
file under a fresh root), sends ``requests`` select requests from ``concurrency`` concurrent connections, and reports
errors, latency percentiles, the server's resident memory at start, middle and end, and whether the query log
(``policy.queries.jsonl``, appended by the file backend) holds exactly one record per request: nothing lost.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import statistics
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

from build_index.ops.loopback import serve_subprocess
from handler.policy.file_store import query_log_file
from handler.policy.keys import generate_key

TASKS = (
    "send a message to the team channel",
    "let the team know the deploy finished",
    "create an issue for the login bug",
    "schedule a meeting tomorrow at 10",
    "refund the last payment",
    "find the open pull requests",
)
USER = "loadtest-user"
STARTUP_TIMEOUT_S = 180.0  # the first run builds the demo index
WARMUP_REQUESTS = 32  # onnxruntime and the allocators reach their working size before the first RSS sample


@dataclass
class LoadReport:
    requests: int
    concurrency: int
    errors: int
    statuses: dict[str, int]
    wall_s: float
    throughput_rps: float
    latency_ms: dict[str, float]
    rss_mb: dict[str, float]
    rss_growth_mb: float
    rss_bound_mb: float
    query_log: dict[str, int] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        log = self.query_log
        exact = log.get("records") == log.get("expected") and not log.get("missing") and not log.get("unexpected")
        return self.errors == 0 and exact and self.rss_growth_mb <= self.rss_bound_mb

    def as_json(self) -> dict[str, Any]:
        return {**asdict(self), "passed": self.passed}

    def lines(self) -> list[str]:
        lat, rss, log = self.latency_ms, self.rss_mb, self.query_log
        return [
            f"{self.requests} select requests at {self.concurrency} concurrent in {self.wall_s:.1f} s "
            f"({self.throughput_rps:.0f} req/s); errors: {self.errors}; statuses: {self.statuses}",
            f"latency ms: p50 {lat['p50']:.1f}  p90 {lat['p90']:.1f}  p99 {lat['p99']:.1f}  max {lat['max']:.1f}",
            f"server RSS MB: start {rss['start']:.1f}  middle {rss['middle']:.1f}  end {rss['end']:.1f}  "
            f"(growth middle->end {self.rss_growth_mb:+.1f}, bound {self.rss_bound_mb:.0f})",
            f"query log: {log['records']} records for {log['expected']} requests; missing {log['missing']}, "
            f"unexpected {log['unexpected']}, duplicated {log['duplicated']}",
            "PASS" if self.passed else "FAIL",
        ]


def rss_mb(pid: int) -> float:
    """Resident set size of a process (Linux /proc), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


@contextmanager
def served(root: Path, api_key: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``toolrec serve`` on a free loopback port under ``root``, until the block ends."""
    with serve_subprocess(["--root", str(root)], {"TOOLREC_API_KEY": api_key}, STARTUP_TIMEOUT_S) as running:
        yield running


@dataclass
class _Run:
    latencies_ms: list[float] = field(default_factory=list)
    statuses: Counter[str] = field(default_factory=Counter)
    query_ids: list[str] = field(default_factory=list)
    rss: dict[str, float] = field(default_factory=dict)


async def _drive(base: str, api_key: str, requests: int, concurrency: int, pid: int, run: _Run) -> None:
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    headers = {"Authorization": f"Bearer {api_key}"}
    numbers = itertools.count()
    async with httpx.AsyncClient(base_url=base, headers=headers, limits=limits, timeout=60) as client:

        async def worker() -> None:
            while (number := next(numbers)) < requests:
                body = {"tasks": [TASKS[number % len(TASKS)]], "user_id": USER, "top_k": 5}
                started = time.perf_counter()
                try:
                    response = await client.post("/v1/tools/select", json=body)
                    status = str(response.status_code)
                    if response.status_code == 200:
                        run.query_ids.append(response.json()["query_id"])
                except httpx.HTTPError as exc:
                    status = type(exc).__name__
                run.latencies_ms.append((time.perf_counter() - started) * 1000)
                run.statuses[status] += 1
                if len(run.latencies_ms) == requests // 2:
                    run.rss["middle"] = rss_mb(pid)

        await asyncio.gather(*(worker() for _ in range(concurrency)))


def _percentiles(values: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(values, n=100, method="inclusive") if len(values) > 1 else values * 99
    return {"p50": cuts[49], "p90": cuts[89], "p99": cuts[98], "max": max(values), "mean": statistics.fmean(values)}


def count_query_log(path: Path, offset: int, expected_ids: list[str]) -> dict[str, int]:
    """Compare the query log's records written after ``offset`` with the query ids the responses carried."""
    with path.open("rb") as stream:
        stream.seek(offset)
        lines = stream.read().decode("utf-8").splitlines()
    logged = [entry["record"]["query_id"] for entry in map(json.loads, lines) if entry["kind"] == "query"]
    expected, seen = set(expected_ids), set(logged)
    return {
        "records": len(logged),
        "expected": len(expected_ids),
        "missing": len(expected - seen),
        "unexpected": len(seen - expected),
        "duplicated": len(logged) - len(seen),
    }


def run_loadtest(requests: int, concurrency: int, root: Path | None = None, rss_bound_mb: float = 32.0) -> LoadReport:
    """Serve, warm up, load, and check; ``root`` keeps the demo index between runs (default: a fresh temp dir)."""
    if requests < 2 or concurrency < 1:
        raise ValueError("loadtest needs at least 2 requests and 1 connection")
    with tempfile.TemporaryDirectory(prefix="toolrec-loadtest-") as scratch:
        root = root or Path(scratch)
        log_path = query_log_file(root / "policy.json")
        offset = log_path.stat().st_size if log_path.exists() else 0  # count this run's records only
        api_key = generate_key()
        with served(root, api_key) as (base, process):
            warmup = _Run()
            asyncio.run(_drive(base, api_key, WARMUP_REQUESTS, min(concurrency, WARMUP_REQUESTS), process.pid, warmup))
            run = _Run(rss={"start": rss_mb(process.pid)})
            started = time.perf_counter()
            asyncio.run(_drive(base, api_key, requests, concurrency, process.pid, run))
            wall = time.perf_counter() - started
            run.rss["end"] = rss_mb(process.pid)
        log = count_query_log(log_path, offset, warmup.query_ids + run.query_ids)
    errors = sum(count for status, count in (run.statuses + warmup.statuses).items() if status != "200")
    return LoadReport(
        requests=requests,
        concurrency=concurrency,
        errors=errors,
        statuses=dict(run.statuses),
        wall_s=round(wall, 3),
        throughput_rps=round(requests / wall, 1),
        latency_ms={k: round(v, 2) for k, v in _percentiles(run.latencies_ms).items()},
        rss_mb={k: round(v, 1) for k, v in run.rss.items()},
        rss_growth_mb=round(run.rss["end"] - run.rss["middle"], 1),
        rss_bound_mb=rss_bound_mb,
        query_log=log,
    )
