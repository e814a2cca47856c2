"""The local policy backend: one JSON file (the embedded default of ``toolrec serve``).

Format (``version`` 1)::

    {"version": 1,
     "gateways": [{"gateway_id": "default", "allowed": ["*"], "recommendation": "auto", "pinned": []}],
     "access_rules": [{"rule_id": "everyone", "subject": "*", "effect": "allow", "tools": ["*"]}],
     "apps": [{"app_id": "Slack", "name": "Slack", "authorize_url": "..."}],
     "connections": [{"user_id": "demo-user", "app_id": "Slack", "connected": true, "account": "...", "scopes": []}],
     "api_keys": [{"key_id": "...", "key_hash": "<sha256 hex>", "gateway_id": null}]}

The file is re-read when it changes (another inode, modification time or size), so ``toolrec policy`` edits
apply to a running server. Every change is a read-modify-write done entirely under an OS lock on the sidecar
``.<policy>.lock`` (flock), re-reading the file inside the lock, so concurrent ``toolrec policy`` processes
never lose each other's changes (issue 15: 8 at once kept 4-7 of 7 rules and sometimes a revoked key). The
new version goes to a temporary file in the same directory, is fsynced and replaces the original, so a reader
(which takes no lock) sees the old file or the new one, never half.
The query log is appended to ``<policy>.queries.jsonl`` next to the policy file (one JSON object per line, a
``query`` per select and an ``execution`` per linked call), so a local server loses none; each line is one
``write`` under a lock on the log, so several servers sharing the file never interleave lines. Like the policy
file it is owner-only (0600). The most recent records are also kept in memory (bounded, expired ones dropped)
for linking executions.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import stat
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TypeVar, get_args

from pydantic import BaseModel, ValidationError

from handler.catalog.names import did_you_mean, nearest_name
from handler.errors import PolicyUnavailableError
from handler.policy.model import (
    DOCUMENT_VERSION,
    AccessRule,
    ApiKeyRecord,
    AppInfo,
    Connection,
    ExecutionRecord,
    Gateway,
    PolicyDocument,
    QueryRecord,
)

MAX_LOGGED_QUERIES = 10_000
# The policy file (mkstemp) and its lock are owner-only; the query log holds task texts and user ids, so it is too.
PRIVATE_MODE = 0o600
# A writer holds the lock for one read-modify-write (milliseconds); one stuck longer than this (stopped, hung
# on a dead disk) fails the waiting command instead of hanging it.
LOCK_TIMEOUT_S = 30.0
T = TypeVar("T")
Version = tuple[int, int, int, int]  # of the policy file: inode, mtime, ctime, size
MISSING: Version = (-1, -1, -1, -1)  # the version of a policy file that is not there
log = logging.getLogger(__name__)


def read_document(path: Path) -> PolicyDocument:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        document = PolicyDocument.model_validate(raw)
    except FileNotFoundError as exc:
        raise PolicyUnavailableError(f"no policy file at {path}") from exc
    except (OSError, ValueError) as exc:  # JSON and pydantic validation errors are ValueErrors
        if isinstance(exc, ValidationError):
            detail = invalid_fields(exc)
        else:
            detail = f"not JSON ({exc})" if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise PolicyUnavailableError(f"cannot read policy file {path}: {detail}") from exc
    if document.version != DOCUMENT_VERSION:
        raise PolicyUnavailableError(f"policy file {path} has version {document.version}; expected {DOCUMENT_VERSION}")
    return document


def invalid_fields(exc: ValidationError) -> str:
    """Each invalid field where a person editing the file finds it: ``gateways[0].recommendation: Input should be
    'on', 'off' or 'auto'`` (issue 33 item 8: "2 invalid field(s)" named none)."""
    problems = []
    for error in exc.errors():
        loc = error["loc"]
        where = "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc).lstrip(".")
        message = str(error["msg"]).removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = f"unknown field{did_you_mean(nearest_name(str(loc[-1]), _record_fields(loc)))}"
        problems.append(f"{where or 'the file'}: {message}")
    return "; ".join(problems)


def _record_fields(loc: tuple[int | str, ...]) -> tuple[str, ...]:
    """The fields known where an unknown one stands: the document's own, or a record's (``gateways[0].x``)."""
    if len(loc) == 1:
        return tuple(PolicyDocument.model_fields)
    field = PolicyDocument.model_fields.get(str(loc[0]))
    # (section, position, field): a field of one record of a section.
    records = get_args(field.annotation) if field is not None and len(loc) == 3 else ()
    return tuple(records[0].model_fields) if records and issubclass(records[0], BaseModel) else ()


def write_document(path: Path, document: PolicyDocument) -> None:
    """Replace the file atomically and durably; callers that read first hold ``writer_lock`` (``update_document``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as stream:
            stream.write(document.model_dump_json(indent=2, exclude_none=True) + "\n")
            stream.flush()
            os.fsync(stream.fileno())  # the data is on disk before the name points at it
        Path(tmp).replace(path)
    except BaseException:
        with suppress(OSError):
            Path(tmp).unlink()
        raise
    _fsync_directory(path.parent)  # and the rename survives a crash: a committed change stays committed


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def lock_file(policy_file: Path) -> Path:
    """The sidecar the writers lock: the policy file itself is replaced on every write, so it cannot hold a lock."""
    return policy_file.with_name(f".{policy_file.name}.lock")


def _flock(fd: int, what: Path, timeout_s: float = LOCK_TIMEOUT_S) -> None:
    deadline = time.monotonic() + timeout_s
    delay = 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise PolicyUnavailableError(f"{what} stayed locked by another writer for {timeout_s:.0f} s") from None
            time.sleep(delay)
            delay = min(delay * 2, 0.05)


@contextmanager
def writer_lock(policy_file: Path) -> Iterator[None]:
    """Serialise writers of one policy file across processes and threads (each open file is its own flock)."""
    policy_file.parent.mkdir(parents=True, exist_ok=True)
    path = lock_file(policy_file)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, PRIVATE_MODE)
    try:
        _flock(fd, policy_file)
        yield
    finally:
        os.close(fd)  # releases the lock, also when the process dies holding it


def update_document(path: Path, change: Callable[[PolicyDocument], None]) -> None:
    """One read-modify-write of the policy file, all of it under the writer lock, so no change is lost."""
    with writer_lock(path):
        document = read_document(path) if path.exists() else PolicyDocument()
        change(document)
        write_document(path, document)


def write_if_absent(path: Path, document: PolicyDocument) -> bool:
    """Create the policy file unless it exists (checked under the lock, so a concurrent writer's file survives)."""
    if path.exists():
        return False  # the common case takes no lock, so a read-only policy directory still serves
    with writer_lock(path):
        if path.exists():
            return False
        write_document(path, document)
        return True


def _keep_private(fd: int) -> None:
    """Narrow a log that others may read to PRIVATE_MODE (issue 22: older versions created it 0644), rather than
    refuse it: the records are toolrec's own, and refusing would stop a local server over a file it wrote."""
    if stat.S_IMODE(os.fstat(fd).st_mode) & ~PRIVATE_MODE:
        os.fchmod(fd, PRIVATE_MODE)


def query_log_file(policy_file: Path) -> Path:
    """Where the file backend appends its query log: ``policy.json`` -> ``policy.queries.jsonl``."""
    return policy_file.with_suffix(".queries.jsonl")


def read_query_log(path: Path) -> list[QueryRecord]:
    """Every query a file backend logged, with the executions linked to it, in the order they were logged (the
    servers that shared the file included). A line cut short by a crash is skipped, as nothing follows from it."""
    records: dict[str, QueryRecord] = {}
    executions: dict[str, list[ExecutionRecord]] = {}
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            try:
                entry = json.loads(line)
                if entry["kind"] == "query":
                    record = QueryRecord.model_validate(entry["record"])
                    records[record.query_id] = record
                elif entry["kind"] == "execution":
                    executions.setdefault(entry["query_id"], []).append(ExecutionRecord.model_validate(entry["record"]))
            except (ValueError, KeyError, TypeError):  # pydantic's ValidationError is a ValueError
                continue
    return [
        record.model_copy(update={"executions": (*record.executions, *executions.get(query_id, ()))})
        for query_id, record in records.items()
    ]


class FilePolicyStore:
    """PolicyStore and PolicyWriter over a JSON file."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        self._clock = clock
        self._lock = threading.Lock()
        self._loaded: tuple[Version, PolicyDocument] | None = None
        self._failed: Version | None = None  # a version of the file that could not be read: logged once
        # Told each policy read that differs from the one before (the check of the names it holds, composition.py).
        self.on_change: Callable[[PolicyDocument], object] | None = None
        self._queries: OrderedDict[str, QueryRecord] = OrderedDict()
        self.query_log_path = query_log_file(path)

    def document(self) -> PolicyDocument:
        """The policy as the file says it now; while the file cannot be read or parsed, the last good one."""
        try:
            stat = self.path.stat()
        except OSError as exc:
            return self._last_good(MISSING, PolicyUnavailableError(f"no policy file at {self.path}"), exc)
        # Every write is a new inode: the mtime alone can miss two writes within one coarse timestamp tick (and
        # keep serving a revoked key). Stat before reading, so the cached text is never older than its version.
        version = (stat.st_ino, stat.st_mtime_ns, stat.st_ctime_ns, stat.st_size)
        loaded = self._loaded
        if loaded is not None and loaded[0] == version:
            return loaded[1]
        if self._failed == version and loaded is not None:
            return loaded[1]  # this version was read and refused already: not parsed again per request
        try:
            document = read_document(self.path)
        except PolicyUnavailableError as exc:
            return self._last_good(version, exc, exc.__cause__)
        self._loaded, self._failed = (version, document), None
        if self.on_change is not None:
            self.on_change(document)
        return document

    def _last_good(
        self, version: Version, error: PolicyUnavailableError, cause: BaseException | None
    ) -> PolicyDocument:
        """A hand edit that breaks the file must not stop a running server (every request a 503, issue 33 item 8):
        the last good policy stays in force and the error, with the fields it names, is logged once per version.
        With no good policy yet (the server's start reads it, composition.py) the error is raised."""
        loaded = self._loaded
        if loaded is None:
            raise error from cause
        if self._failed != version:
            log.error("%s; the last good policy read stays in force until the file is fixed", error)
        self._failed = version
        return loaded[1]

    # Reads.
    def gateway(self, gateway_id: str) -> Gateway | None:
        return next((g for g in self.document().gateways if g.gateway_id == gateway_id), None)

    def gateway_ids(self) -> Sequence[str]:
        return [g.gateway_id for g in self.document().gateways]

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
        data = memoryview((line + "\n").encode("utf-8"))
        try:
            # One O_APPEND write per line, under a lock on the log: servers sharing the file never interleave.
            fd = os.open(self.query_log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE_MODE)
            try:
                _keep_private(fd)
                _flock(fd, self.query_log_path)
                while data:
                    data = data[os.write(fd, data) :]
            finally:
                os.close(fd)
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
        update_document(self.path, change)
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
