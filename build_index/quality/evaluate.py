"""`toolrec eval`: run a benchmark set (../shared/benchmarks format) through the real ranking path.

The set's tools are indexed exactly as production indexes a catalog (index_text, the same analyzer and
embedder, written and read back through the index format), cached by content so reruns are fast.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import time
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from build_index.build import embed_texts, index_tools
from build_index.publish import publish
from build_index.quality.metrics import completeness, ndcg, recall
from build_index.quality.reference_bm25 import ReferenceBM25, reference_text
from build_index.quality.training_split import TRAINING_SETS, unseen_by_model
from build_index.usage.fold import UsageLog, fold_usage
from handler.catalog.names import name_key
from handler.catalog.tool import _VERSION_SUFFIX, Tool
from handler.index.load import Index, load_build, rebuild_of
from handler.index.store import LocalIndexStore, load_latest
from handler.ranking.confidence import SHIPPED, Calibration
from handler.ranking.query import Embedder
from handler.ranking.recommend import recommend_task
from handler.ranking.retriever import Method, Recommendation

EVAL_CACHE = Path.home() / ".cache" / "toolrec" / "eval"
SUBSET_FIELDS = ("subset", "task", "split", "has_context")
# Part of the cache key: bump when what benchmark_tools hands the build changes.
EVAL_TOOLS_VERSION = "3"
K = 10


@dataclass(frozen=True)
class Query:
    id: str
    text: str
    groups: list[list[str]]
    labels: dict[str, str]


@dataclass
class Scores:
    queries: int = 0
    sums: dict[str, float] = field(default_factory=lambda: defaultdict(float))

    def add(self, ranked: Sequence[str], groups: Sequence[Sequence[str]], at_5: Sequence[str] | None = None) -> None:
        """``at_5``: what top_k 5 returns, where it is not the first 5 of top_k 10 (a compound task's steps)."""
        self.queries += 1
        self.sums["first"] += first_needed(ranked, groups)  # what agents and `auto` mostly take
        self.sums["c@5"] += completeness(ranked if at_5 is None else at_5, groups, 5)
        self.sums["c@10"] += completeness(ranked, groups, 10)
        self.sums["recall@10"] += recall(ranked, groups, 10)
        self.sums["ndcg@10"] += ndcg(ranked, groups, 10)

    def as_percentages(self) -> dict[str, float]:
        return {name: round(100.0 * total / self.queries, 2) for name, total in self.sums.items()}


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def benchmark_tools(bench_dir: Path) -> tuple[list[str], list[Tool]]:
    """The set's tool ids and the tools as catalog entries (benchmark rows skip catalog validation:
    their names are not in App.ToolName form and some lack an app or schema)."""
    ids, tools = [], []
    for row in _read_jsonl(bench_dir / "tools.jsonl"):
        ids.append(str(row["id"]))
        name = catalog_name(str(row.get("name") or row["id"]))
        tools.append(
            Tool.model_construct(
                name=name,
                description=str(row.get("description") or ""),
                input_schema=row.get("input_schema") or {"type": "object", "properties": {}},
                app=str(row.get("app") or name.split(".", maxsplit=1)[0]),
                executor=None,
                requirements=None,
            )
        )
    return ids, tools


def distinct_names(tools: Sequence[Tool]) -> list[Tool]:
    """The tools with a number after a name that folds onto an earlier one (bfcl's one function with several
    descriptions, toolret's "Schedule" and "schedule"): an index refuses names a caller could not tell apart."""
    seen: dict[str, int] = {}
    distinct = []
    for tool in tools:
        count = seen[name_key(tool.name)] = seen.get(name_key(tool.name), 0) + 1
        distinct.append(tool if count == 1 else tool.model_copy(update={"name": f"{tool.name} {count}"}))
    return distinct


def catalog_name(name: str) -> str:
    """A benchmark name a catalog would refuse for its version suffix ("get_data_v1", "ToolV2"), with a space
    before the version instead: the index reads the same words (split_identifier splits on both), and the
    index loader's catalog validation accepts it."""
    match = _VERSION_SUFFIX.search(name)
    if match is None:
        return name
    return f"{name[: match.start()]} {name[match.start() :].lstrip('_-.@')}"


def benchmark_queries(bench_dir: Path, with_instruction: bool) -> list[Query]:
    queries = []
    for row in _read_jsonl(bench_dir / "queries.jsonl"):
        text = str(row["query"])
        if with_instruction and row.get("instruction"):
            text = f"{row['instruction']} {text}"
        labels = {f: str(row[f]) for f in SUBSET_FIELDS if row.get(f) is not None}
        groups = [[str(t) for t in g] for g in row["relevant_groups"]]
        if len(groups) > 1:
            labels["relevant"] = ">1 tool"
        queries.append(Query(str(row["id"]), text, groups, labels))
    return queries


def cached_index(
    bench_dir: Path, embedder: Embedder, model_id: str, cache: Path = EVAL_CACHE, usage: UsageLog | None = None
) -> Index:
    """Build the set's index once per (tools file, model, code version of the index text) and reuse it; with
    ``usage`` (groups of the set's tool ids), that index republished with the usage folded in."""
    from handler.index.format import LATEST, SCHEMA_VERSION
    from handler.ranking import analyzer, text

    digest = hashlib.sha256()
    digest.update((bench_dir / "tools.jsonl").read_bytes())
    digest.update(embedder.fingerprint.encode())
    for module in (text, analyzer):  # the text formatting and analysis decide what is indexed
        digest.update(Path(module.__file__ or "").read_bytes())
    digest.update(str(SCHEMA_VERSION).encode())
    digest.update(EVAL_TOOLS_VERSION.encode())
    root = cache / f"{bench_dir.name}-{digest.hexdigest()[:16]}"
    store = LocalIndexStore(root)
    ids, tools = benchmark_tools(bench_dir)
    tools = distinct_names(tools)
    if not (root / LATEST).is_file():
        publish(index_tools(tools, embedder, model_id), str(root))
    if usage is None:
        return load_latest(store, root, embedder.fingerprint)
    cold = store.fetch(store.latest_build_id(), root)
    warm = cache / f"{root.name}-usage-{_usage_digest(usage, cold.name)}"
    if not (warm / LATEST).is_file():
        names = dict(zip(ids, (t.name for t in tools), strict=True))
        evidence = fold_usage(
            usage,
            [t.name for t in tools],
            lambda texts: embed_texts(texts, embedder),
            "eval",
            lambda i: names.get(i, i),
        )
        publish(replace(rebuild_of(cold, load_build(cold, embedder.fingerprint), tools), usage=evidence), str(warm))
    return load_latest(LocalIndexStore(warm), warm, embedder.fingerprint)


def _usage_digest(usage: UsageLog, cold_build: str) -> str:
    digest = hashlib.sha256(cold_build.encode())
    newest = max((group.at for group in usage.groups if group.at is not None), default=None)
    for group in usage.groups:
        # who ran it and when count: the fold bounds each user's, key's and hour's share of a tool's past tasks and
        # asks for runs spread over time; times relative to the newest, so a replay shifted in time is the same
        ago = None if group.at is None or newest is None else (newest - group.at).total_seconds()
        digest.update(json.dumps([group.task, group.tools, group.user_id, group.key_id, ago]).encode())
    for rules in ("fold.py", "evidence.py"):  # the folding decides what is indexed
        digest.update((Path(__file__).parents[1] / "usage" / rules).read_bytes())
    return digest.hexdigest()[:16]


def evaluate(
    bench_dir: Path,
    embedder: Embedder,
    model_id: str,
    method: Method,
    with_instruction: bool = False,
    no_match_against: Sequence[Path] = (),
    cache: Path = EVAL_CACHE,
    calibration: Calibration | None = SHIPPED,
    usage: UsageLog | None = None,
    queries: Sequence[Query] | None = None,
) -> dict[str, Any]:
    """Answer every query of the set as select answers a task (``recommend``: the no match applied, at
    ``top_k`` 10, whose first 5 are what ``top_k`` 5 returns), beside the reference BM25 and the product's own
    BM25 in the same run; with ``no_match_against``, also run those sets' queries (tools this catalog does not
    hold) and report how often each kind is answered "no match". With ``usage``, the index holds that history;
    with ``queries``, only those of the set's queries are answered."""
    ids, tools = benchmark_tools(bench_dir)
    index = cached_index(bench_dir, embedder, model_id, cache, usage)
    reference = ReferenceBM25([reference_text(t.name, t.description) for t in _raw_names(bench_dir, tools)])
    # A training set's queries about tools the model trained on would flatter it: only the held-out ones count.
    if queries is None:
        queries = benchmark_queries(bench_dir, with_instruction)
    queries = [q for q in queries if unseen_by_model(bench_dir.name, q.groups)]
    overall, own_bm25, baseline = Scores(), Scores(), Scores()
    per_subset: dict[str, Scores] = defaultdict(Scores)
    app_of = {tool_id: tool.app for tool_id, tool in zip(ids, tools, strict=True)}
    latencies = []
    refused = wrong_action = impossible = impossible_refused = 0
    for query in queries:
        started = time.perf_counter()
        found = answer(index, embedder, query.text, method, calibration)
        latencies.append(time.perf_counter() - started)
        if not query.groups:  # a request no tool of the catalog serves: right when refused
            impossible += 1
            impossible_refused += found.no_match
            continue
        refused += found.no_match
        ranked = [ids[h.index] for h in found.hits]
        wrong_action += (
            bool(ranked)
            and not completeness(ranked, query.groups, 1)
            and app_of[ranked[0]] in {app_of[tool] for group in query.groups for tool in group}
        )
        # A compound task's top_k 5 keeps each step's best, so it is not the first 5 of its top_k 10.
        at_5 = (
            [ids[h.index] for h in answer(index, embedder, query.text, method, calibration, 5).hits]
            if found.steps
            else None
        )
        overall.add(ranked, query.groups, at_5)
        own_bm25.add([ids[h.index] for h in answer(index, embedder, query.text, Method.BM25).hits], query.groups)
        baseline.add([ids[i] for i in reference.rank(query.text, K)], query.groups)
        for name, value in query.labels.items():
            per_subset[f"{name}={value}"].add(ranked, query.groups, at_5)
    scores = overall.as_percentages()
    result: dict[str, Any] = {
        "set": bench_dir.name,
        "retriever": method.value,
        "with_instruction": with_instruction,
        "queries": overall.queries,
        "held_out_only": bench_dir.name in TRAINING_SETS,
        "tools": len(ids),
        **scores,
        "gap_closed_reference": gap_closed(scores["c@10"], baseline.as_percentages()["c@10"]),
        "gap_closed_own_bm25": gap_closed(scores["c@10"], own_bm25.as_percentages()["c@10"]),
        "reference_bm25": baseline.as_percentages(),
        "own_bm25": own_bm25.as_percentages(),
        "median_latency_ms": round(1000 * statistics.median(latencies), 3) if latencies else None,
        "no_match_probability": None if calibration is None else calibration.no_match,
        "no_match_false_rate": round(100.0 * refused / overall.queries, 2) if overall.queries else None,
        # The first tool is of an app the query needs, but not a tool it needs: the right app, the wrong action.
        "right_app_wrong_tool_first": round(100.0 * wrong_action / overall.queries, 2) if overall.queries else None,
        "impossible": impossible,
        "impossible_refused": round(100.0 * impossible_refused / impossible, 2) if impossible else None,
        "usage": None if index.manifest.usage is None else index.manifest.usage.model_dump(),
    }
    if no_match_against:
        result["no_match_true_rate"] = off_catalog_refusals(index, embedder, method, no_match_against, calibration)
    result["per_subset"] = {
        name: {"queries": s.queries, **s.as_percentages()} for name, s in sorted(per_subset.items())
    }
    return result


def first_needed(ranked: Sequence[str], groups: Sequence[Sequence[str]]) -> bool:
    """Whether the first tool is one the query needs (for a one-tool query: top-1)."""
    return bool(ranked) and any(ranked[0] in group for group in groups)


def gap_closed(score: float, baseline: float) -> float:
    """The share (%) of the baseline's misses that ``score`` recovers: (C - C_base) / (100 - C_base)."""
    return round(100.0 * (score - baseline) / (100.0 - baseline), 1) if baseline < 100.0 else 0.0


def _raw_names(bench_dir: Path, tools: Sequence[Tool]) -> list[Tool]:
    """The tools under the names the set itself gives them: the reference BM25 reads the set as published."""
    rows = _read_jsonl(bench_dir / "tools.jsonl")
    return [
        tool.model_copy(update={"name": str(row.get("name") or row["id"])})
        for tool, row in zip(tools, rows, strict=True)
    ]


def answer(
    index: Index,
    embedder: Embedder,
    text: str,
    method: Method,
    calibration: Calibration | None = SHIPPED,
    k: int = K,
) -> Recommendation:
    """A query through select's own path (its steps, query formation, embeddings, ranking, no match)."""
    return recommend_task(index.ranking, embedder, text, None, k, method=method, calibration=calibration)


def off_catalog_refusals(
    index: Index,
    embedder: Embedder,
    method: Method,
    others: Sequence[Path],
    calibration: Calibration | None = SHIPPED,
) -> float:
    """Share (%) of other sets' queries answered "no match" by this catalog, each set weighing the same."""
    rates = []
    for other in others:
        queries = benchmark_queries(other, with_instruction=False)
        refused = sum(answer(index, embedder, q.text, method, calibration, k=1).no_match for q in queries)
        rates.append(refused / len(queries) if queries else 0.0)
    return round(100.0 * statistics.mean(rates), 2) if rates else 0.0


def format_report(result: dict[str, Any]) -> str:
    columns = ("first", "c@5", "c@10", "recall@10", "ndcg@10")
    impossible = (
        f"; {result['impossible_refused']}% of its {result['impossible']} impossible requests refused"
        if result["impossible"]
        else ""
    )
    lines = [
        f"{result['set']}: {result['tools']} tools, {result['queries']} queries"
        f"{' (about held-out tools only: the model trained on this set)' if result['held_out_only'] else ''}, "
        f"retriever={result['retriever']}"
        f"{' (with instruction)' if result['with_instruction'] else ''}, "
        f"median {result['median_latency_ms']} ms/query; C@5 at top_k 5, the rest at top_k 10, no match applied; "
        f"no match on {result['no_match_false_rate']}% of its queries"
        + (f", on {result['no_match_true_rate']}% of off-catalog queries" if "no_match_true_rate" in result else "")
        + impossible
        + f"; first tool of a needed app but not needed: {result['right_app_wrong_tool_first']}%",
        f"{'subset':<34}{'queries':>8}" + "".join(f"{c:>11}" for c in columns),
        f"{'all':<34}{result['queries']:>8}" + "".join(f"{result[c]:>11.2f}" for c in columns),
        f"{'reference bm25 (bm25s, ToolRet)':<34}{result['queries']:>8}"
        + "".join(f"{result['reference_bm25'][c]:>11.2f}" for c in columns),
        f"{'own bm25':<34}{result['queries']:>8}" + "".join(f"{result['own_bm25'][c]:>11.2f}" for c in columns),
        f"C@10 gap closed: {result['gap_closed_reference']}% of the reference BM25's, "
        f"{result['gap_closed_own_bm25']}% of its own BM25's "
        f"(no match below probability {result['no_match_probability']})",
    ]
    for name, row in result["per_subset"].items():
        lines.append(f"{name[:33]:<34}{row['queries']:>8}" + "".join(f"{row[c]:>11.2f}" for c in columns))
    return "\n".join(lines)
