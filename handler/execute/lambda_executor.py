"""The ``lambda`` executor: invoke the function the catalog registered (name or ARN) synchronously with boto3.

The payload is the same JSON as the ``http`` executor's (``{"tool_name", "input", "user_id"}``); the function's JSON
result is the tool's output, and a function error (``FunctionError`` set) is a tool error.
"""

from __future__ import annotations

import functools
import json
from typing import Any, Protocol

import anyio.to_thread
from botocore.exceptions import BotoCoreError, ClientError

from handler.aws import aws_client
from handler.errors import ExecutorUnavailableError, OutputUnreturnableError, ToolFailedError
from handler.execute.base import ToolCall
from handler.execute.bounded_output import OutputBudget


class LambdaClient(Protocol):
    def invoke(self, **kwargs: Any) -> dict[str, Any]: ...


def lambda_client(region_name: str | None = None) -> LambdaClient:
    """A boto3 Lambda client built once at cold start, with retries off (handler/aws.py says why)."""
    client: LambdaClient = aws_client("lambda", "serve", region_name)
    return client


class LambdaExecutor:
    def __init__(self, client: LambdaClient) -> None:
        self._client = client

    async def call(self, call: ToolCall) -> Any:
        spec = call.tool.executor
        assert spec is not None  # the Dispatcher only routes tools that have an executor
        payload = json.dumps({"tool_name": call.tool.name, "input": dict(call.arguments), "user_id": call.user_id})
        invoke = functools.partial(
            self._client.invoke,
            FunctionName=spec.target,
            InvocationType="RequestResponse",
            Payload=payload.encode(),
        )
        try:
            # abandon_on_cancel: when the Dispatcher's timeout fires, the request returns; the thread ends on its own.
            response = await anyio.to_thread.run_sync(invoke, abandon_on_cancel=True)
        except (BotoCoreError, ClientError) as exc:
            raise ExecutorUnavailableError(f"the function for {call.tool.name} could not be invoked") from exc
        body = _read_payload(call.tool.name, response)
        if response.get("FunctionError"):
            message = body.get("errorMessage") if isinstance(body, dict) else None
            raise ToolFailedError(str(message or f"{call.tool.name} failed ({response['FunctionError']})"))
        return body


def _read_payload(tool_name: str, response: dict[str, Any]) -> Any:
    stream = response.get("Payload")
    budget = OutputBudget(tool_name)  # Lambda allows a 6 MB payload; toolrec's answer around it must fit as well
    raw = stream.read(budget.limit + 1) if stream is not None else b""
    budget.count(raw)
    if not raw:
        return None
    try:
        return json.loads(raw)
    except RecursionError:  # json.loads stops at Python's recursion limit (~1,000 levels)
        raise OutputUnreturnableError(tool_name, "the function answered with JSON nested too deep to read") from None
    except ValueError as exc:
        raise ExecutorUnavailableError("the function answered with a payload that is not JSON") from exc
