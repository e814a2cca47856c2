"""Which names of the policy no tool or app of the served catalog holds (PRODUCT.md §4, issue 33 item 7).

``toolrec policy`` refuses such a name when it writes one, but a hand-edited file or a later build can still hold
one: a deny of ``Strpe.*`` or ``Slack.SendMesage`` then denies nothing, and nobody is told. The check runs when the
policy or the served build changes (at start, when the policy file is read again, when a new build is swapped in,
on ``/healthz``), never per request: each result is kept for its build and its policy document. Each name comes
with the nearest one the catalog holds.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from handler.catalog.names import did_you_mean, nearest_name
from handler.errors import ToolrecError
from handler.index.holder import IndexHolder
from handler.index.load import Index
from handler.index.table import ToolTable
from handler.policy.model import ALL_TOOLS, PolicyDocument

log = logging.getLogger(__name__)
# Above this many tools, an exact name's nearest is looked for among its app's tools only (difflib reads each
# candidate: every name of a 1M-tool build would take seconds per unknown name).
NEAREST_AMONG_ALL = 20_000


@dataclass(frozen=True)
class UnknownName:
    """One name of the policy the catalog does not hold: where it is written, as written, and the nearest name."""

    record: str  # "gateway default", "access rule no-payments" (a rule's subject, a user id, is not repeated)
    field: str  # allowed, pinned or tools
    name: str
    nearest: str | None

    def describe(self) -> str:
        hint = did_you_mean(self.nearest)
        return f"{self.record} {self.field}: {self.name!r} names no tool or app of the catalog{hint}"


def unknown_names(document: PolicyDocument, table: ToolTable) -> tuple[UnknownName, ...]:
    """Every pattern of a gateway or an access rule, and every pin, that matches no tool of ``table``."""
    found = []
    for record, field, name in _named(document):
        if not _matches(table, name):
            found.append(UnknownName(record, field, name, _nearest(table, name)))
    return tuple(found)


def _named(document: PolicyDocument) -> Iterator[tuple[str, str, str]]:
    for gateway in document.gateways:
        yield from ((f"gateway {gateway.gateway_id}", "allowed", p) for p in gateway.allowed)
        yield from ((f"gateway {gateway.gateway_id}", "pinned", p) for p in gateway.pinned)
    for rule in document.access_rules:
        yield from ((f"access rule {rule.rule_id}", "tools", p) for p in rule.tools)


def _matches(table: ToolTable, pattern: str) -> bool:
    """Whether ``pattern`` matches a tool, as ToolTable.mask reads it (without building a mask)."""
    key = pattern.casefold()
    if key == ALL_TOOLS:
        return True
    if key.endswith(".*"):
        return key[:-2] in table.by_app
    return table.position(pattern) is not None


def _nearest(table: ToolTable, pattern: str) -> str | None:
    apps = {app.casefold(): app for app in table.app_names}
    if pattern.endswith(".*"):
        app = nearest_name(pattern[:-2].casefold(), apps)
        return None if app is None else f"{apps[app]}.*"
    candidates: Sequence[str] = table.names
    if len(table.names) > NEAREST_AMONG_ALL:
        app = nearest_name(pattern.partition(".")[0].casefold(), apps)
        candidates = [] if app is None else [table.names[int(i)] for i in table.by_app[app]]
    return nearest_name(pattern, candidates)


class PolicyNameCheck:
    """The unknown names of the policy in force against the build being served, kept until either changes.

    ``read_policy``: the policy document as the store has it now (the file store's last good document, or a
    cached read of DynamoDB's gateways and rules). Every new finding is logged once as a warning."""

    def __init__(self, holder: IndexHolder, read_policy: Callable[[], PolicyDocument]) -> None:
        self.holder = holder
        self.read_policy = read_policy
        self._checked: tuple[str, PolicyDocument, tuple[UnknownName, ...]] | None = None

    def current(self) -> tuple[UnknownName, ...]:
        """Nothing while no build or no policy can be read (/healthz and the log already say so)."""
        if not self.holder.health().ok:
            return ()  # never a load attempt of its own: while there is no build, each one may wait on S3
        try:
            index, document = self.holder.current(), self.read_policy()
        except ToolrecError:
            return ()
        return self.check(index, document)

    def index_loaded(self, index: Index) -> None:
        """A new build is served: the policy last checked is checked again against it, with no read of its own."""
        if self._checked is not None:
            self.check(index, self._checked[1])

    def check(self, index: Index, document: PolicyDocument) -> tuple[UnknownName, ...]:
        checked = self._checked
        if checked is not None and checked[0] == index.build_id and checked[1] is document:
            return checked[2]
        found = unknown_names(document, index.table)
        if found and (checked is None or checked[2] != found):
            for name in found:
                log.warning("policy %s (build %s)", name.describe(), index.build_id)
        self._checked = (index.build_id, document, found)
        return found
