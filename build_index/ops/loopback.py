"""Loopback helpers for the commands and tests that start a server of ours (bench, loadtest, serving tests)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

import httpx

LOG_TAIL_CHARS = 2000


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serve_subprocess(
    args: Sequence[str],
    env: Mapping[str, str] | None = None,
    startup_timeout_s: float = 60.0,
    log_path: Path | None = None,
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``toolrec serve`` in a subprocess on a free loopback port, healthy, until the block ends.

    Yields the base URL and the process (its pid, or to stop it early). ``args`` follow ``--port``; ``env`` is added
    to this process's environment. The server's stdout and stderr go to ``log_path`` (kept, for a caller that reads
    what it printed), else to a temporary file; either way its tail is in the error when it exits or never answers.
    """
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    # Our own interpreter and CLI: the arguments come from our callers, not from outside.
    command = [sys.executable, "-m", "build_index.cli", "serve", "--host", "127.0.0.1", "--port", str(port), *args]
    with _log_file(log_path) as log:
        process = subprocess.Popen(  # noqa: S603
            command, env={**os.environ, **(env or {})}, stdout=log, stderr=subprocess.STDOUT
        )
        try:
            wait_healthy(base, process, log, startup_timeout_s)
            yield base, process
        finally:
            stop(process)


def stop(process: subprocess.Popen[bytes], timeout_s: float = 15.0) -> None:
    """Terminate, then kill what does not exit in ``timeout_s``; a process that already exited is left as it is."""
    process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def _log_file(path: Path | None) -> Iterator[BinaryIO]:
    with path.open("wb") if path is not None else tempfile.TemporaryFile() as log:
        yield log


def wait_healthy(base: str, process: subprocess.Popen[bytes], log: BinaryIO, timeout_s: float) -> None:
    """Until ``base`` answers /healthz; a process that exits first, or a timeout, raises with the log's tail."""
    deadline = time.monotonic() + timeout_s
    while not _healthy(base):
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"toolrec serve did not become healthy (exit code {process.poll()}): {_tail(log)}")
        time.sleep(0.2)


def _healthy(base: str) -> bool:
    try:
        return httpx.get(f"{base}/healthz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def _tail(log: BinaryIO) -> str:
    # pread, not seek + read: the server shares this file's offset and may still be writing.
    fd = log.fileno()
    size = os.fstat(fd).st_size
    start = max(0, size - LOG_TAIL_CHARS)
    return os.pread(fd, size - start, start).decode(errors="replace")
