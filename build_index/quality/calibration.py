"""`toolrec calibrate-score`: fit the score (handler/ranking/confidence.py) and the no match on real requests the
model never trained on, each set also left out of its own fit (the figures docs/quality.md reports).

For every set, each query the model never trained on (build_index/quality/training_split.py) is ranked against
the set's whole catalog exactly as select ranks it; each of its first ``K`` suggestions is a row of features,
labelled by whether it is one of the query's tools. Other sets' queries against the catalog are off-catalog rows,
all wrong: they teach what weak evidence looks like. A logistic model (each set weighing the same, so a large set
cannot drown a small one) gives the score; the no match is the best cosine below which every set is 95 % sure to
refuse at most 1 % of its real requests (handler/ranking/no_match.py).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from build_index.quality.evaluate import EVAL_CACHE, Query, benchmark_queries, benchmark_tools, cached_index
from build_index.quality.training_split import unseen_by_model
from handler.index.load import Index
from handler.ranking.confidence import FEATURES, Calibration
from handler.ranking.no_match import calibrate
from handler.ranking.query import Embedder
from handler.ranking.recommend import ranked
from handler.ranking.retriever import score_rows

K = 10  # rows per query: deeper than select's default top_k, as the score must hold at any top_k
SHOWN = 5  # calibration is judged on what select returns by default
OFF_CATALOG_SHARE = 0.25  # the off-catalog rows of a set weigh this much of its real ones
OFF_CATALOG_PER_SET = 100  # queries drawn from each other set
L2 = 1e-3
Rows = npt.NDArray[np.float64]


@dataclass(frozen=True)
class SetRows:
    rows: Rows  # (n, features)
    right: npt.NDArray[np.bool_]  # (n,): the row's tool is one the query needs
    query: npt.NDArray[np.int64]  # (n,): which query the row belongs to
    place: npt.NDArray[np.int64]  # (n,): 0 for the first suggestion
    named: npt.NDArray[np.bool_]  # (queries,): the query names its tool (never refused)
    best: npt.NDArray[np.float64]  # (queries,): the best cosine of any tool


def set_rows(index: Index, ids: Sequence[str], embedder: Embedder, queries: Sequence[Query], k: int = K) -> SetRows:
    """The rows of ``queries`` against ``index`` (whose tool ids are ``ids``); a query with no groups is
    off-catalog: every row of it is wrong."""
    rows: list[Rows] = []
    right: list[bool] = []
    query: list[int] = []
    place: list[int] = []
    named: list[bool] = []
    best: list[float] = []
    for number, item in enumerate(queries):
        found = ranked(index.ranking, embedder, item.text, None, k)
        scored = score_rows(found)
        if scored is None:
            raise ValueError(f"{item.text!r}: no evidence (was the query embedded?)")
        needed = {tool for group in item.groups for tool in group}
        rows.append(scored)
        right += [ids[i] in needed for i in found.chosen]
        query += [number] * len(found.chosen)
        place += range(len(found.chosen))
        named.append(found.named)
        best.append(found.best or 0.0)
    return SetRows(
        np.concatenate(rows), np.array(right), np.array(query), np.array(place), np.array(named), np.array(best)
    )


def fit(real: Mapping[str, SetRows], off: Mapping[str, SetRows]) -> tuple[Rows, float]:
    """Logistic regression (Newton's method, a little L2) with each set's real rows weighing the same in all,
    and its off-catalog rows OFF_CATALOG_SHARE of that."""
    parts, labels, weights = [], [], []
    for name, data in real.items():
        parts.append(data.rows)
        labels.append(data.right.astype(np.float64))
        weights.append(np.full(len(data.right), 1.0 / len(data.right)))
        if name in off and len(off[name].right):
            parts.append(off[name].rows)
            labels.append(np.zeros(len(off[name].right)))
            weights.append(np.full(len(off[name].right), OFF_CATALOG_SHARE / len(off[name].right)))
    x = np.hstack([np.concatenate(parts), np.ones((sum(len(p) for p in parts), 1))])
    y, w = np.concatenate(labels), np.concatenate(weights)
    w *= len(w) / w.sum()
    beta = np.zeros(x.shape[1])
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-(x @ beta)))
        hessian = x.T @ (x * (w * p * (1 - p))[:, None]) + L2 * np.eye(len(beta))
        step = np.linalg.solve(hessian, x.T @ (w * (p - y)) + L2 * beta)
        beta -= step
        if np.abs(step).max() < 1e-10:
            break
    return beta[:-1], float(beta[-1])


def refused_percent(calibration: Calibration, data: SetRows) -> float:
    refused = refusal_cosines(data) < (calibration.no_match or 0.0)
    return round(100.0 * float(refused.mean()), 2) if len(refused) else 0.0


def refusal_cosines(data: SetRows) -> npt.NDArray[np.float64]:
    """What the no match reads of each query: its best cosine, or 1 when it names its tool (never refused)."""
    return np.where(data.named, 1.0, data.best)


def shown_probabilities(calibration: Calibration, data: SetRows) -> npt.NDArray[np.float64]:
    """The probability of each row as select reports it: the running minimum down each query's list."""
    out = np.empty(len(data.rows))
    for number in np.unique(data.query):
        rows = np.flatnonzero(data.query == number)
        out[rows] = calibration.probabilities(data.rows[rows])
    return out


def reliability(probability: npt.NDArray[np.float64], right: npt.NDArray[np.bool_], bins: int = 10) -> dict[str, Any]:
    """Expected calibration error over equal-width bins, and each bin's count, mean probability and accuracy."""
    table, error = [], 0.0
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.clip(np.digitize(probability, edges[1:-1]), 0, bins - 1)
    for b in range(bins):
        inside = which == b
        if not inside.any():
            continue
        mean, share = float(probability[inside].mean()), float(right[inside].mean())
        error += inside.sum() / len(probability) * abs(mean - share)
        table.append({"bin": f"{edges[b]:.1f}-{edges[b + 1]:.1f}", "n": int(inside.sum()), "p": round(mean, 3),
                      "right": round(share, 3)})  # fmt: skip
    return {"ece": round(error, 4), "table": table}


def calibrate_score(
    set_dirs: Sequence[Path],
    embedder: Embedder,
    model_id: str,
    max_queries: int | None = None,
    cache: Path = EVAL_CACHE,
) -> dict[str, Any]:
    """The shipped score and no match (from every set), and each set's figures with it left out of both."""
    indexes = {d.name: cached_index(d, embedder, model_id, cache) for d in set_dirs}
    ids = {d.name: benchmark_tools(d)[0] for d in set_dirs}
    queries = {d.name: calibration_queries(d, max_queries) for d in set_dirs}
    real = {name: set_rows(indexes[name], ids[name], embedder, queries[name]) for name in indexes}
    off = {name: set_rows(indexes[name], ids[name], embedder, off_catalog(name, queries)) for name in indexes}
    report: dict[str, Any] = {"features": list(FEATURES), "sets": {}}
    for name in indexes:
        left_out = fitted({n: r for n, r in real.items() if n != name}, off)
        shown = real[name].place < SHOWN
        probability = shown_probabilities(left_out, real[name])
        report["sets"][name] = {
            "queries": len(queries[name]),
            "weights": left_out.weights.round(6).tolist(),
            "bias": round(left_out.bias, 6),
            "no_match": left_out.no_match,
            "false_refusals_percent": refused_percent(left_out, real[name]),
            "off_catalog_refusals_percent": refused_percent(left_out, off[name]),
            **reliability(probability[shown], real[name].right[shown]),
        }
    shipped = fitted(real, off)
    report["weights"] = dict(zip(FEATURES, shipped.weights.round(6).tolist(), strict=True))
    report["bias"] = round(shipped.bias, 6)
    report["no_match"] = shipped.no_match
    return report


def fitted(real: Mapping[str, SetRows], off: Mapping[str, SetRows]) -> Calibration:
    """The score fit on these sets, and the no match their real requests allow."""
    weights, bias = fit(real, off)
    try:
        threshold: float | None = round(calibrate({n: refusal_cosines(d).tolist() for n, d in real.items()}), 4)
    except ValueError:  # no set large enough to show the target refusal rate: none can vote, so never refuse
        threshold = None
    return Calibration(weights, bias, threshold)


def off_catalog(name: str, queries: Mapping[str, Sequence[Query]]) -> list[Query]:
    """An evenly spaced sample of every other set's queries, needing none of this catalog's tools: requests it does
    not serve."""
    sample: list[Query] = []
    for other, items in queries.items():
        if other != name and items:
            step = max(1, len(items) // OFF_CATALOG_PER_SET)
            sample += [Query(q.id, q.text, [], {}) for q in items[::step][:OFF_CATALOG_PER_SET]]
    return sample


def calibration_queries(set_dir: Path, max_queries: int | None = None) -> list[Query]:
    """The set's queries about tools the model was not trained on; with ``max_queries``, an evenly spaced,
    deterministic sample of them."""
    queries = [q for q in benchmark_queries(set_dir, with_instruction=False) if unseen_by_model(set_dir.name, q.groups)]
    if max_queries is not None and len(queries) > max_queries:
        step = len(queries) / max_queries
        queries = [queries[int(i * step)] for i in range(max_queries)]
    return queries


def left_out_calibration(report_path: Path, set_name: str) -> Calibration:
    """The score and no match fit without ``set_name``, from a ``toolrec calibrate-score --json`` report."""
    report = json.loads(report_path.read_text())
    if report.get("features") != list(FEATURES):
        raise ValueError(f"{report_path} was fit on other features than this toolrec's: run calibrate-score again")
    fit = report["sets"].get(set_name)
    if fit is None:
        raise ValueError(f"{report_path} holds no fit without {set_name}: calibrate with that set among the others")
    return Calibration(np.array(fit["weights"], dtype=np.float64), float(fit["bias"]), fit["no_match"])


def format_calibration(report: dict[str, Any]) -> str:
    lines = [f"shipped: no match below {report['no_match']}; bias {report['bias']}; weights {report['weights']}"]
    lines.append(f"{'set, left out':<24}{'queries':>8}{'ECE@5':>8}{'no match':>10}{'false %':>9}{'off-cat %':>10}")
    for name, row in report["sets"].items():
        lines.append(
            f"{name:<24}{row['queries']:>8}{row['ece']:>8.3f}{row['no_match']!s:>10}"
            f"{row['false_refusals_percent']:>9.2f}{row['off_catalog_refusals_percent']:>10.2f}"
        )
    return "\n".join(lines)
