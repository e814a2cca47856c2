"""The usage view the console charts (GET /v1/usage, PRODUCT.md §8): recommendations and linked executions per day,
the tools most run, and the share of recommendations that led to a run, from the query log.

Scoped as every other read: a key limited to a gateway sees only that gateway's records and, of their executions,
only tools the gateway allows, so the view shows nothing the key could not have asked for itself. No task text and
no user id leaves here: counts and tool names only.
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from handler.index.holder import IndexHolder
from handler.policy.model import Gateway, QueryRecord
from handler.policy.store import PolicyStore

# A scan of a deployment's query log stops here: the view is for a person looking, not an audit, and one console
# request must stay bounded (the local file store keeps at most 10,000 records in memory anyway).
MAX_USAGE_RECORDS = 20_000
MAX_TOP_TOOLS = 10


@dataclass(frozen=True)
class UsageDay:
    day: date
    recommendations: int
    executions: int


@dataclass(frozen=True)
class ToolRuns:
    tool_name: str
    runs: int  # executions of it linked to a recommendation in the window
    succeeded: int  # ... whose outcome was ok


@dataclass(frozen=True)
class Usage:
    days: tuple[UsageDay, ...]  # one per UTC day of the window, oldest first, zeros included
    recommendations: int  # select requests logged in the window
    tasks: int  # their tasks
    recommendations_followed: int  # ... of them with at least one linked execution
    executions: int  # linked executions in the window
    top_tools: tuple[ToolRuns, ...]  # most run first, then by name
    truncated: bool  # the scan of the query log stopped at MAX_USAGE_RECORDS: the counts are a part of it

    @property
    def follow_rate(self) -> float | None:
        return self.recommendations_followed / self.recommendations if self.recommendations else None


def fold_usage(
    records: Iterable[QueryRecord], today: date, days: int, shown: Callable[[str], bool], truncated: bool = False
) -> Usage:
    """Count ``records`` (already scoped to the caller) over the ``days`` UTC days ending ``today``; ``shown`` says
    which executed tool names the caller may see (the others are neither counted nor named)."""
    first = today - timedelta(days=days - 1)
    recommendations: Counter[date] = Counter()
    executions: Counter[date] = Counter()
    runs: Counter[str] = Counter()
    succeeded: Counter[str] = Counter()
    tasks = followed = 0
    for record in records:
        if first <= _day(record.created_at) <= today:
            recommendations[_day(record.created_at)] += 1
            tasks += len(record.tasks)
            followed += any(shown(e.tool_name) for e in record.executions)
        for execution in record.executions:
            if shown(execution.tool_name) and first <= _day(execution.at) <= today:
                executions[_day(execution.at)] += 1
                runs[execution.tool_name] += 1
                succeeded[execution.tool_name] += execution.outcome == "ok"
    window = [first + timedelta(days=n) for n in range(days)]
    top = sorted(runs.items(), key=lambda item: (-item[1], item[0]))[:MAX_TOP_TOOLS]
    return Usage(
        days=tuple(UsageDay(d, recommendations[d], executions[d]) for d in window),
        recommendations=sum(recommendations.values()),
        tasks=tasks,
        recommendations_followed=followed,
        executions=sum(executions.values()),
        top_tools=tuple(ToolRuns(name, count, succeeded[name]) for name, count in top),
        truncated=truncated,
    )


def _day(moment: datetime) -> date:
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC).date()


class UsageService:
    def __init__(self, holder: IndexHolder, store: PolicyStore) -> None:
        self.holder = holder
        self.store = store

    def usage(self, gateway: Gateway | None, days: int, user_id: str | None, now: float | None = None) -> Usage:
        """What the caller may see: ``gateway``'s records (the one its key is limited to or its request names;
        every record when neither), one user's when ``user_id`` is given."""
        moment = time.time() if now is None else now
        scan = list(itertools.islice(self.store.queries(moment), MAX_USAGE_RECORDS + 1))
        records = [
            r
            for r in scan[:MAX_USAGE_RECORDS]
            if (gateway is None or r.gateway_id == gateway.gateway_id) and (user_id is None or r.user_id == user_id)
        ]
        shown = _every_tool if gateway is None else self._in_gateway(gateway)
        today = datetime.fromtimestamp(moment, UTC).date()
        return fold_usage(records, today, days, shown, truncated=len(scan) > MAX_USAGE_RECORDS)

    def _in_gateway(self, gateway: Gateway) -> Callable[[str], bool]:
        table = self.holder.current().table
        allowed = table.mask(gateway.allowed)

        def shown(name: str) -> bool:
            position = table.position(name)
            return position is not None and bool(allowed[position])

        return shown


def _every_tool(_name: str) -> bool:
    return True
