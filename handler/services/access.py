"""Who a request acts for, and which tools they may see: the gateway (what a request may consider) and the
user's access rules.

A request's ``Caller`` is resolved once, here, by REST and MCP alike. Gateway and rules become one boolean mask
over the index, handed to ``RankingIndex.rank`` so filtering happens before top-k: a disallowed tool never
appears and never takes a slot. Select, search, apps and execute all ask here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from handler.catalog.names import MAX_SUGGESTED_CHARS, did_you_mean, listed_name, name_key, nearest_name
from handler.errors import ForbiddenError, NotFoundError
from handler.index.table import ToolTable
from handler.policy.model import Gateway, Principal
from handler.policy.store import PolicyStore
from handler.ranking.arrays import BoolArray


@dataclass(frozen=True)
class Caller:
    """Who one request acts for: the API key's principal, the end user, and the gateway it runs under (None: every
    tool the user may use, for a key not limited to a gateway that names none)."""

    principal: Principal
    user_id: str
    gateway: Gateway | None

    @property
    def gateway_id(self) -> str | None:
        return None if self.gateway is None else self.gateway.gateway_id


class AccessPolicy:
    def __init__(self, store: PolicyStore) -> None:
        self.store = store

    def caller(self, principal: Principal, user_id: str, gateway_id: str | None = None) -> Caller:
        """The request's Caller: the gateway it names (or its key is limited to) looked up, 403/404 otherwise."""
        gateway = self.gateway_for(principal, gateway_id.strip() if gateway_id is not None else None)
        return Caller(principal, user_id.strip(), gateway)

    def gateway_for(self, principal: Principal, gateway_id: str | None) -> Gateway | None:
        """The gateway a request runs under: the one it names, or the one its API key is limited to."""
        if principal.gateway_id is not None:
            if gateway_id is not None and gateway_id != principal.gateway_id:
                raise ForbiddenError(
                    f"this API key may not use gateway {gateway_id!r}: it is limited to {principal.gateway_id!r}"
                )
            gateway_id = principal.gateway_id
        if gateway_id is None:
            return None
        gateway = self.store.gateway(gateway_id)
        if gateway is None:
            # The nearest the caller may see: a key limited to one gateway sees that one alone (it was named here).
            known = self.store.gateway_ids() if principal.gateway_id is None else ()
            raise NotFoundError(f"unknown gateway {gateway_id!r}{did_you_mean(nearest_name(gateway_id, known))}")
        return gateway

    def nearest_tool(self, table: ToolTable, name: str, caller: Caller) -> str | None:
        """The tool nearest a mistyped name among those the caller may use (never a denied one, PRODUCT.md §2),
        in the caller's spelling: ``Slack_SendMessage`` for one who wrote ``_``, as MCP lists names."""
        mask = self.allowed_mask(table, caller.user_id, caller.gateway)
        near = nearest_name(name, (table.names[i] for i in _candidates(table, name, mask)))
        if near is None or "." in name or "_" not in name:
            return near
        return listed_name(near)

    def user_mask(self, table: ToolTable, user_id: str) -> BoolArray:
        """The tools the user may see and use: allowed by some rule for them or ``*``, denied by none."""
        rules = self.store.access_rules(user_id)
        allowed = table.mask(p for r in rules if r.effect == "allow" for p in r.tools)
        denied = table.mask(p for r in rules if r.effect == "deny" for p in r.tools)
        mask: BoolArray = allowed & ~denied
        return mask

    def allowed_mask(self, table: ToolTable, user_id: str, gateway: Gateway | None) -> BoolArray:
        mask = self.user_mask(table, user_id)
        if gateway is not None:
            mask &= table.mask(gateway.allowed)
        return mask

    def listed_pins(self, table: ToolTable, user_id: str, gateway: Gateway) -> list[int]:
        """The gateway's pinned tools this user may use, in the gateway's order. The mask that decides whether a
        call may run decides whether a pin is listed, so no user is shown a pin they could not call."""
        pins = Pins.of(table, gateway.pinned, table.mask(gateway.allowed))
        mask = self.allowed_mask(table, user_id, gateway)
        return [i for i in pins.positions if mask[i]]


@dataclass(frozen=True)
class Pins:
    """A gateway's pins as one build reads them (the names resolve as every lookup by name does)."""

    positions: tuple[int, ...]  # the pinned tools the build holds and the gateway allows, in the pins' order
    missing: tuple[str, ...]  # pins the build does not hold (a tool removed since the gateway was configured)
    outside: tuple[str, ...]  # pins the build holds but the gateway's own patterns do not allow

    @classmethod
    def of(cls, table: ToolTable, pinned: Sequence[str], in_gateway: BoolArray) -> Pins:
        """``in_gateway``: the mask of the gateway's own patterns (``table.mask(gateway.allowed)``)."""
        positions, missing, outside = [], [], []
        for name in pinned:
            index = table.position(name)
            if index is None:
                missing.append(name)
            elif not in_gateway[index]:
                outside.append(name)
            else:
                positions.append(index)
        return cls(tuple(positions), tuple(missing), tuple(outside))

    def problem(self, gateway_id: str) -> str | None:
        """Why these pins cannot be configured, or None (configuring refuses what serving would silently skip)."""
        problems = []
        if self.missing:
            problems.append(f"cannot pin {', '.join(self.missing)}: not in the catalog")
        if self.outside:
            problems.append(f"cannot pin {', '.join(self.outside)}: gateway {gateway_id} does not allow it")
        return "; ".join(problems) or None


# The most tools one mistyped name is compared with: the app it names (or the nearest one) holds the candidates, so
# a catalog of a million tools costs no more than one app's tools, and no more than ~40 ms (2,000 names of up to
# 40 characters, measured on the shared machine) however large that app is.
MAX_CANDIDATES = 2_000


def _candidates(table: ToolTable, name: str, mask: BoolArray) -> list[int]:
    """The usable tools a mistyped name may mean: those of the app its prefix names (``slack_sendmesage``: Slack),
    else of the usable app nearest that prefix, else every usable tool; at most MAX_CANDIDATES of them."""
    if len(name) > MAX_SUGGESTED_CHARS:
        return []
    key = name_key(name)
    present = np.bincount(table.app_codes[mask], minlength=len(table.app_names))  # linear, where unique sorts
    usable_apps = [table.app_names[c] for c in np.flatnonzero(present).tolist()]
    named = [app for app in usable_apps if key.startswith(name_key(app) + ".")]
    if not named and "." in key:
        near = nearest_name(key.split(".", 1)[0], usable_apps)
        named = [near] if near is not None else []
    if named:
        positions = np.concatenate([table.by_app[app.casefold()] for app in named])
        positions = np.sort(positions[mask[positions]])
    else:
        positions = np.flatnonzero(mask)
    kept: list[int] = positions[:MAX_CANDIDATES].tolist()
    return kept


def count(mask: BoolArray) -> int:
    return int(np.count_nonzero(mask))
