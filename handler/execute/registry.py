"""The executor adapters by kind (``http``, ``mcp``, ``lambda``), each made on its first call."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from handler.execute.base import ToolCall, ToolExecutor


class _BuiltOnFirstCall:
    """An executor made on its first call. Their imports and set-up (the MCP SDK and httpx ~0.8 s, a TLS context
    ~0.15 s each, a boto3 client) would otherwise be paid by every cold start, also by deployments whose catalog
    has no tool of that kind; and a local server with no AWS region configured still starts."""

    def __init__(self, build: Callable[[], ToolExecutor]) -> None:
        self._build = build
        self._executor: ToolExecutor | None = None

    async def call(self, call: ToolCall) -> Any:
        if self._executor is None:
            self._executor = self._build()
        return await self._executor.call(call)


def _http() -> ToolExecutor:
    from handler.execute.http_executor import HttpExecutor

    return HttpExecutor()


def _mcp() -> ToolExecutor:
    from handler.execute.mcp_executor import McpExecutor

    return McpExecutor()


def _lambda() -> ToolExecutor:
    from handler.execute.lambda_executor import LambdaExecutor, lambda_client

    return LambdaExecutor(lambda_client())


def default_executors() -> dict[str, ToolExecutor]:
    return {"http": _BuiltOnFirstCall(_http), "mcp": _BuiltOnFirstCall(_mcp), "lambda": _BuiltOnFirstCall(_lambda)}
