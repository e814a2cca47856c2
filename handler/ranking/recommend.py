"""One call into the ranking core per task: its steps, query formation, their embeddings, the ranking, the no match.

Select and ``toolrec eval`` both answer a task through ``recommend_task``, and ``toolrec calibrate-score`` reads
the same ranking through ``ranked``, so what is measured and fit is what an agent receives (PRODUCT.md §5: C@5 at
``top_k`` 5, the no match applied).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from handler.ranking.arrays import BoolArray, FloatArray
from handler.ranking.confidence import SHIPPED, Calibration
from handler.ranking.named_apps import named_first
from handler.ranking.query import Embedder, QueryText, embed_query, query_text
from handler.ranking.retriever import Hit, Method, Ranked, RankingIndex, Recommendation
from handler.ranking.steps import split_steps

STEP_DEPTH = 10  # how deep a step's own ranking is read for its best tool that no earlier step took
WHOLE_PER_ROUND = 2  # a compound answer's places after the steps' bests: the whole task's two, then each step's one


def recommend_task(
    ranking: RankingIndex,
    embedder: Embedder,
    task: str,
    context: str | None,
    k: int,
    allowed: BoolArray | None = None,
    method: Method = Method.HYBRID,
    calibration: Calibration | None = SHIPPED,
) -> Recommendation:
    """``recommend`` for a task of one step. For a compound task, that answer with each step's own best tool
    brought in (``merge_steps``), each hit with the step it serves (PRODUCT.md §2). A task of n steps costs n + 1
    rankings and as many embeddings: a step that is also one of the task's parts (query.py) is embedded once."""
    steps = split_steps(task, ranking.step_verbs) if method is Method.HYBRID else (task,)
    if len(steps) == 1:
        return recommend(ranking, embedder, task, context, k, allowed, method, calibration)
    embedder = _Remembered(embedder)
    query, vectors = _formed(ranking, embedder, task, context, method)
    assert vectors is not None  # hybrid
    whole = ranking.recommend(query.lexical, vectors, k, allowed, method, calibration, not context)
    vector = vectors[0]  # the whole task's, before its parts
    depth = max(k, STEP_DEPTH)
    answers = [
        _step_answer(ranking, embedder, step, task, vector, context, depth, allowed, calibration) for step in steps
    ]
    return merge_steps(task, whole, steps, answers, k)


class _Remembered:
    """An embedder that embeds each text once per task."""

    def __init__(self, embedder: Embedder) -> None:
        self._embedder = embedder
        self._vectors: dict[str, FloatArray] = {}

    @property
    def fingerprint(self) -> str:
        return self._embedder.fingerprint

    @property
    def dimensions(self) -> int:
        return self._embedder.dimensions

    def embed(self, text: str) -> FloatArray:
        if text not in self._vectors:
            self._vectors[text] = self._embedder.embed(text)
        return self._vectors[text]


def merge_steps(
    task: str, whole: Recommendation, steps: Sequence[str], answers: Sequence[Recommendation], k: int
) -> Recommendation:
    """Up to k tools for a compound task: each step's best that no earlier step took (so with k at least the
    number of steps, every step has its own tool), then the rest in rounds (``in_rounds``): a step whose best is
    the wrong action keeps its next tools in the answer, not only the whole task's ranking; best first by score,
    each tool once. A tool's step is the one it scores best for, or the whole task where no step's answer holds it.
    Measured against ranking the steps alone, which loses more than it finds: docs/quality.md."""
    best_of: dict[int, tuple[Hit, str]] = {hit.index: (hit, task) for hit in whole.hits}
    for step, answer in zip(steps, answers, strict=True):
        for hit in answer.hits:
            held = best_of.get(hit.index)
            if held is None or held[1] == task or _order_of(hit) > _order_of(held[0]):
                best_of[hit.index] = (hit, step)
    chosen: list[int] = []
    for answer in answers:  # two steps are two actions: a step's best is its best tool no earlier step took
        own = next((hit.index for hit in answer.hits if hit.index not in chosen), None)
        if own is not None:
            chosen.append(own)
    chosen = list(dict.fromkeys(chosen + in_rounds(whole, answers)))[:k]
    merged = sorted((best_of[i] for i in chosen), key=lambda pair: -_order_of(pair[0]))
    if not merged:
        return whole  # the whole task and every step: no match
    return replace(whole, hits=tuple(h for h, _ in merged), steps=tuple(s for _, s in merged))


def in_rounds(whole: Recommendation, answers: Sequence[Recommendation]) -> list[int]:
    """The tools of the whole task's ranking and of each step's, a round at a time: the whole task's next
    ``WHOLE_PER_ROUND``, then each step's next one (a tool may repeat: the caller keeps its first place). The whole
    task keeps the larger share: its ranking alone answers chatty multi-sentence tasks best (toolbench_stb lost a
    point of C@10 with one place a round); chosen leave one set out (docs/quality.md: a compound answer's later
    places)."""
    own = [hit.index for hit in whole.hits]
    steps = [[hit.index for hit in answer.hits] for answer in answers]
    rounds = max([-(-len(own) // WHOLE_PER_ROUND)] + [len(step) for step in steps])
    found: list[int] = []
    for turn in range(rounds):
        found += own[turn * WHOLE_PER_ROUND : (turn + 1) * WHOLE_PER_ROUND]
        found += [step[turn] for step in steps if turn < len(step)]
    return found


def _step_answer(
    ranking: RankingIndex,
    embedder: Embedder,
    step: str,
    task: str,
    whole: FloatArray,
    context: str | None,
    k: int,
    allowed: BoolArray | None,
    calibration: Calibration | None,
) -> Recommendation:
    """One step ranked in its task: alone, "email it to them" has lost its app and object. Its vector is the mean
    of its own and the whole task's, and its words are followed by the task's, so the step picks the action and
    the task keeps what it acts on (measured against the step alone: docs/quality.md). A step that names its app
    ("then tell #incidents on slack") has its app: the other steps' words would only pull their own apps' tools, so
    its words are its own, and that app's tools come first in its answer, so its best is the named app's where the
    answer holds one. Each keeps its own score, not its place's as a one-step task's (retriever.py): the merge
    orders the steps' tools by score, and a place's score would lift the named tool over the other steps'
    (toolbench_stb lost 13 first tools of split tasks to it)."""
    named = ranking.named_apps.named(step)
    around = context if named else (f"{task}\n{context}" if context else task)
    query = query_text(step, around, ranking.with_meanings)
    blended = embedder.embed(query.semantic) + whole
    vector = (blended / np.linalg.norm(blended)).astype(np.float32)
    answer = ranking.recommend(query.lexical, vector, k, allowed, Method.HYBRID, calibration, not context, False)
    order = named_first(ranking.named_apps, named, [hit.index for hit in answer.hits])
    return replace(answer, hits=tuple(answer.hits[p] for p in order))


def _order_of(hit: Hit) -> float:
    """What orders tools of different steps: the calibrated probability (comparable across queries), else the
    ranking's own score."""
    return hit.probability if hit.probability is not None else hit.score


def recommend(
    ranking: RankingIndex,
    embedder: Embedder,
    task: str,
    context: str | None,
    k: int,
    allowed: BoolArray | None = None,
    method: Method = Method.HYBRID,
    calibration: Calibration | None = SHIPPED,
) -> Recommendation:
    """Up to ``k`` allowed tools for one step, best first, or none when nothing allowed matches it. With a context,
    the ranking's order of one app's siblings stands: the sibling stage (siblings.py) was fit and measured on tasks
    alone, and a context naming the sibling it wants ("we talk on WhatsApp") moves it up through the words only."""
    query, vectors = _formed(ranking, embedder, task, context, method)
    return ranking.recommend(query.lexical, vectors, k, allowed, method, calibration, not context)


def ranked(ranking: RankingIndex, embedder: Embedder, task: str, context: str | None, k: int) -> Ranked:
    """The k best tools for the task with what the score reads of them, before any refusal (hybrid)."""
    query, vectors = _formed(ranking, embedder, task, context, Method.HYBRID)
    return ranking.ranked(query.lexical, vectors, k)


def _formed(
    ranking: RankingIndex, embedder: Embedder, task: str, context: str | None, method: Method
) -> tuple[QueryText, FloatArray | None]:
    query = query_text(task, context, ranking.with_meanings)
    return query, None if method is Method.BM25 else embed_query(embedder, query)
