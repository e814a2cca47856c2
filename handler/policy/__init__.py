"""Policy: gateways, access rules, apps and connections, API keys and the query log, behind one port."""

from handler.policy.cached import CachedPolicyStore
from handler.policy.model import (
    AccessRule,
    ApiKeyRecord,
    AppInfo,
    Connection,
    ExecutionRecord,
    Gateway,
    Principal,
    QueryRecord,
)
from handler.policy.store import PolicyStore, PolicyWriter

__all__ = [
    "AccessRule",
    "ApiKeyRecord",
    "AppInfo",
    "CachedPolicyStore",
    "Connection",
    "ExecutionRecord",
    "Gateway",
    "PolicyStore",
    "PolicyWriter",
    "Principal",
    "QueryRecord",
]
