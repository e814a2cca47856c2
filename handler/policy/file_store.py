"""The local policy backend: one JSON file (the embedded default of ``toolrec serve``).

Format (``version`` 1)::

    {"version": 1,
     "gateways": [{"gateway_id": "default", "allowed": ["*"], "recommendation": "auto"}],
     "access_rules": [{"rule_id": "everyone", "subject": "*", "effect": "allow", "tools": ["*"]}],
     "apps": [{"app_id": "Slack", "name": "Slack", "authorize_url": "..."}],
     "connections": [{"user_id": "demo-user", "app_id": "Slack", "connected": true, "account": "...", "scopes": []}],
     "api_keys": [{"key_id": "...", "key_hash": "<sha256 hex>", "gateway_id": null}]}

The file is re-read when its modification time changes, so ``toolrec policy`` edits apply to a running
server. Writes go to a temporary file that replaces the original, so a reader never sees half a file.
The query log is appended to ``<policy>.queries.jsonl`` next to the policy file (one JSON object per line, a
``query`` per select and an ``execution`` per linked call), so a local server loses none; the most recent records
are also kept in memory (bounded, expired ones dropped) for linking executions.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from handler.errors import PolicyUnavailableError
from handler.policy.model import (
    AccessRule,
    ApiKeyRecord,
    AppInfo,
    Connection,
    ExecutionRecord,
    Gateway,
    QueryRecord,
)

FILE_VERSION = 1
MAX_LOGGED_QUERIES = 10_000
T = TypeVar("T")


class PolicyDocument(BaseModel):
    model_config = ConfigDict(extra="forbid")

    version: int = FILE_VERSION
    gateways: list[Gateway] = []
    access_rules: list[AccessRule] = []
    apps: list[AppInfo] = []
    connections: list[Connection] = []
    api_keys: list[ApiKeyRecord] = []


def read_document(path: Path) -> PolicyDocument:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        document = PolicyDocument.model_validate(raw)
    except FileNotFoundError as exc:
        raise PolicyUnavailableError(f"no policy file at {path}") from exc
    except (OSError, ValueError) as exc:  # JSON and pydantic validation errors are ValueErrors
        detail = f"{exc.error_count()} invalid field(s)" if isinstance(exc, ValidationError) else str(exc)
        raise PolicyUnavailableError(f"cannot read policy file {path}: {detail}") from exc
    if document.version != FILE_VERSION:
        raise PolicyUnavailableError(f"policy file {path} has version {document.version}; expected {FILE_VERSION}")
    return document


def write_document(path: Path, document: PolicyDocument) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as stream:
        stream.write(document.model_dump_json(indent=2, exclude_none=True) + "\n")
    Path(tmp).replace(path)


def query_log_file(policy_file: Path) -> Path:
    """Where the file backend appends its query log: ``policy.json`` -> ``policy.queries.jsonl``."""
    return policy_file.with_suffix(".queries.jsonl")


class FilePolicyStore:
    """PolicyStore and PolicyWriter over a JSON file."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._clock = clock
        self._lock = threading.Lock()
        self._loaded: tuple[float, PolicyDocument] | None = None
        self._queries: OrderedDict[str, QueryRecord] = OrderedDict()
        self.query_log_path = query_log_file(path)

    def document(self) -> PolicyDocument:
        try:
            mtime = self.path.stat().st_mtime_ns
        except OSError as exc:
            raise PolicyUnavailableError(f"no policy file at {self.path}") from exc
        loaded = self._loaded
        if loaded is None or loaded[0] != mtime:
            loaded = (mtime, read_document(self.path))
            self._loaded = loaded
        return loaded[1]

    # Reads.
    def gateway(self, gateway_id: str) -> Gateway | None:
        return next((g for g in self.document().gateways if g.gateway_id == gateway_id), None)

    def access_rules(self, user_id: str) -> Sequence[AccessRule]:
        return [r for r in self.document().access_rules if r.subject in (user_id, "*")]

    def apps(self) -> Sequence[AppInfo]:
        return sorted(self.document().apps, key=lambda a: a.app_id)

    def connections(self, user_id: str) -> Sequence[Connection]:
        return [c for c in self.document().connections if c.user_id == user_id]

    def api_key(self, key_hash: str) -> ApiKeyRecord | None:
        return next((k for k in self.document().api_keys if k.key_hash == key_hash), None)

    # Query log.
    def _append_log(self, kind: str, record: BaseModel, **keys: str) -> None:
        # Durable, not just the bounded memory copy: a load test counted records beyond MAX_LOGGED_QUERIES as lost.
        line = json.dumps({"kind": kind, **keys, "record": record.model_dump(mode="json")}, ensure_ascii=False)
        try:
            with self.query_log_path.open("a", encoding="utf-8") as stream:
                stream.write(line + "\n")
        except OSError as exc:
            raise PolicyUnavailableError(f"cannot append to the query log {self.query_log_path}: {exc}") from exc

    def put_query(self, record: QueryRecord) -> None:
        with self._lock:
            self._append_log("query", record)
            self._queries[record.query_id] = record
            while len(self._queries) > MAX_LOGGED_QUERIES:
                self._queries.popitem(last=False)

    def get_query(self, query_id: str) -> QueryRecord | None:
        record = self._queries.get(query_id)
        if record is None or record.expires_at <= self._clock():
            return None
        return record

    def queries(self, now: float) -> list[QueryRecord]:
        """The unexpired records this process logged (``toolrec stats`` reads DynamoDB's; this is the same view)."""
        with self._lock:
            return [r for r in self._queries.values() if r.expires_at > now]

    def record_execution(self, query_id: str, execution: ExecutionRecord) -> None:
        with self._lock:
            record = self._queries.get(query_id)
            if record is not None:
                self._append_log("execution", execution, query_id=query_id)
                executions = (*record.executions, execution)
                self._queries[query_id] = record.model_copy(update={"executions": executions})

    # Writes (toolrec policy).
    def _update(self, change: Callable[[PolicyDocument], None]) -> None:
        with self._lock:
            document = read_document(self.path) if self.path.exists() else PolicyDocument()
            change(document)
            write_document(self.path, document)
            self._loaded = None

    def put_gateway(self, gateway: Gateway) -> None:
        self._update(lambda d: _upsert(d.gateways, gateway, lambda g: g.gateway_id == gateway.gateway_id))

    def delete_gateway(self, gateway_id: str) -> None:
        self._update(lambda d: _remove(d.gateways, lambda g: g.gateway_id == gateway_id))

    def put_rule(self, rule: AccessRule) -> None:
        same = (rule.subject, rule.rule_id)
        self._update(lambda d: _upsert(d.access_rules, rule, lambda r: (r.subject, r.rule_id) == same))

    def delete_rule(self, subject: str, rule_id: str) -> None:
        self._update(lambda d: _remove(d.access_rules, lambda r: (r.subject, r.rule_id) == (subject, rule_id)))

    def put_app(self, app: AppInfo) -> None:
        self._update(lambda d: _upsert(d.apps, app, lambda a: a.app_id == app.app_id))

    def put_connection(self, connection: Connection) -> None:
        same = (connection.user_id, connection.app_id)
        self._update(lambda d: _upsert(d.connections, connection, lambda c: (c.user_id, c.app_id) == same))

    def delete_connection(self, user_id: str, app_id: str) -> None:
        self._update(lambda d: _remove(d.connections, lambda c: (c.user_id, c.app_id) == (user_id, app_id)))

    def put_api_key(self, record: ApiKeyRecord) -> None:
        self._update(lambda d: _upsert(d.api_keys, record, lambda k: k.key_hash == record.key_hash))

    def delete_api_key(self, key_hash: str) -> None:
        self._update(lambda d: _remove(d.api_keys, lambda k: k.key_hash == key_hash))


def _upsert(items: list[T], item: T, same: Callable[[T], bool]) -> None:
    _remove(items, same)
    items.append(item)


def _remove(items: list[T], same: Callable[[T], bool]) -> None:
    items[:] = [existing for existing in items if not same(existing)]
