"""Holds the index the service answers from, and swaps in a new build when ``LATEST`` moves.

A request takes one snapshot (``current()``) and uses it to the end, so a swap never changes the index
under a request in flight. A build is served from a private copy (store.py), so a change made where it was
published is logged, never read. The check for a new ``LATEST`` runs on the request path at most once per
``refresh_seconds`` (a Lambda instance is frozen between invocations, so a background timer would not
run), and only one thread performs it: the others keep answering from the old snapshot meanwhile.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from handler.catalog.names import DEFAULT_NAMESPACE
from handler.errors import IndexUnavailableError, IntegrityError, ToolrecError
from handler.index.load import Index
from handler.index.store import IndexStore, load_latest

log = logging.getLogger(__name__)
# While no index is loaded, retry sooner than the normal refresh interval: the first build may be on its way.
UNAVAILABLE_RETRY_SECONDS = 5.0


@dataclass(frozen=True)
class Health:
    ok: bool
    build_id: str | None
    tool_count: int
    reason: str | None
    built_at: datetime | None = None  # when the served build was made: how fresh the catalog is

    def age_seconds(self, now: datetime) -> float | None:
        return None if self.built_at is None else round(max(0.0, (now - self.built_at).total_seconds()), 1)


class IndexHolder:
    def __init__(
        self,
        store: IndexStore,
        cache_dir: Path,
        model_fingerprint: str,
        refresh_seconds: float,
        clock: Callable[[], float] = time.monotonic,
        learn_from_use: bool = True,
        threads: int = 1,
        namespace: str = DEFAULT_NAMESPACE,
    ) -> None:
        self.store = store
        self.namespace = namespace  # the deployment's: a build holding its own tools' names is not served
        self.learn_from_use = learn_from_use
        self.threads = threads  # onnxruntime intra-op threads of each build's int8 scorer
        self.cache_dir = cache_dir
        self.model_fingerprint = model_fingerprint
        self.refresh_seconds = refresh_seconds
        self._clock = clock
        self.on_load: Callable[[Index], object] | None = None  # told of each build swapped in (composition.py)
        self._lock = threading.Lock()
        self._current: Index | None = None
        self._error: str | None = "not loaded yet"  # the detail, for the log
        self._reason: str | None = "no tool index is loaded yet"  # the same in generic words, for callers
        self._next_check = 0.0
        self._changed_noted: str | None = None  # the build whose in-place change was logged

    def load(self) -> None:
        """Load (or reload) ``LATEST`` now; failures are kept for /healthz, never raised."""
        with self._lock:
            self._refresh_locked()

    def current(self) -> Index:
        """The index to answer this request from; IndexUnavailableError when none could be loaded."""
        if self._clock() >= self._next_check and self._lock.acquire(blocking=self._current is None):
            try:
                if self._clock() >= self._next_check:
                    self._refresh_locked()
            finally:
                self._lock.release()
        snapshot = self._current
        if snapshot is None:
            # Callers (and /healthz, which needs no key) learn what is wrong, not where: the log has the detail.
            reason = self._reason or "no tool index is loaded yet"
            raise IndexUnavailableError(reason, public=reason)
        return snapshot

    def expire(self) -> None:
        """Make the next request check LATEST, whatever the clock says (after a SnapStart restore)."""
        self._next_check = float("-inf")

    def poll(self) -> None:
        """Run the periodic LATEST check if it is due, without raising (for /healthz)."""
        with contextlib.suppress(IndexUnavailableError):
            self.current()

    def health(self) -> Health:
        snapshot = self._current
        if snapshot is None:
            return Health(False, None, 0, self._reason)
        built_at = datetime.fromisoformat(snapshot.manifest.created_at)
        return Health(True, snapshot.build_id, len(snapshot.tools), None, built_at)

    def _prune_cache(self, keep: str) -> None:
        """Drop cached copies of older builds: Lambda's /tmp is small, and a loaded index lives in memory."""
        if not self.cache_dir.is_dir():
            return
        for child in self.cache_dir.iterdir():
            if child.is_dir() and child.name != keep and not child.name.startswith("."):
                shutil.rmtree(child, ignore_errors=True)

    def _note_changes(self, build_id: str) -> None:
        """Log, once per build, that its published files changed since the private copy served was made of them."""
        changed = self.store.changed_in_place(build_id, self.cache_dir)
        if changed and self._changed_noted != build_id:
            self._changed_noted = build_id
            log.warning(
                "build %s at %s changed in place (%s): still serving the copy verified when it was loaded; publish a"
                " changed index as a new build (toolrec build --out) and it is loaded when LATEST names it",
                build_id,
                self.store.describe(),
                ", ".join(changed),
            )

    def _refresh_locked(self) -> None:
        now = self._clock()
        try:
            latest = self.store.latest_build_id()
            if self._current is None or latest != self._current.build_id:
                index = load_latest(
                    self.store, self.cache_dir, self.model_fingerprint, self.threads, self.namespace, private=True
                )
                if not self.learn_from_use:
                    index = index.without_usage()
                self._current = index  # one reference assignment: the atomic swap
                log.info("index loaded", extra={"build_id": index.build_id})
                if self.on_load is not None:
                    self.on_load(index)
                self._prune_cache(keep=index.build_id)
            else:
                self._note_changes(latest)
            self._error = self._reason = None
            self._next_check = now + self.refresh_seconds
        except (IndexUnavailableError, IntegrityError, OSError, ValueError) as exc:
            self._error = str(exc)
            self._reason = exc.public if isinstance(exc, ToolrecError) else "the published tool index cannot be read"
            # Keep serving the previous build if there is one; retry sooner while there is none.
            retry = self.refresh_seconds if self._current is not None else UNAVAILABLE_RETRY_SECONDS
            self._next_check = now + min(retry, self.refresh_seconds) if self.refresh_seconds else now
            log.warning("index refresh failed (%s): %s", self.store.describe(), exc)
