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
from handler.ranking.recommend import recommend
from handler.ranking.retriever import Hit, Method, Recommendation
from handler.services.access import AccessPolicy, Caller

log = logging.getLogger(__name__)
SECONDS_PER_DAY = 86_400


EmptyReason = Literal["no_match", "nothing_allowed", "unavailable"]


@dataclass(frozen=True)
class Suggestion:
    tool: Tool
    score: float  # the calibrated probability that the tool is a right one for the task (PRODUCT.md §2)
    why: Why | None = None  # only when the request asks (explain)


@dataclass(frozen=True)
class TaskResult:
    task: str
    suggestions: tuple[Suggestion, ...]
    # Why there are no suggestions: nothing fits, this user under this gateway may use no tool, or (only with
    # isolate_failures) the lookup for this task failed.
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
        found: list[tuple[Hit, ...] | EmptyReason] = []  # each task's hits, best first, or why it has none
        ranked: list[Recommendation | None] = []  # each task's ranking, before the floor; None: not ranked
        for task in tasks:
            if not allowed.any():
                found.append("nothing_allowed")
                ranked.append(None)
                continue
            try:
                recommendation = recommend(index.ranking, self.embedder, task, context, top_k, allowed)
            except (RuntimeError, ValueError, MemoryError) as exc:  # onnxruntime raises RuntimeError subclasses
                log.exception("ranking failed")
                if isolate_failures:
                    found.append("unavailable")
                    ranked.append(None)
                    continue
                message = "the tool lookup failed; retry the request"
                raise ServiceUnavailableError(message, public=message) from exc
            kept = tuple(h for h in recommendation.hits if floor is None or (h.probability or 0.0) >= floor)
            found.append(kept or "no_match")  # none: the calibrated no match, or none at the floor
            ranked.append(recommendation)
        results = _within_budget(index, tasks, found)
        if explain:  # after the ranking, from it: a select that does not ask pays nothing (ranking/explain.py)
            results = [_explained(index, r, why, context, floor) for r, why in zip(results, ranked, strict=True)]
        selection = Selection(str(uuid.uuid4()), tuple(results))
        observability.bind(query_id=selection.query_id, gateway_id=caller.gateway_id)
        no_match = sum(1 for r in results if r.empty_reason == "no_match")
        observability.record_select(1000 * (time.perf_counter() - started), len(results), no_match)
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


def _within_budget(
    index: Index, tasks: Sequence[str], found: Sequence[tuple[Hit, ...] | EmptyReason]
) -> list[TaskResult]:
    """Each task's suggestions, as many as one answer carries (answer_budget.py: each task keeps its best)."""
    positions = [[hit.index for hit in hits] if isinstance(hits, tuple) else [] for hits in found]
    kept = fitting_per_task([index.tools.record_bytes(p) for p in positions])
    results = []
    for task, hits, count in zip(tasks, found, kept, strict=True):
        if isinstance(hits, str):
            results.append(TaskResult(task, (), hits))
        else:
            suggestions = tuple(Suggestion(index.tools[h.index], h.probability or 0.0) for h in hits[:count])
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
    chosen = [hits[s.tool.name] for s in result.suggestions]
    whys = explain_hits(index.ranking, result.task, context, chosen, recommendation.usage)
    return replace(result, suggestions=tuple(replace(s, why=w) for s, w in zip(result.suggestions, whys, strict=True)))
