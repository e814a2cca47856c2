"""The one rule for "the user can run this tool without authorizing first" (PRODUCT.md §2).

Execute refuses a call with ``authorization_required`` by it, and ``/v1/apps`` (and MCP ListApps) says an app is
``connected`` by it, so the two cannot disagree again (issue 15: apps said Slack was connected while six Slack
tools answered 403 for a scope the connection lacked). A tool needs authorization when its requirements name an
app or scopes; it can run when the user holds a live connection to that app granting every required scope.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from handler.catalog.tool import Tool
from handler.policy.model import Connection


@dataclass(frozen=True)
class AuthorizationNeed:
    """What a user must still authorize before a tool runs."""

    app_id: str  # the app whose connection the tool needs
    missing_scopes: tuple[str, ...]  # the required scopes the connection lacks (all of them without one)
    connected: bool  # whether the user holds a live connection to that app at all


def authorization_app(tool: Tool) -> str | None:
    """The app a tool needs a connection to before it may run; None when it runs without one."""
    requirements = tool.requirements
    if requirements is None or (requirements.authorization is None and not requirements.scopes):
        return None
    return requirements.authorization or tool.app


def missing_authorization(tool: Tool, connections: Sequence[Connection]) -> AuthorizationNeed | None:
    """None when the user (whose connections these are) can run the tool now; else what is missing."""
    return Grants(connections).missing(tool)


class Grants:
    """One user's live connections, indexed once, for asking about many tools (``/v1/apps`` asks about every
    usable tool of a page of apps: a linear scan of the connections per tool took 140 ms for 10k tools)."""

    def __init__(self, connections: Sequence[Connection]) -> None:
        # App ids match as tool patterns do, ignoring case.
        self._live = {c.app_id.casefold(): frozenset(c.scopes) for c in connections if c.connected}
        self._answers: dict[tuple[str, tuple[str, ...]], AuthorizationNeed | None] = {}

    def missing(self, tool: Tool) -> AuthorizationNeed | None:
        app_id = authorization_app(tool)
        if app_id is None or tool.requirements is None:
            return None
        key = (app_id, tool.requirements.scopes)
        if key not in self._answers:  # many tools share one requirement: answer it once
            self._answers[key] = self._need(*key)
        return self._answers[key]

    def _need(self, app_id: str, scopes: tuple[str, ...]) -> AuthorizationNeed | None:
        granted = self._live.get(app_id.casefold())
        missing = tuple(s for s in scopes if granted is None or s not in granted)
        if granted is not None and not missing:
            return None
        return AuthorizationNeed(app_id, missing, granted is not None)
