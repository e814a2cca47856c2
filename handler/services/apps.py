"""The apps a user can act on, and whether each is connected (PRODUCT.md §2, GET /v1/apps).

An app is listed when the user may use at least one of its tools. It is ``connected`` when the user can run
every one of those tools without authorizing first, by the rule execute applies (handler/policy/authorization.py); the
tools that cannot run yet are listed with the scopes each lacks, so a caller knows what to authorize.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from handler.index.holder import IndexHolder
from handler.index.table import ToolTable
from handler.policy.authorization import Grants
from handler.policy.model import Connection
from handler.ranking.arrays import BoolArray
from handler.services.access import AccessPolicy, Caller

# Bounds the answer: an unconnected app of a large catalog would list every one of its tools.
MAX_PENDING_LISTED = 50


@dataclass(frozen=True)
class PendingTool:
    """A tool the user may use that cannot run until they authorize ``app_id`` (with ``missing_scopes``)."""

    tool_name: str
    app_id: str
    missing_scopes: tuple[str, ...]


@dataclass(frozen=True)
class AppEntry:
    app_id: str
    name: str
    description: str
    tool_count: int
    connected: bool
    account: str | None
    permissions: tuple[str, ...]
    authorize_url: str | None
    needs_authorization: tuple[PendingTool, ...]  # the first MAX_PENDING_LISTED, by tool name
    needs_authorization_count: int


@dataclass(frozen=True)
class AppPage:
    apps: tuple[AppEntry, ...]
    total: int


class AppDirectory:
    def __init__(self, holder: IndexHolder, access: AccessPolicy) -> None:
        self.holder = holder
        self.access = access

    def list_apps(self, caller: Caller, limit: int, offset: int) -> AppPage:
        """The apps of the tools the user may use, restricted to the caller's gateway when it has one (MCP
        ListApps, or an API key limited to one: PRODUCT.md §3)."""
        index = self.holder.current()
        mask = self.access.allowed_mask(index.table, caller.user_id, caller.gateway)
        table = index.table
        # Vectorized over the catalog (a Python loop over 10k allowed tools took ~10 ms a request).
        tool_counts = np.bincount(table.app_codes[mask], minlength=len(table.app_names))
        present = np.flatnonzero(tool_counts).tolist()
        page = present[offset : offset + limit]  # app codes; app_names is sorted
        counts = dict(zip(page, tool_counts[page].tolist(), strict=True))
        return AppPage(self._entries(table, mask, counts, caller.user_id), len(present))

    def _entries(self, table: ToolTable, mask: BoolArray, counts: dict[int, int], user_id: str) -> tuple[AppEntry, ...]:
        if not counts:
            return ()
        store = self.access.store
        infos = {a.app_id: a for a in store.apps()}
        connections = store.connections(user_id)
        live = {c.app_id.casefold(): c for c in connections if c.connected}
        pending = pending_tools(table, mask, list(counts), connections)
        entries = []
        for code, tool_count in counts.items():
            app_id = table.app_names[code]
            info = infos.get(app_id)
            connection = live.get(app_id.casefold())
            waiting = pending.get(code, [])
            entries.append(
                AppEntry(
                    app_id=app_id,
                    name=info.name if info and info.name else app_id,
                    description=info.description if info else "",
                    tool_count=tool_count,
                    connected=not waiting,
                    account=connection.account if connection else None,
                    permissions=connection.scopes if connection else (),
                    authorize_url=info.authorize_url if info else None,
                    needs_authorization=tuple(waiting[:MAX_PENDING_LISTED]),
                    needs_authorization_count=len(waiting),
                )
            )
        return tuple(entries)


def pending_tools(
    table: ToolTable, mask: BoolArray, codes: Sequence[int], connections: Sequence[Connection]
) -> dict[int, list[PendingTool]]:
    """Per app code, the usable tools that cannot run yet, by name (an app is ``connected`` without any; ``toolrec
    policy list`` says so by this too). Only flagged tools are read (parsed)."""
    candidates = mask & table.needs_authorization & np.isin(table.app_codes, codes)
    grants = Grants(connections)
    pending: dict[int, list[PendingTool]] = {}
    for position in np.flatnonzero(candidates).tolist():
        tool = table.tools[position]
        need = grants.missing(tool)
        if need is not None:
            entry = PendingTool(tool.name, need.app_id, need.missing_scopes)
            pending.setdefault(int(table.app_codes[position]), []).append(entry)
    for waiting in pending.values():
        waiting.sort(key=lambda p: p.tool_name)
    return pending
