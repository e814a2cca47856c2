"""The Lambda path in tests: API Gateway HTTP API (v2) events through the Mangum handler.

``MangumTransport`` is an httpx2 transport (the MCP SDK client's HTTP library) that turns each request into a v2
event (``load_event``: the template under events/) and calls the handler on one long-lived thread with its own event
loop, as a warm Lambda container does: invocation after invocation on the same instance.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any

import httpx2

from build_index.bench.events import load_event

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


class LambdaContext:
    function_name = "toolrec"
    aws_request_id = "test-request"
    memory_limit_in_mb = 1024

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


class LambdaContainer:
    """One warm container: a single thread with its own event loop, running invocations one at a time."""

    def __init__(self, cold_start: Callable[[], Handler]) -> None:
        """``cold_start`` builds the handler on the container's thread, as the entry module's import does."""
        self.invocations = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, initializer=self._start_loop)
        self.handler: Handler = self._pool.submit(cold_start).result()

    def _start_loop(self) -> None:
        # Mangum takes the thread's current loop when it is built and reuses it for every invocation.
        self._loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self._loop)

    def _close_loop(self) -> None:
        if self._loop is not None:
            self._loop.close()
            asyncio.set_event_loop(None)

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        assert threading.current_thread() is not threading.main_thread()
        self.invocations += 1
        return self.handler(event, LambdaContext())

    def invoke_in_thread(self, event: dict[str, Any]) -> dict[str, Any]:
        """One invocation from synchronous test code, on the container's thread."""
        return self._pool.submit(self.invoke, event).result()

    async def invoke_async(self, event: dict[str, Any]) -> dict[str, Any]:
        return await asyncio.get_running_loop().run_in_executor(self._pool, self.invoke, event)

    def close(self) -> None:
        self._pool.submit(self._close_loop).result()
        self._pool.shutdown(wait=True)


def response_body(response: dict[str, Any]) -> bytes:
    body = response.get("body", "")
    return base64.b64decode(body) if response.get("isBase64Encoded") else body.encode()


class MangumTransport(httpx2.AsyncBaseTransport):
    def __init__(self, container: LambdaContainer) -> None:
        self.container = container

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        body = await request.aread()
        headers = dict(request.headers.items())
        event = load_event(
            request.method, request.url.path, headers=headers, body=body, query=request.url.query.decode()
        )
        response = await self.container.invoke_async(event)
        return httpx2.Response(
            status_code=response["statusCode"], headers=response.get("headers") or {}, content=response_body(response)
        )
