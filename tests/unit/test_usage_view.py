"""The console's usage view (handler/services/usage.py): the window is UTC days, runs count on the day they ran, a
tool the caller may not see is neither counted nor named, and one view reads a bounded part of the query log."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta

from handler.policy.model import ExecutionRecord, QueryRecord
from handler.services.usage import MAX_USAGE_RECORDS, UsageService, fold_usage

TODAY = date(2026, 12, 4)
NOON = datetime(2026, 12, 4, 12, tzinfo=UTC)


def record(created: datetime, *runs: tuple[str, datetime, str], query_id: str = "q") -> QueryRecord:
    executions = tuple(ExecutionRecord(tool_name=t, user_id="u", at=at, outcome=o) for t, at, o in runs)
    return QueryRecord(query_id=query_id, user_id="u", tasks=("a", "b"), recommended=((), ()), created_at=created,
                       expires_at=2_000_000_000, executions=executions)  # fmt: skip


def test_the_window_counts_days_and_runs_on_the_day_they_ran() -> None:
    old = record(NOON - timedelta(days=20), ("Slack.Send", NOON, "ok"))  # asked before the window, run inside it
    late = record(NOON - timedelta(days=1), ("Slack.Send", NOON, "error"), ("Hidden.Tool", NOON, "ok"))
    usage = fold_usage([old, late], TODAY, 3, shown=lambda name: name != "Hidden.Tool")
    assert [(d.day, d.recommendations, d.executions) for d in usage.days] == [
        (date(2026, 12, 2), 0, 0), (date(2026, 12, 3), 1, 0), (date(2026, 12, 4), 0, 2),
    ]  # fmt: skip
    assert (usage.recommendations, usage.tasks, usage.recommendations_followed, usage.executions) == (1, 2, 1, 2)
    assert [(t.tool_name, t.runs, t.succeeded) for t in usage.top_tools] == [("Slack.Send", 2, 1)]
    assert usage.follow_rate == 1.0 and not usage.truncated


class CountingStore:
    """A query log far larger than one view reads; counts what was read."""

    def __init__(self, size: int) -> None:
        self.size, self.read = size, 0

    def queries(self, now: float) -> Iterator[QueryRecord]:
        for n in range(self.size):
            self.read += 1
            yield record(NOON, query_id=f"q{n}")


def test_one_view_reads_a_bounded_part_of_the_log_and_says_so() -> None:
    store = CountingStore(MAX_USAGE_RECORDS * 3)
    usage = UsageService(holder=None, store=store).usage(None, 1, None, now=NOON.timestamp())  # type: ignore[arg-type]
    assert store.read == MAX_USAGE_RECORDS + 1 and usage.truncated
    assert usage.recommendations == MAX_USAGE_RECORDS
    small = CountingStore(10)
    assert not UsageService(holder=None, store=small).usage(None, 1, None, now=NOON.timestamp()).truncated  # type: ignore[arg-type]
