"""Select and search: rank the tools a request may use, log the recommendation, return full tools.

The REST routes and the MCP adapter both call these services; they raise ToolrecErrors that each
adapter maps once (REST: status + error body; MCP: a tool result with isError).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Literal

import numpy as np

from handler import observability
from handler.catalog.answer_budget import fitting, fitting_per_task
from handler.catalog.tool import Tool
from handler.errors import PolicyUnavailableError, ServiceUnavailableError
from handler.index.holder import IndexHolder
from handler.index.load import Index
from handler.policy.model import QueryRecord
from handler.policy.store import PolicyStore
from handler.ranking.arrays import BoolArray
from handler.ranking.explain import NoMatchWhy, Why, explain_empty, explain_hits
from handler.ranking.query import Embedder
from handler.ranking.recommend import recommend_task
from handler.ranking.retriever import Hit, Method, Recommendation
from handler.services.access import AccessPolicy, Caller

log = logging.getLogger(__name__)
SECONDS_PER_DAY = 86_400


EmptyReason = Literal["no_match", "below_min_score", "nothing_allowed", "unavailable"]
SCORE_DECIMALS = 4  # a score as every answer shows it; a floor is compared with that (PRODUCT.md §2)


@dataclass(frozen=True)
class Suggestion:
    tool: Tool
    score: float  # the calibrated probability that the tool is a right one for the task (PRODUCT.md §2)
    step: str | None = None  # the part of a compound task's text it serves; None for a one-step task
    why: Why | None = None  # only when the request asks (explain)


@dataclass(frozen=True)
class TaskResult:
    task: str
    suggestions: tuple[Suggestion, ...]
    # Why there are no suggestions: nothing fits, tools fit but none reached the floor, this user under this
    # gateway may use no tool, or (only with isolate_failures) the lookup for this task failed.
    empty_reason: EmptyReason | None = None
    why: NoMatchWhy | None = None  # what a no_match compared, only when the request asks (explain)

    @property
    def tools(self) -> tuple[Tool, ...]:
        return tuple(s.tool for s in self.suggestions)


@dataclass(frozen=True)
class Selection:
    query_id: str
    results: tuple[TaskResult, ...]


@dataclass(frozen=True)
class UsablePage:
    tools: tuple[Tool, ...]
    total: int  # across all pages


class ToolFinder:
    def __init__(
        self,
        holder: IndexHolder,
        embedder: Embedder,
        access: AccessPolicy,
        store: PolicyStore,
        query_log_ttl_days: int = 30,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.holder = holder
        self.embedder = embedder
        self.access = access
        self.store = store
        self.query_log_ttl_seconds = query_log_ttl_days * SECONDS_PER_DAY
        self._clock = clock

    def _scope(self, caller: Caller) -> tuple[Index, BoolArray]:
        index = self.holder.current()
        return index, self.access.allowed_mask(index.table, caller.user_id, caller.gateway)

    def select(
        self,
        caller: Caller,
        tasks: Sequence[str],
        context: str | None,
        top_k: int,
        min_score: float | None = None,
        isolate_failures: bool = False,
        explain: bool = False,
    ) -> Selection:
        """Up to ``top_k`` tools per task, best first, among the tools the user may use under the gateway, each
        scored at least ``min_score`` (else the gateway's floor, if it sets one).

        With ``isolate_failures`` (MCP SelectTools), a task whose lookup fails comes back ``unavailable``
        instead of failing the others (PRODUCT.md §3). With ``explain``, each suggestion and each no_match says why.
        """
        started = time.perf_counter()
        index, allowed = self._scope(caller)
        floor = min_score if min_score is not None else caller.gateway.min_score if caller.gateway else None
        found: list[Answer | EmptyReason] = []  # each task's hits, best first, or why it has none
        ranked: list[Recommendation | None] = []  # each task's ranking, before the floor; None: not ranked
        for task in tasks:
            if not allowed.any():
                found.append("nothing_allowed")
                ranked.append(None)
                continue
            try:
                answer = recommend_task(index.ranking, self.embedder, task, context, top_k, allowed)
            except (RuntimeError, ValueError, MemoryError) as exc:  # onnxruntime raises RuntimeError subclasses
                log.exception("ranking failed")
                if isolate_failures:
                    found.append("unavailable")
                    ranked.append(None)
                    continue
                message = "the tool lookup failed; retry the request"
                raise ServiceUnavailableError(message, public=message) from exc
            found.append(_at_floor(answer, floor))
            ranked.append(answer)
        results = _within_budget(index, tasks, found)
        if explain:  # after the ranking, from it: a select that does not ask pays nothing (ranking/explain.py)
            results = [_explained(index, r, why, context, floor) for r, why in zip(results, ranked, strict=True)]
        selection = Selection(str(uuid.uuid4()), tuple(results))
        observability.bind(query_id=selection.query_id, gateway_id=caller.gateway_id)
        latency_ms = 1000 * (time.perf_counter() - started)
        observability.record_select(latency_ms, [r.task for r in results], [r.empty_reason for r in results])
        self._log_query(selection, caller)
        return selection

    def search(self, caller: Caller, query: str, top_k: int) -> tuple[Tool, ...]:
        """Tools ranked by keyword match alone (BM25): only tools sharing a word with the query."""
        index, allowed = self._scope(caller)
        positions = [hit.index for hit in index.ranking.rank(query, None, top_k, allowed, Method.BM25)]
        return tuple(index.tools[i] for i in positions[: fitting(index.tools.record_bytes(positions))])

    def usable(self, caller: Caller, offset: int, limit: int) -> UsablePage:
        """A page of the tools the user may use under the gateway, in catalog order (what a provider defers): up to
        ``limit`` tools, and only as many as one answer carries; the next page starts after the last one."""
        index, allowed = self._scope(caller)
        positions = np.flatnonzero(allowed)
        page = positions[offset : offset + limit].tolist()  # only the page's records are read
        page = page[: fitting(index.tools.record_bytes(page))]
        return UsablePage(tuple(index.tools[i] for i in page), int(positions.size))

    def _log_query(self, selection: Selection, caller: Caller) -> None:
        now = self._clock()
        record = QueryRecord(
            query_id=selection.query_id,
            user_id=caller.user_id,
            key_id=caller.principal.key_id,  # learning from use counts evidence per key (build_index/usage/fold.py)
            gateway_id=caller.gateway_id,
            tasks=tuple(r.task for r in selection.results),
            recommended=tuple(tuple(t.name for t in r.tools) for r in selection.results),
            created_at=datetime.fromtimestamp(now, UTC),
            expires_at=int(now) + self.query_log_ttl_seconds,
        )
        try:
            self.store.put_query(record)
        except PolicyUnavailableError:
            # The recommendation itself succeeded; losing its log entry only unlinks later executions.
            log.warning("query log write failed", exc_info=True)


@dataclass(frozen=True)
class Answer:
    hits: tuple[Hit, ...]  # best first, none below the floor
    steps: tuple[str | None, ...]  # the step each hit serves (None: a one-step task)


def shown_score(hit: Hit) -> float:
    """A hit's score as the answer shows it: what a floor is compared with, so a floor equal to a score shown
    keeps that tool (PRODUCT.md §2)."""
    return round(hit.probability or 0.0, SCORE_DECIMALS)


def _at_floor(found: Recommendation, floor: float | None) -> Answer | EmptyReason:
    """The hits at or above the floor, or why there are none: the calibrated no match, or none at the floor."""
    if not found.hits:
        return "no_match"
    steps: tuple[str | None, ...] = found.steps or (None,) * len(found.hits)
    kept = [(h, s) for h, s in zip(found.hits, steps, strict=True) if floor is None or shown_score(h) >= floor]
    if not kept:
        return "below_min_score"
    return Answer(tuple(h for h, _ in kept), tuple(s for _, s in kept))


def _within_budget(index: Index, tasks: Sequence[str], found: Sequence[Answer | EmptyReason]) -> list[TaskResult]:
    """Each task's suggestions, as many as one answer carries (answer_budget.py: each task keeps its best)."""
    positions = [[hit.index for hit in a.hits] if isinstance(a, Answer) else [] for a in found]
    kept = fitting_per_task([index.tools.record_bytes(p) for p in positions])
    results = []
    for task, answer, count in zip(tasks, found, kept, strict=True):
        if isinstance(answer, str):
            results.append(TaskResult(task, (), answer))
        else:
            rows = zip(answer.hits[:count], answer.steps, strict=False)
            suggestions = tuple(Suggestion(index.tools[h.index], shown_score(h), step) for h, step in rows)
            results.append(TaskResult(task, suggestions))
    return results


def _explained(
    index: Index, result: TaskResult, recommendation: Recommendation | None, context: str | None, floor: float | None
) -> TaskResult:
    """The task's result with why each suggestion was made, or what its no_match compared."""
    if recommendation is None:  # nothing_allowed or unavailable: nothing was compared
        return result
    if not result.suggestions:
        return replace(result, why=explain_empty(recommendation, floor))
    hits = {index.ranking.names[h.index]: h for h in recommendation.hits}
    explained = []
    for suggestion in result.suggestions:  # a compound task's step is read with the task it was ranked in
        hit = [hits[suggestion.tool.name]]
        why = explain_hits(index.ranking, result.task, context, hit, recommendation.usage, suggestion.step)[0]
        explained.append(replace(suggestion, why=why))
    return replace(result, suggestions=tuple(explained))
