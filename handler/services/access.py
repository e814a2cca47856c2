"""Who may see which tools: the gateway (what a request may consider) and the user's access rules.

Both become one boolean mask over the index, handed to ``RankingIndex.rank`` so filtering happens before
top-k: a disallowed tool never appears and never takes a slot. REST, MCP and execute all ask here.
"""

from __future__ import annotations

import numpy as np

from handler.errors import ForbiddenError, NotFoundError
from handler.policy.model import Gateway, Principal
from handler.policy.store import PolicyStore
from handler.services.tool_table import BoolArray, ToolTable


class AccessPolicy:
    def __init__(self, store: PolicyStore) -> None:
        self.store = store

    def gateway_for(self, principal: Principal, gateway_id: str | None) -> Gateway | None:
        """The gateway a request runs under: the one it names, or the one its API key is limited to."""
        if principal.gateway_id is not None:
            if gateway_id is not None and gateway_id != principal.gateway_id:
                raise ForbiddenError(f"this API key may only use gateway {principal.gateway_id!r}")
            gateway_id = principal.gateway_id
        if gateway_id is None:
            return None
        gateway = self.store.gateway(gateway_id)
        if gateway is None:
            raise NotFoundError(f"gateway {gateway_id!r} does not exist")
        return gateway

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

    def may_use(self, table: ToolTable, user_id: str, gateway: Gateway | None, tool_name: str) -> bool:
        index = table.position(tool_name)
        return index is not None and bool(self.allowed_mask(table, user_id, gateway)[index])


def count(mask: BoolArray) -> int:
    return int(np.count_nonzero(mask))
