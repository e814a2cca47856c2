"""The ``http`` executor: POST the call as JSON to the worker URL the catalog registered for the tool.

Wire contract with a worker: the request body is ``{"tool_name", "input", "user_id"}``; a 2xx answer's JSON body is
the tool's output; any other status is a tool error whose message is the body's ``error`` (or ``message``) field.
Either body is read only up to the output limit (bounded_output.py), uncompressed.
"""

from __future__ import annotations

import json
from typing import Any

import httpx

from handler.errors import ExecutorTimeoutError, ExecutorUnavailableError, OutputUnreturnableError, ToolFailedError
from handler.execute.base import ToolCall
from handler.execute.bounded_output import NO_COMPRESSION, OutputBudget, OutputTooLargeError

_MAX_ERROR_CHARS = 500


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
                # Streamed: the body is counted as it arrives and the connection closed just past the limit.
                async with client.stream("POST", spec.target, json=body, headers=NO_COMPRESSION) as response:
                    content = await _read_body(call.tool.name, response)
            except httpx.TimeoutException as exc:
                raise ExecutorTimeoutError(f"tool {call.tool.name} did not answer within {spec.timeout_s:g} s") from exc
            except httpx.HTTPError as exc:
                raise ExecutorUnavailableError(f"the worker for {call.tool.name} could not be reached") from exc
        return _output(call.tool.name, response.status_code, content)


async def _read_body(tool_name: str, response: httpx.Response) -> bytes:
    budget = OutputBudget(tool_name)
    try:
        budget.admit(response.headers)
        return await budget.read(response.aiter_raw())  # raw: admit refused any Content-Encoding to decode
    except OutputTooLargeError:
        if response.is_success:
            raise
        # An error body is held to the same limit; the tool reported a failure either way.
        status = response.status_code
        raise ToolFailedError(
            f"{tool_name} failed with HTTP {status}, with an error body of more than {budget.limit:,} bytes"
        ) from None


def _output(tool_name: str, status: int, content: bytes) -> Any:
    succeeded = 200 <= status < 300
    try:
        payload = json.loads(content) if content else None
    except RecursionError:
        # json.loads stops at Python's recursion limit (~1,000 levels); the tool did run.
        if succeeded:
            raise OutputUnreturnableError(tool_name, "the worker answered with JSON nested too deep to read") from None
        payload = None
    except ValueError:  # not JSON, or not text at all (UnicodeDecodeError is a ValueError)
        payload = None
    if succeeded:
        if payload is None and content:
            raise ExecutorUnavailableError(f"the worker for {tool_name} answered with a body that is not JSON")
        return payload
    raise ToolFailedError(_error_message(tool_name, status, payload, content.decode("utf-8", "replace")))


def _error_message(tool_name: str, status: int, payload: Any, text: str) -> str:
    if isinstance(payload, dict):
        for key in ("error", "message", "detail"):
            value = payload.get(key)
            if isinstance(value, str):
                return value[:_MAX_ERROR_CHARS]
    detail = text.strip()[:_MAX_ERROR_CHARS]
    return f"{tool_name} failed with HTTP {status}" + (f": {detail}" if detail else "")
