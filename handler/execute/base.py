"""The executor port: one interface over the places a tool can run, and the errors a run can end in.

An executor only ever reaches the endpoint the catalog registered for the tool (``Tool.executor``): the request
supplies the tool's arguments and nothing else, so a caller can never point a call at a URL, header or path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from handler.catalog.tool import Tool
from handler.errors import ExecutorTimeoutError, ExecutorUnavailableError

if TYPE_CHECKING:  # the MCP types load only where an MCP call is made (tests/unit/test_cold_start_imports.py)
    import mcp_types


@dataclass(frozen=True)
class ContentOutput:
    """An upstream MCP answer that is more than JSON (an image, audio, a resource). REST callers get ``as_json``;
    MCP clients get ``blocks`` as they came, so an image reaches the model as an image, not as base64 in text."""

    blocks: tuple[mcp_types.ContentBlock, ...]
    as_json: Any


@dataclass(frozen=True)
class ToolCall:
    """What an executor receives: the catalog's tool (with its registered endpoint) and validated arguments."""

    tool: Tool
    arguments: Mapping[str, Any]
    user_id: str


class ToolExecutor(Protocol):
    """Runs one call on the endpoint registered for the tool; returns the tool's output (JSON, or ContentOutput)
    or raises ExecutionError."""

    async def call(self, call: ToolCall) -> Any: ...


class Dispatcher:
    """Picks the adapter for a tool's executor kind and bounds every call by the tool's timeout.

    Adapters also pass the timeout to their transport (so sockets close); this outer bound is what guarantees that
    no executor, however it misbehaves, holds a request longer than the catalog allows, nor longer than
    ``max_seconds`` (the deployment's TOOLREC_MAX_TOOL_SECONDS): the Lambda function must outlive the tool's wait to
    answer and record a timeout, instead of ending at its own limit with no answer.
    """

    def __init__(self, executors: Mapping[str, ToolExecutor], max_seconds: float | None = None) -> None:
        self._executors = dict(executors)
        self._max_seconds = max_seconds

    async def run(self, call: ToolCall) -> Any:
        spec = call.tool.executor
        if spec is None:
            raise ExecutorUnavailableError(f"tool {call.tool.name} has no executor registered in the catalog")
        executor = self._executors.get(spec.kind)
        if executor is None:
            raise ExecutorUnavailableError(f"executor kind {spec.kind!r} is not configured in this deployment")
        seconds = spec.timeout_s if self._max_seconds is None else min(spec.timeout_s, self._max_seconds)
        try:
            with anyio.fail_after(seconds):
                return await executor.call(call)
        except TimeoutError as exc:
            raise ExecutorTimeoutError(f"tool {call.tool.name} did not answer within {seconds:g} s") from exc
