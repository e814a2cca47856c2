"""A per-instance cache in front of a PolicyStore: policy changes apply within ``ttl_seconds``.

A select request reads a key, a gateway, the user's rules and (for apps) connections: cached, a warm
Lambda answers from memory and DynamoDB sees one read per record per instance per TTL. The query log is
never cached: it is written once per request and read by the execute path, which wants the latest record.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from handler.policy.model import AccessRule, ApiKeyRecord, AppInfo, Connection, ExecutionRecord, Gateway, QueryRecord
from handler.policy.store import PolicyStore

V = TypeVar("V")
MAX_ENTRIES = 4096
_MISSING = object()


class TtlCache:
    """A small LRU with a time-to-live; bounded so random keys (e.g. bad API keys) cannot grow it."""

    def __init__(self, ttl_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.ttl = ttl_seconds
        self._clock = clock
        self._entries: OrderedDict[tuple[str, str], tuple[float, Any]] = OrderedDict()

    def get_or_load(self, kind: str, key: str, load: Callable[[], V]) -> V:
        if self.ttl <= 0:
            return load()
        now = self._clock()
        entry = self._entries.get((kind, key), _MISSING)
        if isinstance(entry, tuple) and entry[0] > now:
            value: V = entry[1]
            return value
        value = load()  # a failed load raises and caches nothing
        self._entries[(kind, key)] = (now + self.ttl, value)
        self._entries.move_to_end((kind, key))
        while len(self._entries) > MAX_ENTRIES:
            self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        self._entries.clear()


class CachedPolicyStore:
    def __init__(self, inner: PolicyStore, ttl_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.inner = inner
        self.cache = TtlCache(ttl_seconds, clock)

    def gateway(self, gateway_id: str) -> Gateway | None:
        return self.cache.get_or_load("gateway", gateway_id, lambda: self.inner.gateway(gateway_id))

    def gateway_ids(self) -> Sequence[str]:
        return self.cache.get_or_load("gateway_ids", "", lambda: tuple(self.inner.gateway_ids()))

    def access_rules(self, user_id: str) -> Sequence[AccessRule]:
        return self.cache.get_or_load("rules", user_id, lambda: tuple(self.inner.access_rules(user_id)))

    def apps(self) -> Sequence[AppInfo]:
        return self.cache.get_or_load("apps", "", lambda: tuple(self.inner.apps()))

    def connections(self, user_id: str) -> Sequence[Connection]:
        return self.cache.get_or_load("connections", user_id, lambda: tuple(self.inner.connections(user_id)))

    def api_key(self, key_hash: str) -> ApiKeyRecord | None:
        return self.cache.get_or_load("api_key", key_hash, lambda: self.inner.api_key(key_hash))

    def put_query(self, record: QueryRecord) -> None:
        self.inner.put_query(record)

    def get_query(self, query_id: str) -> QueryRecord | None:
        return self.inner.get_query(query_id)

    def record_execution(self, query_id: str, execution: ExecutionRecord) -> None:
        self.inner.record_execution(query_id, execution)

    def queries(self, now: float) -> Iterable[QueryRecord]:
        return self.inner.queries(now)
