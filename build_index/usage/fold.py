"""Learning from use, build side: read a tenant's executions and fold them into usage evidence for its index.

Evidence is a successful execution linked by ``query_id`` to a select whose suggestions for one of its tasks held
the tool: that task, run with that tool. Tools run under one ``query_id`` for the same task are one execution
group (co-used). Weaker evidence is counted in the manifest but never used: failed runs (the tool did not do the
job, or the call was wrong), and tools the select did not suggest for any task (the agent found them some other
way, so the task says little about them). Executions without a ``query_id`` are not linked to any task and are
not in the query log at all.

What counts as evidence, and how much of a tool's history one user, key or hour may give, is decided in
build_index/usage/evidence.py. An operator's own usage file is the operator's word.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np

from build_index.usage.evidence import Vouchers, past_tasks_by_tool, vouched_for
from handler.catalog.names import ToolNames
from handler.errors import CatalogError
from handler.index.format import BuiltIndex, UsageArrays, UsageSummary
from handler.index.load import load_build, rebuild_of
from handler.index.store import open_store
from handler.policy.model import QueryRecord
from handler.ranking.arrays import FloatArray
from handler.ranking.dense import quantize

QUERY_LOG_SUFFIX = ".queries.jsonl"  # what `toolrec serve` writes beside its policy file
# The classifier's ridge penalty, in units of the past tasks' own weight (unit rows): chosen leave-one-set-out
# with handler/ranking/usage.py's CLASSIFIER_* constants (docs/quality.md "Learning from use").
CLASSIFIER_RIDGE = 0.1


@dataclass(frozen=True)
class ExecutionGroup:
    task: str
    tools: tuple[str, ...]  # names (or the benchmark's ids), as the source gives them
    user_id: str | None = None
    at: datetime | None = None
    key_id: str | None = None  # the API key that asked and ran (the query log); None: the operator's own file


@dataclass
class UsageLog:
    groups: list[ExecutionGroup] = field(default_factory=list)
    ignored: Counter[str] = field(default_factory=Counter)  # weaker evidence, by kind: counted, never used


def groups_from_queries(records: Iterable[QueryRecord], now: float) -> UsageLog:
    """The execution groups in query-log records that have not expired at ``now``."""
    log = UsageLog()
    for record in records:
        if record.expires_at <= now:
            log.ignored["expired"] += len(record.executions)
            continue
        if record.key_id is None:  # logged before keys were recorded: no key to count it against
            log.ignored["no_key"] += len(record.executions)
            continue
        ran: dict[int, list[str]] = defaultdict(list)
        at: dict[int, datetime] = {}
        for execution in record.executions:
            if execution.key_id != record.key_id:  # linked to another key's select, it would count as that key
                log.ignored["other_key"] += 1
                continue
            if execution.outcome != "ok":
                log.ignored["failed"] += 1
                continue
            task = next((i for i, names in enumerate(record.recommended) if execution.tool_name in names), None)
            if task is None:
                log.ignored["not_suggested"] += 1
                continue
            if execution.tool_name not in ran[task]:
                ran[task].append(execution.tool_name)
            at[task] = max(at.get(task, execution.at), execution.at)
        for task, tools in sorted(ran.items()):
            log.groups.append(ExecutionGroup(record.tasks[task], tuple(tools), record.user_id, at[task], record.key_id))
    return log


def groups_from_benchmark(path: Path) -> UsageLog:
    """A JSONL file in the benchmark queries format: ``query`` and ``relevant`` (tool ids or names), one execution
    group per line (a simulated history, as ``toolrec eval --usage-from``)."""
    log = UsageLog()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            task, relevant = str(row["query"]), row["relevant"]
        except (ValueError, KeyError, TypeError) as exc:
            raise CatalogError(f"{path}:{number}: not a usage line with query and relevant ({exc})") from None
        if not isinstance(relevant, list) or not all(isinstance(t, str) for t in relevant):
            raise CatalogError(f"{path}:{number}: relevant must be a list of tool names or ids")
        log.groups.append(ExecutionGroup(task, tuple(dict.fromkeys(relevant))))
    return log


def read_usage(source: str, now: float, dynamodb_client: Any = None, single_operator: bool = False) -> UsageLog:
    """``dynamodb:TABLE`` (a deployment's query log), a local query log (``*.queries.jsonl``, what ``toolrec
    serve`` writes beside its policy file) or a benchmark-format JSONL file. ``single_operator``: a local query log
    read as the operator's own runs (``toolrec build --single-operator``), without the bounds on keys and bursts."""
    if single_operator:
        if not source.endswith(QUERY_LOG_SUFFIX) or source.startswith("dynamodb:"):
            raise CatalogError(
                f"--single-operator counts a local query log (*{QUERY_LOG_SUFFIX}, what `toolrec serve` writes "
                f"beside its policy file) as your own runs; {source} is not one"
            )
        log = read_usage(source, now)
        return replace(log, groups=[replace(group, key_id=None) for group in log.groups])
    if source.startswith("dynamodb:"):
        from build_index.usage.query_log import query_log_records

        return groups_from_queries(query_log_records(source.removeprefix("dynamodb:"), None, dynamodb_client), now)
    path = Path(source)
    if not path.is_file():
        raise CatalogError(f"no usage source at {source}: give dynamodb:TABLE, a query log or a JSONL file")
    if path.name.endswith(QUERY_LOG_SUFFIX):
        from handler.policy.file_store import read_query_log

        return groups_from_queries(read_query_log(path), now)
    return groups_from_benchmark(path)


def fold_usage(
    log: UsageLog,
    tool_names: Sequence[str],
    embed: Callable[[Sequence[str]], FloatArray],
    source: str,
    name_of: Callable[[str], str] | None = None,
) -> tuple[UsageArrays, UsageSummary]:
    """Usage evidence over the index's tools (position order): each tool's past tasks, as the mean of their
    embeddings (``embed`` maps texts to unit rows, as the build embeds tools), and co-usage shares.

    ``name_of`` maps a source's tool label to a catalog name (the benchmark ids ``toolrec eval`` uses); tools no
    longer in the catalog are dropped and counted.
    """
    groups, ignored = _resolve(log, tool_names, name_of)
    chosen = past_tasks_by_tool(groups)
    co_usage = _co_usage(groups, len(tool_names))
    texts = list(dict.fromkeys(text for tasks in chosen.values() for text in tasks))
    vectors = embed(texts or ["tool"])  # one text when there are none: the width of an empty matrix
    row_of = {text: row for row, text in enumerate(texts)}
    tools = sorted(chosen)
    means = np.zeros((len(tools), vectors.shape[1]), dtype=np.float32)
    for row, tool in enumerate(tools):
        mean = vectors[[row_of[text] for text in chosen[tool]]].mean(axis=0)
        means[row] = mean / max(float(np.linalg.norm(mean)), 1e-12)
    arrays = UsageArrays(
        past_tasks=quantize(means),
        past_task_tools=np.array(tools, dtype=np.int32),
        **co_usage,
        classifier=quantize(fit_classifier(vectors, [[row_of[text] for text in chosen[tool]] for tool in tools])),
    )
    times = sorted(g.at for g, _ in groups if g.at is not None)
    summary = UsageSummary(
        source=source,
        oldest=times[0].isoformat(timespec="seconds") if times else None,
        newest=times[-1].isoformat(timespec="seconds") if times else None,
        execution_groups=len(groups),
        distinct_tasks=len(texts),
        past_task_rows=sum(len(tasks) for tasks in chosen.values()),
        tools_with_usage=len(tools),
        ignored=dict(sorted(ignored.items())),
        evidence_sha256=_evidence_digest(chosen, co_usage),
        classifier=True,
    )
    return arrays, summary


def fit_classifier(vectors: FloatArray, rows_of_class: Sequence[Sequence[int]]) -> FloatArray:
    """Ridge regression of each class's indicator on the task embeddings (``vectors``, one unit row per distinct
    past task; class c ran for the rows ``rows_of_class[c]``): one weight row per class, so that a task's score
    for c is near 1 where it resembles c's tasks and not the others', near 0 where it resembles none. The
    classifier sees only the past tasks ``past_tasks_by_tool`` kept, with their per-user and per-key bounds."""
    dimensions = vectors.shape[1]
    weights = np.zeros((len(rows_of_class), dimensions), dtype=np.float32)
    if not rows_of_class:
        return weights
    used = sorted({row for rows in rows_of_class for row in rows})
    x = vectors[used].astype(np.float64)
    gram = x.T @ x + CLASSIFIER_RIDGE * np.eye(dimensions)
    sums = np.stack([vectors[list(rows)].sum(axis=0, dtype=np.float64) for rows in rows_of_class])  # X^T Y, by class
    weights[:] = np.linalg.solve(gram, sums.T).T
    return weights


def evidence_digest(log: UsageLog, tool_names: Sequence[str]) -> str:
    """What ``fold_usage`` would fold from ``log``, as a digest (no embedding): equal digests fold into equal
    evidence, so a refresh can tell whether the usage changed since the published build."""
    groups, _ = _resolve(log, tool_names, None)
    return _evidence_digest(past_tasks_by_tool(groups), _co_usage(groups, len(tool_names)))


def _evidence_digest(chosen: dict[int, list[str]], co_usage: dict[str, Any]) -> str:
    digest = hashlib.sha256(json.dumps(sorted(chosen.items())).encode())
    for name in sorted(co_usage):
        digest.update(np.ascontiguousarray(co_usage[name]).tobytes())
    return digest.hexdigest()


Resolved = list[tuple[ExecutionGroup, tuple[int, ...]]]


def _resolve(
    log: UsageLog, tool_names: Sequence[str], name_of: Callable[[str], str] | None
) -> tuple[Resolved, Counter[str]]:
    """The groups with their tools as index positions; a tool the catalog no longer holds is counted and dropped."""
    names = ToolNames(tool_names)
    ignored = Counter(log.ignored)
    groups: Resolved = []
    for group in log.groups:
        positions: list[int] = []
        for label in group.tools:
            position = names.position(name_of(label) if name_of else label)
            if position is None:
                ignored["unknown_tool"] += 1
            elif position not in positions:
                positions.append(position)
        if positions and group.task.strip():
            groups.append((group, tuple(positions)))
    return vouched_for(groups, ignored), ignored


def with_usage(
    built: BuiltIndex, source: str, embed: Callable[[Sequence[str]], FloatArray], single_operator: bool = False
) -> BuiltIndex:
    """The build with the usage ``source`` holds folded in (``read_usage``: expired records are not read)."""
    log = read_usage(source, time.time(), single_operator=single_operator)
    evidence = fold_usage(log, [t.name for t in built.tools], embed, source)
    return replace(built, usage=evidence)


def published_build(location: str, model_fingerprint: str, namespace: str) -> BuiltIndex:
    """The latest build at ``location`` as the build step's value again, its usage left out: rebuilding it with
    fresh usage costs the past tasks' embeddings only, not the catalog's. ``namespace``: as the index load reads it."""
    with tempfile.TemporaryDirectory() as cache:
        store = open_store(location)
        directory = store.fetch(store.latest_build_id(), Path(cache))
        return rebuild_of(directory, load_build(directory, model_fingerprint, namespace=namespace))


def _co_usage(groups: Resolved, tool_count: int) -> dict[str, Any]:
    """CSR over tools: each tool's companions and the share of its groups that also ran each one. Identical
    groups count once, so a burst of the same calls is one observation; a pair that only the query log co-used
    counts once it is vouched for as a tool is (``Vouchers``)."""
    runs_of: dict[tuple[int, ...], list[ExecutionGroup]] = defaultdict(list)
    for run, tools in groups:
        runs_of[tuple(sorted(tools))].append(run)
    together: dict[int, Counter[int]] = defaultdict(Counter)
    vouching: dict[tuple[int, int], Vouchers] = defaultdict(Vouchers)
    total: Counter[int] = Counter()
    for group, runs in runs_of.items():
        for tool in group:
            total[tool] += 1
            others = [other for other in group if other != tool]
            together[tool].update(others)
            for other, run in product(others, runs):
                vouching[(tool, other)].add(run)
    indptr = np.zeros(tool_count + 1, dtype=np.int64)
    companions: list[int] = []
    shares: list[float] = []
    for tool in range(tool_count):
        for other, count in sorted(together[tool].items()):
            pair = vouching[(tool, other)]
            if not pair.operator and pair.lacking() is not None:
                continue
            companions.append(other)
            shares.append(count / total[tool])
        indptr[tool + 1] = len(companions)
    return {
        "co_indptr": indptr,
        "co_tools": np.array(companions, dtype=np.int32),
        "co_shares": np.array(shares, dtype=np.float32),
    }
