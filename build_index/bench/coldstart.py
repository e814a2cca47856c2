"""Cold start, measured in a fresh interpreter: process start -> first select answered through Mangum.

Run as ``python -m build_index.bench.coldstart`` with the TOOLREC_* environment of a deployment; it
prints one JSON object with the phases (import, model load, index load, app, first query), the number
of queries it then answered, and the peak RSS of the process.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from build_index.bench.events import load_event

STARTED = time.perf_counter()
SELECT = "/v1/tools/select"


class _Context:
    aws_request_id = "bench"

    @staticmethod
    def get_remaining_time_in_millis() -> int:
        return 30_000


def _peak_rss_kb() -> int:
    """This process's own peak RSS (Linux). Not ``ru_maxrss``: it survives fork + exec, so a child of a large
    parent (the bench holds its indexes and model) reports the parent's size (measured: 413 MB for a 14 MB child
    of a 400 MB parent). VmHWM belongs to the address space exec created."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    raise RuntimeError("no VmHWM in /proc/self/status")


def main() -> None:
    key, user, queries = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    phases: dict[str, float] = {}
    mark = time.perf_counter()

    def phase(name: str) -> None:
        nonlocal mark
        now = time.perf_counter()
        phases[name] = round(now - mark, 4)
        mark = now

    from mangum import Mangum

    from handler.app import create_app
    from handler.composition import build_policy_store
    from handler.index.holder import IndexHolder
    from handler.index.store import open_store
    from handler.inference.embedder import OnnxEmbedder
    from handler.settings import Settings

    phase("import_s")
    settings = Settings()
    embedder = OnnxEmbedder(settings.model_dir, threads=settings.intra_op_threads)
    phase("model_load_s")
    holder = IndexHolder(open_store(settings.index_location), settings.index_cache_dir, embedder.fingerprint, 3600)
    holder.load()
    phase("index_load_s")
    app = create_app(settings, index_holder=holder, embedder=embedder, policy_store=build_policy_store(settings))
    handler = Mangum(app, lifespan="off")
    phase("app_s")
    answers = []
    for query in queries:
        body = json.dumps({"tasks": [query], "user_id": user, "gateway_id": "default"})
        headers = {"content-type": "application/json", "authorization": f"Bearer {key}"}
        event = load_event("POST", SELECT, route_key=f"POST {SELECT}", headers=headers, body=body)
        answers.append(handler(event, _Context())["statusCode"])  # type: ignore[arg-type]
        if len(answers) == 1:
            phase("first_query_s")
            print("first-answer", flush=True)  # the parent timestamps this line: process start -> answer
    print(
        json.dumps(
            {
                **phases,
                "cold_start_s": round(time.perf_counter() - STARTED, 4),
                "statuses": sorted(set(answers)),
                "queries": len(answers),
                "peak_rss_mb": round(_peak_rss_kb() / 1024, 1),
            }
        )
    )


if __name__ == "__main__":
    main()
