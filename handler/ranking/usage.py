"""What a tenant's agents ran before, as ranking evidence (PRODUCT.md §6). Pure: arrays in, scores out.

Three signals, all precomputed by the build from successful executions linked to a select (build_index/usage/fold.py):
- past tasks: for each tool, the mean embedding of the distinct tasks it ran for (as Tool2Vec, arXiv 2409.02141,
  represents a tool by the requests that used it): the words users really write, which a tool's first description
  line often lacks. A tool's semantic score becomes the better of its text's cosine and a share of its past
  tasks' cosine (``with_past_tasks``), so usage moves a tool within the semantic ranking and never adds a vote of
  its own: a tool no text finds still gets at most the semantic signal's one vote.
- co-usage: for each tool, the tools run with it for one task, and in what share of its execution groups. The
  second and third tool of a multi-tool task rarely resemble its text; they resemble what is used beside the
  first (``companion_votes``).
- a task classifier: one linear model per tool with usage, fit by the build on the same past tasks (ridge
  regression of "this tool ran for it" on the task's embedding, issue 25). Where a tool serves varied requests
  the mean of its past tasks blurs; the classifier weighs what tells its tasks apart from other tools' tasks. It
  votes for its best tool when that tool's score stands out (by more than ``CLASSIFIER_MARGIN`` over the next
  tool's and over 0, the score of "none of them"), so it abstains on a tie or where no tool's tasks fit
  (``classifier_votes``); like the past tasks' lift, only for a tool whose past tasks are close to the task.
  Leave-one-set-out chose the smallest margin tried with a small vote over a larger
  margin with a larger vote (docs/quality.md).

Bounds: a past task only counts when it is close to the query (``PAST_TASK_FLOOR``), so evidence for one kind of
task moves no unrelated one; companions vote at a tenth of a signal's weight and only among the tools already ranked in
the first ``COMPANION_CANDIDATES``; and the build keeps distinct tasks, each user giving at most a few per tool, so
a burst of calls is one past task; the classifier learns from exactly those past tasks and its vote is a quarter
of a signal's first place (``CLASSIFIER_WEIGHT``), so a tool both signals rank first stays above it. The
constants were chosen leave-one-set-out (docs/quality.md "Learning from use").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from handler.ranking.arrays import BoolArray, FloatArray, IndexArray, IntArray
from handler.ranking.dense import DenseScorer
from handler.ranking.fusion import RANK_CONSTANT, rank_votes
from handler.ranking.topk import top_k

PAST_TASK_FLOOR = 0.5  # below this cosine a tool's past tasks say nothing about the query
PAST_TASK_SHARE = 0.9  # a past task's cosine counts a little less than the tool's own text
COMPANION_WEIGHT = 0.1  # issue 25's sweep: 0.5 cost callnavi and toolalpaca nDCG@10 (2.8 and 1.8 points)
COMPANION_SEEDS = 3  # the best hits whose companions are lifted
COMPANION_CANDIDATES = 20  # only a tool the text already ranks this high can be lifted as a companion
CLASSIFIER_WEIGHT = 0.25  # of a first place's vote: a nudge among close tools, never a signal of its own
CLASSIFIER_MARGIN = 0.0  # how far its best score must exceed the next tool's (and 0) before it votes


@dataclass(frozen=True)
class UsageEvidence:
    past_tasks: DenseScorer  # one unit row per tool with usage: the mean of its past tasks' embeddings
    past_task_tools: IntArray  # (m,): the tool of each row
    co_indptr: npt.NDArray[np.int64]  # CSR over tools: tool t's companions are co_tools[indptr[t]:indptr[t+1]]
    co_tools: IntArray
    co_shares: FloatArray  # the share of t's execution groups that also ran the companion, in (0, 1]
    # One row per row of past_tasks (the same tools): the classifier's weights; None in a build without it.
    classifier: DenseScorer | None = None

    def past_task_cosines(self, task_vector: FloatArray, tool_count: int) -> FloatArray:
        """Each tool's cosine between the task and its past tasks; -1 for a tool with none."""
        cosines = np.full(tool_count, -1.0, dtype=np.float32)
        cosines[self.past_task_tools] = self.past_tasks.score(task_vector)
        return cosines

    def companions(self, seeds: Sequence[int], tool_count: int) -> FloatArray:
        """How strongly each tool is used beside the seeds (best first), the first seed counting most."""
        strength = np.zeros(tool_count, dtype=np.float32)
        for place, seed in enumerate(seeds):
            start, end = self.co_indptr[seed], self.co_indptr[seed + 1]
            np.add.at(strength, self.co_tools[start:end], self.co_shares[start:end] / (place + 1))
        return strength


def classifier_votes(usage: UsageEvidence, task_vector: FloatArray, past: FloatArray, allowed: BoolArray) -> FloatArray:
    """A vote for the allowed tool the classifier picks for the task when its pick stands out by more than
    ``CLASSIFIER_MARGIN`` (over the next allowed tool and over 0, "none of them") and its past tasks are close to
    the task (``past``: each tool's past-task cosine, ``past_task_cosines``, at least ``PAST_TASK_FLOOR``, the
    bound the past tasks' own lift keeps); else none."""
    votes = np.zeros(len(past), dtype=np.float32)
    if usage.classifier is None or not len(usage.past_task_tools):
        return votes
    open_rows = allowed[usage.past_task_tools]
    if not open_rows.any():
        return votes
    scores = np.where(open_rows, usage.classifier.score(task_vector), -np.inf)
    best = int(np.argmax(scores))
    runner_up = float(np.max(np.delete(scores, best), initial=0.0))
    if float(scores[best]) - max(runner_up, 0.0) <= CLASSIFIER_MARGIN:  # a tie, or no better than none of them
        return votes
    tool = int(usage.past_task_tools[best])
    if past[tool] >= PAST_TASK_FLOOR:  # a burst tying a tool to one kind of task votes on no other kind
        votes[tool] = CLASSIFIER_WEIGHT / (RANK_CONSTANT + 1)
    return votes


def with_past_tasks(
    semantic: FloatArray, usage: UsageEvidence, task_vector: FloatArray, past: FloatArray | None = None
) -> FloatArray:
    """The semantic scores, each tool's raised to ``PAST_TASK_SHARE`` of its past tasks' cosine where that is
    higher and above ``PAST_TASK_FLOOR`` (``past``: those cosines, when the caller has them)."""
    if past is None:
        past = usage.past_task_cosines(task_vector, len(semantic))
    return np.maximum(semantic, np.where(past >= PAST_TASK_FLOOR, PAST_TASK_SHARE * past, -1.0)).astype(np.float32)


def companion_votes(usage: UsageEvidence, ids: IndexArray, fused: FloatArray, tool_count: int) -> FloatArray:
    """Votes for the tools ``ids`` (ascending, with their ``fused`` scores: every allowed tool the ranking may return)
    used beside the best hits, among those the ranking already finds plausible (the best hit itself needs none)."""
    order = top_k(fused, COMPANION_CANDIDATES)
    if not len(order):
        return np.zeros_like(fused)
    seeds = [int(ids[i]) for i in order[:COMPANION_SEEDS]]
    strength = usage.companions(seeds, tool_count)[ids]
    plausible = np.zeros(len(ids), dtype=bool)
    plausible[order] = True
    eligible = plausible & (strength > 0)
    eligible[order[0]] = False
    return (COMPANION_WEIGHT * rank_votes(strength, eligible)).astype(np.float32)
