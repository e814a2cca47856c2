"""How many tools one answer may carry, by their bytes (issue 22 item 7): a Lambda answer holds at most 6 MB.

Every answer that lists tools with their schemas (the providers' tools pages, MCP ``tools/list``, select, search,
SelectTools) takes them in order while they fit MAX_ANSWER_TOOL_BYTES, counted as each tool's record in the build.
Half of Lambda's 6 MB and then some stays free: API Gateway's envelope escapes the body's quotes again, and MCP's
SelectTools sends its answer twice (structured, and as text). The whole arcade catalog (8,118 tools) is 5.9 MB of
such records (up to 8.4 KB each), so an MCP ``tools/list`` of it takes three pages; a providers' page of 1,000 of
its tools (at most 0.83 MB) never reaches the bound. With MAX_SCHEMA_BYTES per schema, the best tool of each of
16 tasks always fits.
"""

from __future__ import annotations

from collections.abc import Sequence

MAX_ANSWER_TOOL_BYTES = 2 * 1024 * 1024


def fitting(sizes: Sequence[int], budget: int = MAX_ANSWER_TOOL_BYTES) -> int:
    """How many of the first tools fit the budget together; at least one, so that paging always moves on."""
    total = 0
    for count, size in enumerate(sizes):
        total += size
        if total > budget:
            return max(count, 1)
    return len(sizes)


def fitting_per_task(sizes: Sequence[Sequence[int]], budget: int = MAX_ANSWER_TOOL_BYTES) -> list[int]:
    """How many of each task's tools (best first) one answer keeps: taken rank by rank across the tasks (every
    task's best, then every task's second, ...) until one does not fit. Each task keeps its best tool, so the
    budget never turns a match into "no match"."""
    kept = [min(1, len(task)) for task in sizes]
    total = sum(task[0] for task in sizes if task)
    for rank in range(1, max((len(task) for task in sizes), default=0)):
        for position, task in enumerate(sizes):
            if rank < len(task):
                total += task[rank]
                if total > budget:
                    return kept
                kept[position] += 1
    return kept
