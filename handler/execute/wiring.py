"""Build the execution service once per app: the executor adapters and the service over the shared services."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from handler.execute.base import Dispatcher, ToolCall, ToolExecutor
from handler.execute.http_executor import HttpExecutor
from handler.execute.lambda_executor import LambdaClient, LambdaExecutor, lambda_client
from handler.execute.mcp_executor import McpExecutor
from handler.execute.service import ExecutionService
from handler.services.container import Services


class _LazyLambdaExecutor:
    """Creates the boto3 client on the first ``lambda`` call: a local server with no AWS region configured
    still starts, and a deployment without Lambda tools never builds the client."""

    def __init__(self) -> None:
        self._executor: LambdaExecutor | None = None

    async def call(self, call: ToolCall) -> Any:
        if self._executor is None:
            self._executor = LambdaExecutor(lambda_client())
        return await self._executor.call(call)


def default_executors(lambda_client_: LambdaClient | None = None) -> dict[str, ToolExecutor]:
    lambda_executor: ToolExecutor = (
        LambdaExecutor(lambda_client_) if lambda_client_ is not None else _LazyLambdaExecutor()
    )
    return {"http": HttpExecutor(), "mcp": McpExecutor(), "lambda": lambda_executor}


def build_execution(services: Services, executors: Mapping[str, ToolExecutor] | None = None) -> ExecutionService:
    return ExecutionService(services.holder, services.access, Dispatcher(executors or default_executors()))
