"""`toolrec eval --usage-split --traffic real`: the simulated query log has real traffic's shape (issue 25 item 3)."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

from build_index.quality.evaluate import Query
from build_index.quality.usage_eval import KEYS, traffic_records
from build_index.usage.fold import groups_from_queries

NOW = datetime(2026, 12, 1, tzinfo=UTC)
QUERIES = [Query(f"q{i}", f"task number {i}", [[f"tool{i % 7}"], [f"tool{(i + 1) % 7}"]], {}) for i in range(300)]


def suggest(text: str) -> list[str]:
    """The right tools are suggested, but never first, and one query in three misses its second tool."""
    number = int(text.rsplit(" ", 1)[1])
    shown = ["decoy", f"tool{number % 7}"]
    return shown if number % 3 == 0 else [*shown, f"tool{(number + 1) % 7}"]


def test_the_traffic_repeats_requests_by_several_users_and_keys_and_leaves_some_unrun_or_failed() -> None:
    records = traffic_records(QUERIES, suggest, NOW)
    assert records == traffic_records(QUERIES, suggest, NOW)  # the same traffic in every run
    repeats = Counter(r.query_id.rsplit("-", 1)[0] for r in records)
    assert set(repeats.values()) == {1, 2, 3, 4}
    assert len({r.key_id for r in records}) == KEYS and len({r.user_id for r in records}) > 100
    outcomes = Counter(e.outcome for r in records for e in r.executions)
    never_run = sum(not r.executions for r in records) / len(records)
    assert 0.1 < never_run < 0.3 and 0.05 < outcomes["error"] / sum(outcomes.values()) < 0.15
    assert all(r.recommended[0][0] == "decoy" for r in records)  # every tool that ran was not the first suggestion
    # Spread over three weeks, as a tenant's month of log is: the fold counts evidence over time (issue 33 item 4).
    times = sorted(r.created_at for r in records)
    assert times[-1] - times[0] > timedelta(days=14) and len({t.date() for t in times}) >= 20


def test_the_fold_reads_it_as_a_query_log_with_its_bounds() -> None:
    log = groups_from_queries(traffic_records(QUERIES, suggest, NOW), NOW.timestamp())
    assert log.ignored["failed"] > 0 and log.ignored["not_suggested"] > 0  # runs of tools select did not suggest
    assert {g.key_id for g in log.groups} <= {f"key-{k}" for k in range(KEYS)}
    assert all(g.tools and "decoy" not in g.tools for g in log.groups)
