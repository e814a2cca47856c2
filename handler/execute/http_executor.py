"""The ``http`` executor: POST the call as JSON to the worker URL the catalog registered for the tool.

Wire contract with a worker: the request body is ``{"tool_name", "input", "user_id"}``; a 2xx answer's JSON body is
the tool's output; any other status is a tool error whose message is the body's ``error`` (or ``message``) field.
"""

from __future__ import annotations

from typing import Any

import httpx

from handler.errors import ExecutorTimeoutError, ExecutorUnavailableError, OutputUnreturnableError, ToolFailedError
from handler.execute.base import ToolCall

_MAX_ERROR_CHARS = 500
# A Lambda response carries at most 6 MB; an output that cannot be returned is refused here, with a reason.
MAX_OUTPUT_BYTES = 5 * 1024 * 1024


class HttpExecutor:
    def __init__(self, transport: httpx.AsyncBaseTransport | None = None) -> None:
        # A transport may be injected (tests, connection pooling); the URL always comes from the catalog.
        self._transport = transport
        # Loading the CA bundle costs ~150 ms (measured); build the TLS context once, a client per call.
        # Clients are not shared across calls because a pooled connection is bound to one event loop.
        self._tls = httpx.create_ssl_context()

    async def call(self, call: ToolCall) -> Any:
        spec = call.tool.executor
        assert spec is not None  # the Dispatcher only routes tools that have an executor
        body = {"tool_name": call.tool.name, "input": dict(call.arguments), "user_id": call.user_id}
        # follow_redirects=False: a redirect would send the call to an endpoint the catalog did not register.
        # httpx never retries a request that reached the network, which is what a non-idempotent tool needs.
        async with httpx.AsyncClient(
            transport=self._transport, verify=self._tls, timeout=spec.timeout_s, follow_redirects=False
        ) as client:
            try:
                response = await client.post(spec.target, json=body)
            except httpx.TimeoutException as exc:
                raise ExecutorTimeoutError(f"tool {call.tool.name} did not answer within {spec.timeout_s:g} s") from exc
            except httpx.HTTPError as exc:
                raise ExecutorUnavailableError(f"the worker for {call.tool.name} could not be reached") from exc
        return _output(call.tool.name, response)


def _output(tool_name: str, response: httpx.Response) -> Any:
    if len(response.content) > MAX_OUTPUT_BYTES:
        raise ExecutorUnavailableError(f"the worker for {tool_name} answered with more than {MAX_OUTPUT_BYTES} bytes")
    try:
        payload = response.json()
    except RecursionError:
        # json.loads stops at Python's recursion limit (~1,000 levels); the tool did run.
        if response.is_success:
            raise OutputUnreturnableError(tool_name, "the worker answered with JSON nested too deep to read") from None
        payload = None
    except ValueError:
        payload = None
    if response.is_success:
        if payload is None and response.content:
            raise ExecutorUnavailableError(f"the worker for {tool_name} answered with a body that is not JSON")
        return payload
    raise ToolFailedError(_error_message(tool_name, response.status_code, payload, response.text))


def _error_message(tool_name: str, status: int, payload: Any, text: str) -> str:
    if isinstance(payload, dict):
        for key in ("error", "message", "detail"):
            value = payload.get(key)
            if isinstance(value, str):
                return value[:_MAX_ERROR_CHARS]
    detail = text.strip()[:_MAX_ERROR_CHARS]
    return f"{tool_name} failed with HTTP {status}" + (f": {detail}" if detail else "")
