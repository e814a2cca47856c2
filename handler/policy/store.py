"""The policy port: one interface over the local policy file and the DynamoDB tables.

Readers (the services) call the lookups; ``toolrec policy`` calls the writers; the execute path calls
``record_execution``. Every method either answers or raises ``PolicyUnavailableError`` (storage failed),
so a route maps storage trouble to 503 in one place.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from handler.policy.model import (
    AccessRule,
    ApiKeyRecord,
    AppInfo,
    Connection,
    ExecutionRecord,
    Gateway,
    PolicyDocument,
    QueryRecord,
)


class PolicyStore(Protocol):
    # Gateways and access rules.
    def gateway(self, gateway_id: str) -> Gateway | None: ...

    def gateway_ids(self) -> Sequence[str]:
        """Every gateway's id: what an unknown gateway is compared with to name the nearest (PRODUCT.md §2)."""
        ...

    def access_rules(self, user_id: str) -> Sequence[AccessRule]:
        """The rules whose subject is this user or ``*``."""
        ...

    # Apps and connections.
    def apps(self) -> Sequence[AppInfo]: ...

    def connections(self, user_id: str) -> Sequence[Connection]: ...

    # API keys.
    def api_key(self, key_hash: str) -> ApiKeyRecord | None: ...

    # Query log.
    def put_query(self, record: QueryRecord) -> None: ...

    def get_query(self, query_id: str) -> QueryRecord | None: ...

    def record_execution(self, query_id: str, execution: ExecutionRecord) -> None:
        """Link an execution to the select request that surfaced it; an unknown query_id is ignored."""
        ...

    def queries(self, now: float) -> Iterable[QueryRecord]:
        """The unexpired records, lazily where the backend can: ``toolrec stats`` and the console's usage view (which
        stops reading at a bound) read them; never a select or an execute."""
        ...


class PolicyWriter(PolicyStore, Protocol):
    """What ``toolrec policy`` needs: the lookups, the whole policy, and upserts and deletes of its records."""

    def document(self) -> PolicyDocument: ...

    def put_gateway(self, gateway: Gateway) -> None: ...

    def delete_gateway(self, gateway_id: str) -> None: ...

    def put_rule(self, rule: AccessRule) -> None: ...

    def delete_rule(self, subject: str, rule_id: str) -> None: ...

    def put_app(self, app: AppInfo) -> None: ...

    def put_connection(self, connection: Connection) -> None: ...

    def delete_connection(self, user_id: str, app_id: str) -> None: ...

    def put_api_key(self, record: ApiKeyRecord) -> None: ...

    def delete_api_key(self, key_hash: str) -> None: ...
