"""Benchmark catalogs grown from real tool texts.

The pool is every distinct tool of ../shared/catalogs/arcade/tools_full.jsonl (8,118 `App.ToolName`
tools) and the four benchmark catalogs (toolret, sealtools, toolbench_stb, arcade_evals): ~21k real
names and first lines. A catalog of n tools takes the first n of a fixed shuffle of the pool; past the
pool's size it adds replicas of pool tools under renamed apps (``Slack.SendMessage`` ->
``Slack2.SendMessage``), so word statistics and vector distributions stay those of real catalogs.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from build_index.quality.shared_data import shared_dir
from handler.api.schemas import MAX_TASK_CHARS
from handler.catalog.names import name_key
from handler.catalog.tool import Tool
from handler.ranking.query import task_parts
from handler.ranking.text import index_text

SOURCES = (
    "catalogs/arcade/tools_full.jsonl",
    "benchmarks/toolret/tools.jsonl",
    "benchmarks/sealtools/tools.jsonl",
    "benchmarks/toolbench_stb/tools.jsonl",
    "benchmarks/arcade_evals/tools.jsonl",
)
QUERY_SOURCES = ("toolret", "sealtools", "toolbench_stb", "arcade_evals")
EMPTY_SCHEMA: dict[str, object] = {"type": "object", "properties": {}}


def _pool(shared: Path) -> list[Tool]:
    seen: set[str] = set()  # name keys (an index refuses names a caller could not tell apart) and texts
    pool: list[Tool] = []
    for source in SOURCES:
        for line in (shared / source).read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            name = str(row.get("name") or row["id"])
            app, _, short_name = name.rpartition(".")
            app = app or str(row.get("app") or "Bench")
            qualified = f"{app}.{short_name or name}".replace(" ", "")
            text = index_text(qualified, str(row.get("description") or ""))
            if name_key(qualified) in seen or text in seen:
                continue
            seen.update((name_key(qualified), text))
            schema = row.get("input_schema")
            try:  # the same validation a real catalog row gets: e.g. a versioned name would not load
                entry = Tool.model_validate(
                    {
                        "name": qualified,
                        "description": str(row.get("description") or ""),
                        "input_schema": schema if isinstance(schema, dict) else EMPTY_SCHEMA,
                        "app": app,
                    }
                )
            except ValidationError:
                continue
            pool.append(entry)
    random.Random(0).shuffle(pool)  # noqa: S311 - a fixed, reproducible order, not a secret
    return pool


def grow_catalog(size: int, shared: Path | None = None) -> list[Tool]:
    pool = _pool(shared or shared_dir())
    tools = pool[:size]
    replica = 2
    while len(tools) < size:
        for tool in pool[: size - len(tools)]:
            app = f"{tool.app}{replica}"
            name = f"{app}.{tool.name.rpartition('.')[2]}"
            tools.append(tool.model_copy(update={"name": name, "app": app}))
        replica += 1
    return tools


def action_tasks(queries: Sequence[str]) -> list[str]:
    """One action per task, as PRODUCT.md's ``tasks`` carry them: each benchmark query split into its requests
    (query.task_parts; a query of one request stays whole). Often a query asks for several things in one text;
    an agent following the API sends them as separate, shorter tasks, each one embedding."""
    return [task for query in queries for task in (task_parts(query) or (query,))][: len(queries)]


def bench_queries(count: int, shared: Path | None = None) -> tuple[list[str], int]:
    """A fixed mix of real benchmark queries (only their text is used: nothing is scored here), and how many
    were passed over on the way for being longer than a REST task may be (MAX_TASK_CHARS): select over HTTP
    refuses them with a 400, so in-process and HTTP figures are measured on the same queries, the ones a client
    can send. Skipping before counting keeps the first queries of the fixed order (and earlier figures) as
    they were."""
    queries: list[str] = []
    for name in QUERY_SOURCES:
        path = (shared or shared_dir()) / "benchmarks" / name / "queries.jsonl"
        queries.extend(str(json.loads(line)["query"]) for line in path.read_text(encoding="utf-8").splitlines())
    random.Random(1).shuffle(queries)  # noqa: S311 - a fixed, reproducible order
    chosen: list[str] = []
    over_limit = 0
    for query in queries:
        if len(chosen) == count:
            break
        if len(query.strip()) > MAX_TASK_CHARS:  # the API strips a task before measuring it
            over_limit += 1
        else:
            chosen.append(query)
    return chosen, over_limit
