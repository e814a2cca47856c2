"""Select and search: rank the tools a request may use, log the recommendation, return full tools.

The REST routes and the MCP adapter both call these services; they raise ToolrecErrors that each
adapter maps once (REST: status + error body; MCP: a tool result with isError).
"""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

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
from handler.ranking.query import Embedder
from handler.ranking.recommend import recommend
from handler.ranking.retriever import Method
from handler.services.access import AccessPolicy, Caller

log = logging.getLogger(__name__)
SECONDS_PER_DAY = 86_400


@dataclass(frozen=True)
class TaskResult:
    task: str
    tools: tuple[Tool, ...]
    unavailable: bool = False  # the lookup for this task failed (only with isolate_failures)


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
        self, caller: Caller, tasks: Sequence[str], context: str | None, top_k: int, isolate_failures: bool = False
    ) -> Selection:
        """Up to ``top_k`` tools per task, best first, among the tools the user may use under the gateway.

        With ``isolate_failures`` (MCP SelectTools), a task whose lookup fails comes back ``unavailable``
        instead of failing the others (PRODUCT.md §3).
        """
        started = time.perf_counter()
        index, allowed = self._scope(caller)
        found: list[list[int] | None] = []  # each task's tools by position, best first; None: its lookup failed
        for task in tasks:
            try:
                hits = recommend(index.ranking, self.embedder, task, context, top_k, allowed).hits
            except (RuntimeError, ValueError, MemoryError) as exc:  # onnxruntime raises RuntimeError subclasses
                log.exception("ranking failed")
                if isolate_failures:
                    found.append(None)
                    continue
                message = "the tool lookup failed; retry the request"
                raise ServiceUnavailableError(message, public=message) from exc
            found.append([hit.index for hit in hits])  # none: the calibrated no match
        results = _within_budget(index, tasks, found)
        selection = Selection(str(uuid.uuid4()), tuple(results))
        observability.bind(query_id=selection.query_id, gateway_id=caller.gateway_id)
        no_match = sum(1 for r in results if not r.tools and not r.unavailable)
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


def _within_budget(index: Index, tasks: Sequence[str], found: Sequence[list[int] | None]) -> list[TaskResult]:
    """Each task's tools, as many as one answer carries (answer_budget.py: each task keeps its best)."""
    kept = fitting_per_task([index.tools.record_bytes(positions or []) for positions in found])
    return [
        TaskResult(task, (), unavailable=True)
        if positions is None
        else TaskResult(task, tuple(index.tools[i] for i in positions[:count]))
        for task, positions, count in zip(tasks, found, kept, strict=True)
    ]
