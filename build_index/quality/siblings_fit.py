"""`toolrec train-siblings`: fit the sibling stage's head (handler/ranking/siblings.py) on training rows only.

The rows are the queries of the six training sets about tools the model trained on (never a held-out tool:
training_split.unseen_by_model) and our agent tasks about tools outside the held-out fifth (agent_tasks.held_out),
each ranked through the real ranking of its set's catalog; a query whose first tool has a same-app sibling among the
leading candidates, and whose group holds both a right and a wrong tool, is one list. Benchmarks and acceptance
sets are never read. The head is a linear score fit listwise (softmax cross-entropy of the right tools against the
group) with an L2 penalty, both chosen by leaving one training source out (docs/quality.md).
"""

from __future__ import annotations

import random
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from build_index.quality.agent_tasks import ARCADE_SOURCE, held_out, read_agent_tasks, write_bench_view
from build_index.quality.evaluate import benchmark_queries, benchmark_tools, cached_index
from build_index.quality.training_split import TRAINING_SETS, unseen_by_model
from handler.ranking.query import Embedder, embed_query, query_text
from handler.ranking.sibling_features import candidate_rows
from handler.ranking.siblings import CANDIDATES, SAME_APP, SiblingHead, parameters_of

L2 = 0.1
EPOCHS = 300
Lists = list[tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]]


Rows = list[tuple[str, list[list[str]]]]


def training_rows(shared_root: Path, exclude: Sequence[str], cap: int) -> Iterator[tuple[Path, Rows]]:
    """Each source catalog with its training queries (text, groups of tool ids); ``exclude``: sources left out
    (a training set's name leaves out its queries and the agent tasks written from it; agent_tasks, the arcade ones)."""
    every = read_agent_tasks()
    tasks = [task for task in every if not held_out(task)]
    for name in TRAINING_SETS:
        if name in exclude:
            continue
        folder = shared_root / "training" / name
        queries = [q for q in benchmark_queries(folder, False) if not unseen_by_model(name, q.groups)]
        random.Random(0).shuffle(queries)  # noqa: S311 - a reproducible sample, not a secret
        rows = [(q.text, q.groups) for q in queries[:cap]]
        rows += [(t.task, [list(g) for g in t.groups]) for t in tasks if t.source == name]
        yield folder, rows
    if "agent_tasks" not in exclude:
        # The catalog of `toolrec agent-tasks` (every task's apps), which only its held-out queries are read from.
        view = write_bench_view(shared_root, Path(tempfile.mkdtemp()) / "agent_tasks", every)
        yield view, [(t.task, [list(g) for g in t.groups]) for t in tasks if t.source == ARCADE_SOURCE]


def sibling_lists(folder: Path, rows: Rows, embedder: Embedder, model_id: str) -> Lists:
    """Each query's group (its first tool and that tool's siblings among the leading candidates) as features and
    labels, where the group holds a right and a wrong tool."""
    ids, _ = benchmark_tools(folder)
    index = cached_index(folder, embedder, model_id)
    ranking, tools = index.ranking, index.tools
    lists: Lists = []
    for text, groups in rows:
        query = query_text(text, None, ranking.with_meanings)
        found = ranking.ranked(query.lexical, embed_query(embedder, query), CANDIDATES)
        if len(found.chosen) < 2 or found.evidence is None:
            continue
        names = [ranking.names[i] for i in found.chosen]
        params = [parameters_of(tools[i].input_schema) for i in found.chosen]
        rows_x = candidate_rows(text, names, [p for p, _ in params], [r for _, r in params], found.evidence)
        group = [0] + [p for p in range(1, len(names)) if rows_x[p, SAME_APP] > 0]
        right = {tool for g in groups for tool in g}
        labels = np.array([ids[found.chosen[p]] in right for p in group], dtype=np.float64)
        if len(group) > 1 and 0 < labels.sum() < len(labels):
            lists.append((rows_x[group], labels))
    return lists


def fit_head(lists: Lists, l2: float = L2, epochs: int = EPOCHS, rate: float = 0.05) -> SiblingHead:
    """Listwise softmax over each group, features standardized for the fit and folded back into the weights."""
    stacked = np.vstack([x for x, _ in lists])
    mean, spread = stacked.mean(axis=0), stacked.std(axis=0) + 1e-6
    z = (stacked - mean) / spread
    labels = np.concatenate([y for _, y in lists])
    starts = np.concatenate([[0], np.cumsum([len(x) for x, _ in lists])])[:-1]
    owner = np.repeat(np.arange(len(lists)), [len(x) for x, _ in lists])
    w, first, second = np.zeros(z.shape[1]), np.zeros(z.shape[1]), np.zeros(z.shape[1])
    for step in range(1, epochs + 1):  # Adam on the mean listwise cross-entropy
        s = z @ w
        e = np.exp(s - np.maximum.reduceat(s, starts)[owner])
        p = e / np.add.reduceat(e, starts)[owner]
        right = e * labels
        q = right / np.add.reduceat(right, starts)[owner]
        gradient = z.T @ (p - q) / len(lists) + l2 * w
        first = 0.9 * first + 0.1 * gradient
        second = 0.999 * second + 0.001 * gradient**2
        w -= rate * (first / (1 - 0.9**step)) / (np.sqrt(second / (1 - 0.999**step)) + 1e-8)
    return SiblingHead(w / spread)


def train_siblings(
    shared_root: Path, embedder: Embedder, model_id: str, exclude: Sequence[str] = (), cap: int = 2500
) -> tuple[SiblingHead, int]:
    """The head fit on every training source but ``exclude``, and how many lists it was fit on."""
    lists: Lists = []
    for folder, rows in training_rows(shared_root, exclude, cap):
        lists += sibling_lists(folder, rows, embedder, model_id)
    return fit_head(lists), len(lists)
