"""How ``toolrec policy list`` states a user's connection: by the rule ``/v1/apps`` and execute apply.

A connection record can be live and still leave tools of its app unable to run (a scope it does not grant); then
``/v1/apps`` says ``connected: false`` and execute answers ``authorization_required`` for those tools. The list
says the same, from the catalog the policy is for (issue 33 item 11: it said "connected" where the API did not).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from handler.policy.model import Connection
from handler.policy.store import PolicyStore

if TYPE_CHECKING:
    from handler.index.table import ToolTable

SHOWN_SCOPES = 8  # a connection's missing scopes named in its line; the rest counted


def connection_lines(connections: Sequence[Connection], store: PolicyStore, table: ToolTable | None) -> list[str]:
    """One line per connection record; with no catalog (``table`` None) whether it covers its app's tools is
    unknown, and the line says so."""
    lines = []
    for connection in connections:
        state, lacking = _state(connection, store, table)
        scopes = f", scopes {', '.join(connection.scopes)}" if connection.scopes else ""
        lines.append(f"connection {connection.user_id} -> {connection.app_id}: {state}{scopes}{lacking}")
    return lines


def _state(connection: Connection, store: PolicyStore, table: ToolTable | None) -> tuple[str, str]:
    """What the connection is as /v1/apps says it, and what it lacks for the tools it leaves unable to run."""
    if not connection.connected:
        return "disconnected", ""
    if table is None:
        return "live", " (not checked against a catalog: --index)"
    import numpy as np

    from handler.services.access import AccessPolicy
    from handler.services.apps import pending_tools

    user, app = connection.user_id, connection.app_id
    code = next((i for i, name in enumerate(table.app_names) if name.casefold() == app.casefold()), None)
    in_app = np.zeros(len(table), dtype=bool) if code is None else table.app_codes == code
    usable = AccessPolicy(store).user_mask(table, user) & in_app
    if not usable.any():
        return "live", f" (no tool of {app} in the catalog that {user} may use)"
    assert code is not None
    waiting = pending_tools(table, usable, [code], store.connections(user)).get(code, [])
    if not waiting:
        return "connected", ""
    missing = sorted({scope for pending in waiting for scope in pending.missing_scopes})
    more = len(missing) - SHOWN_SCOPES
    named = ", ".join(missing[:SHOWN_SCOPES]) + (f" and {more} more" if more > 0 else "")
    count = f"{len(waiting)} of the {int(np.count_nonzero(usable))} {app} tools {user} may use"
    return (
        "not connected",
        f"; {count} {'needs' if len(waiting) == 1 else 'need'} more: {named} (GET /v1/apps lists them)",
    )
