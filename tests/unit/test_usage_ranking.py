"""The ranking core's use of usage evidence (handler/ranking/usage.py): what it may and may not change."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from handler.ranking.dense import DenseMatrix, quantize
from handler.ranking.usage import (
    CLASSIFIER_MARGIN,
    COMPANION_CANDIDATES,
    PAST_TASK_FLOOR,
    PAST_TASK_SHARE,
    UsageEvidence,
    classifier_votes,
    companion_votes,
    with_past_tasks,
)

DIM = 8


def unit_rows(rng: np.random.Generator, n: int) -> np.ndarray:
    rows = rng.normal(size=(n, DIM)).astype(np.float32)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def evidence(rng: np.random.Generator, tool_count: int, with_usage: int) -> UsageEvidence:
    tools = np.sort(rng.choice(tool_count, size=with_usage, replace=False)).astype(np.int32)
    companions = [
        rng.choice(tool_count, size=int(rng.integers(0, min(4, tool_count + 1))), replace=False)
        for _ in range(tool_count)
    ]
    indptr = np.zeros(tool_count + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(c) for c in companions])
    flat = np.concatenate(companions).astype(np.int32) if indptr[-1] else np.zeros(0, np.int32)
    shares = rng.uniform(0.1, 1.0, size=len(flat)).astype(np.float32)
    return UsageEvidence(DenseMatrix.from_quantized(quantize(unit_rows(rng, with_usage))), tools, indptr, flat, shares)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), tool_count=st.integers(1, 60), share_used=st.floats(0.0, 1.0))
def test_past_tasks_only_raise_a_tool_and_only_from_a_close_past_task(
    seed: int, tool_count: int, share_used: float
) -> None:
    rng = np.random.default_rng(seed)
    usage = evidence(rng, tool_count, int(share_used * tool_count))
    semantic = rng.uniform(-0.2, 0.9, size=tool_count).astype(np.float32)
    task = unit_rows(rng, 1)[0]
    lifted = with_past_tasks(semantic, usage, task)
    assert (lifted >= semantic).all()
    past = usage.past_task_cosines(task, tool_count)
    raised = lifted > semantic
    assert (past[raised] >= PAST_TASK_FLOOR).all()
    np.testing.assert_allclose(lifted[raised], PAST_TASK_SHARE * past[raised], rtol=1e-6)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), tool_count=st.integers(1, 80))
def test_companions_vote_only_for_allowed_tools_the_ranking_already_holds_high(seed: int, tool_count: int) -> None:
    rng = np.random.default_rng(seed)
    usage = evidence(rng, tool_count, tool_count // 2)
    fused = rng.uniform(0, 1, size=tool_count).astype(np.float32)
    allowed = rng.uniform(size=tool_count) < 0.7
    ids = np.flatnonzero(allowed)  # the ranking hands over the allowed tools it may return, ascending
    votes = np.zeros(tool_count, dtype=np.float32)
    votes[ids] = companion_votes(usage, ids, fused[ids], tool_count)
    ranked = [int(i) for i in np.argsort(-np.where(allowed, fused, -np.inf), kind="stable")]
    plausible = set(ranked[:COMPANION_CANDIDATES]) if allowed.any() else set()
    assert set(np.flatnonzero(votes)) <= plausible - set(ranked[:1])


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), tool_count=st.integers(1, 80), share_used=st.floats(0.0, 1.0))
def test_the_classifier_votes_once_for_an_allowed_tool_and_only_when_its_pick_stands_out(
    seed: int, tool_count: int, share_used: float
) -> None:
    rng = np.random.default_rng(seed)
    usage = evidence(rng, tool_count, int(share_used * tool_count))
    weights = rng.normal(scale=0.5, size=(len(usage.past_task_tools), DIM)).astype(np.float32)
    usage = replace(usage, classifier=DenseMatrix(weights))
    task = unit_rows(rng, 1)[0]
    allowed = rng.uniform(size=tool_count) < 0.7
    past = usage.past_task_cosines(task, tool_count)
    votes = classifier_votes(usage, task, past, allowed)
    voted = np.flatnonzero(votes)
    assert len(voted) <= 1 and (votes >= 0).all()
    if not len(voted):
        return
    assert allowed[voted[0]] and past[voted[0]] >= PAST_TASK_FLOOR
    scores = np.where(allowed[usage.past_task_tools], weights @ task, -np.inf)
    best = int(np.argmax(scores))
    assert usage.past_task_tools[best] == voted[0]
    others = np.delete(scores, best)
    assert scores[best] > 0 and scores[best] - max(float(others.max(initial=0.0)), 0.0) >= CLASSIFIER_MARGIN - 1e-6


def test_the_classifier_abstains_between_two_tools_it_cannot_tell_apart() -> None:
    """Two tools whose weights are the same: no pick stands out, so no vote, however close the task is."""
    rng = np.random.default_rng(1)
    usage = evidence(rng, 10, 2)
    row = unit_rows(rng, 1)[0]
    usage = replace(usage, classifier=DenseMatrix(np.stack([row, row])))
    close = np.ones(10, np.float32)  # every tool's past tasks close to the task
    assert not classifier_votes(usage, row, close, np.ones(10, bool)).any()
    alone = replace(usage, classifier=DenseMatrix(np.stack([row, -row])))
    votes = classifier_votes(alone, row, close, np.ones(10, bool))
    assert (np.flatnonzero(votes) == usage.past_task_tools[:1]).all() and votes.sum() > 0
    # the same clear pick, for a task far from that tool's past tasks: no vote (a burst pins nothing elsewhere)
    assert not classifier_votes(alone, row, np.full(10, PAST_TASK_FLOOR - 0.01, np.float32), np.ones(10, bool)).any()


def test_evidence_with_no_rows_changes_nothing() -> None:
    rng = np.random.default_rng(0)
    empty = UsageEvidence(
        DenseMatrix.from_quantized(quantize(np.zeros((0, DIM), np.float32))),
        np.zeros(0, np.int32),
        np.zeros(11, np.int64),
        np.zeros(0, np.int32),
        np.zeros(0, np.float32),
    )
    semantic = rng.uniform(size=10).astype(np.float32)
    assert (with_past_tasks(semantic, empty, unit_rows(rng, 1)[0]) == semantic).all()
    assert not companion_votes(empty, np.arange(10), semantic, 10).any()
    empty = replace(empty, classifier=DenseMatrix(np.zeros((0, DIM), np.float32)))
    assert not classifier_votes(empty, unit_rows(rng, 1)[0], np.full(10, -1.0, np.float32), np.ones(10, bool)).any()
