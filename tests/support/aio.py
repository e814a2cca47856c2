"""Run async test code without touching the main thread's current event loop.

``anyio.run`` / ``asyncio.run`` in the main thread end by clearing its current loop; a loop that some other code
created there (Mangum does, when a handler is built on the main thread) is then dropped unclosed and its
ResourceWarning fails whichever test happens to run when it is collected. Running on a helper thread avoids that.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

T = TypeVar("T")


def run_async(func: Callable[..., Awaitable[T]], *args: Any) -> T:
    return in_thread(anyio.run, func, *args)


def in_thread(func: Callable[..., T], *args: Any) -> T:
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(func, *args).result()
