"""What counts as learning-from-use evidence (PRODUCT.md §6; docs/security.md "Learning from use"), and how much of a
tool's history one user, one key or one hour may give. Pure: execution groups in, the groups and tasks that count out.

Evidence from the query log is counted per API key, since a key names whatever ``user_id`` it likes: a key gives at
most ``TASKS_PER_KEY_PER_TOOL`` of a tool's past tasks, and a tool (or a pair of co-used tools) gains evidence only
once ``KEYS_PER_EVIDENCE`` keys ran it, so one key alone, however many users it names, moves nobody's answers
(issue 22 item 6). It is also counted over time, since several keys can burst together (issue 33 item 4): one clock
hour gives at most ``TASKS_PER_HOUR_PER_TOOL`` of a tool's past tasks, whatever keys and users ran in it, and a tool
(or pair) learns only once its runs span ``EVIDENCE_SPAN``, so a burst of any number of keys is one piece of
evidence and not enough. Groups without a key (an operator's own usage file, or a local query log the operator
declares their own with ``toolrec build --single-operator``) are the operator's word: only the per-user bound applies.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from build_index.usage.fold import ExecutionGroup, Resolved

# A tool keeps its most recent distinct past tasks: enough to cover the ways users ask for it, so that old
# habits fade; their mean is one row per tool, so a query's cost does not grow with traffic.
TASKS_PER_TOOL = 64
TASKS_PER_USER_PER_TOOL = 4  # one user cannot fill a tool's past tasks alone
TASKS_PER_KEY_PER_TOOL = 16  # nor one key, whatever users it names: at least four keys' tasks fit
KEYS_PER_EVIDENCE = 3  # a tool, or a pair of co-used tools, learns from the query log once this many keys ran it
EVIDENCE_SPAN = timedelta(days=1)  # ... and once its runs are this far apart: a burst, whatever its keys, is not
TASKS_PER_HOUR_PER_TOOL = 4  # one clock hour of the query log weighs what one user does, however many keys ran in it
MAX_PAST_TASKS = 50_000  # a bound on the build's embedding work (about 6 minutes on one core)


@dataclass
class Vouchers:
    """Who ran a tool (or a pair of tools) and when: the query log's runs are evidence once ``KEYS_PER_EVIDENCE``
    keys ran it over at least ``EVIDENCE_SPAN``; the operator's own runs need no one to vouch for them."""

    keys: set[str] = field(default_factory=set)
    times: list[datetime] = field(default_factory=list)
    operator: bool = False

    def add(self, group: ExecutionGroup) -> None:
        if group.key_id is None:
            self.operator = True
            return
        self.keys.add(group.key_id)
        if group.at is not None:
            self.times.append(group.at)

    def lacking(self) -> str | None:
        """Why the query log's runs are not evidence yet (a kind of ``usage.ignored``); None when they are."""
        if len(self.keys) < KEYS_PER_EVIDENCE:
            return "too_few_keys"
        if not self.times or max(self.times) - min(self.times) < EVIDENCE_SPAN:
            return "within_a_day"  # a burst, of however many keys, is one piece of evidence
        return None


def vouched_for(groups: Resolved, ignored: Counter[str]) -> Resolved:
    """The groups without the query-log runs of tools that too few keys ran, or only within a short time (counted)."""
    vouchers: dict[int, Vouchers] = defaultdict(Vouchers)
    for group, tools in groups:
        for tool in tools:
            vouchers[tool].add(group)
    vouched: Resolved = []
    for group, tools in groups:
        kept = tools
        if group.key_id is not None:
            lacking = [(tool, vouchers[tool].lacking()) for tool in tools]
            ignored.update(why for _, why in lacking if why is not None)
            kept = tuple(tool for tool, why in lacking if why is None)
        if kept:
            vouched.append((group, kept))
    return vouched


def past_tasks_by_tool(groups: Resolved) -> dict[int, list[str]]:
    """Each tool's most recent distinct tasks (a source without times keeps its order), at most
    ``TASKS_PER_TOOL``, of which one user gives at most ``TASKS_PER_USER_PER_TOOL``, one key at most
    ``TASKS_PER_KEY_PER_TOOL`` and one clock hour of the query log at most ``TASKS_PER_HOUR_PER_TOOL``."""
    newest_first = sorted(groups, key=lambda g: g[0].at or datetime.min.replace(tzinfo=UTC), reverse=True)
    chosen: dict[int, list[str]] = defaultdict(list)
    taken: Counter[tuple[str, object, int]] = Counter()  # past tasks kept per (bound, its user/key/hour, tool)
    seen: set[tuple[str, int]] = set()
    kept = 0
    for group, tools in newest_first:
        text = " ".join(group.task.split())
        bounds = _bounds(group)
        for tool in tools:
            key = (text.casefold(), tool)
            if key in seen or len(chosen[tool]) >= TASKS_PER_TOOL or kept >= MAX_PAST_TASKS:
                continue
            if any(taken[(kind, who, tool)] >= cap for kind, who, cap in bounds):
                continue
            seen.add(key)
            taken.update((kind, who, tool) for kind, who, _ in bounds)
            chosen[tool].append(text)
            kept += 1
    return {tool: tasks for tool, tasks in chosen.items() if tasks}


def _bounds(group: ExecutionGroup) -> list[tuple[str, object, int]]:
    """The caps a group's past tasks count against: (kind, whose, how many per tool)."""
    bounds: list[tuple[str, object, int]] = []
    if group.user_id is not None:
        bounds.append(("user", group.user_id, TASKS_PER_USER_PER_TOOL))
    if group.key_id is not None:  # the query log: per key, and per clock hour whatever keys ran in it
        bounds.append(("key", group.key_id, TASKS_PER_KEY_PER_TOOL))
        if group.at is not None:
            hour = group.at.astimezone(UTC).replace(minute=0, second=0, microsecond=0)
            bounds.append(("hour", hour, TASKS_PER_HOUR_PER_TOOL))
    return bounds


def unused_evidence_note(ignored: dict[str, int]) -> str | None:
    """What a build prints when the query log's bounds held runs back (``usage.ignored``): why, and what to do."""
    held = ignored.get("too_few_keys", 0) + ignored.get("within_a_day", 0)
    if not held:
        return None
    return (
        f"{held} run(s) not used yet: a tool learns from the query log once {KEYS_PER_EVIDENCE} API keys ran it, "
        f"over at least {EVIDENCE_SPAN.days} day, so that one key or a burst of calls moves no one's answers "
        '(KEYS_PER_EVIDENCE and EVIDENCE_SPAN in build_index/usage/evidence.py; docs/security.md "Learning from use").'
        " On a machine only you use, build from your own query log with --single-operator"
    )
