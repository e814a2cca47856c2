"""Each executor adapter against a real back end on loopback: an HTTP worker, an upstream MCP server, and a boto3
Lambda client (botocore's Stubber: the real client, request validation included, with a canned response)."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.stub import Stubber

from handler.aws import CLIENT_OPTIONS
from handler.catalog.tool import Executor, Tool
from handler.errors import (
    ExecutionError,
    ExecutorTimeoutError,
    ExecutorUnavailableError,
    OutputUnreturnableError,
    ToolFailedError,
)
from handler.execute.base import Dispatcher, ToolCall
from handler.execute.bounded_output import MAX_OUTPUT_BYTES
from handler.execute.http_executor import HttpExecutor
from handler.execute.lambda_executor import LambdaExecutor
from handler.execute.mcp_executor import McpExecutor
from tests.support.aio import run_async
from tests.support.servers import free_port, serve
from tests.support.workers import MEBIBYTE, http_worker_app, large_text_mcp_app, upstream_mcp_app

NO_RETRY_CONFIG = Config(**CLIENT_OPTIONS["lambda", "serve"])  # what lambda_client gives the executor


def make_tool(name: str, kind: str, target: str, remote: str | None = None, timeout_s: float = 5.0) -> Tool:
    return Tool(
        name=name,
        description="A test tool.",
        input_schema={"type": "object"},
        app=name.split(".", maxsplit=1)[0],
        executor=Executor(kind=kind, target=target, tool=remote, timeout_s=timeout_s),  # type: ignore[arg-type]
    )


def run(dispatcher: Dispatcher, tool: Tool, arguments: dict[str, Any]) -> Any:
    async def main() -> Any:
        return await dispatcher.run(ToolCall(tool, arguments, "user-1"))

    return run_async(main)


@pytest.fixture(scope="module")
def worker() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    calls: list[dict[str, Any]] = []
    with serve(http_worker_app(calls)) as url:
        yield url, calls


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with serve(upstream_mcp_app()) as url:
        yield url + "/mcp"


@pytest.fixture
def dispatcher() -> Dispatcher:
    return Dispatcher({"http": HttpExecutor(), "mcp": McpExecutor()})


def test_http_worker_computes_output_from_the_arguments(
    worker: tuple[str, list[dict[str, Any]]], dispatcher: Dispatcher
) -> None:
    url, calls = worker
    output = run(dispatcher, make_tool("Weather.Forecast", "http", url + "/forecast"), {"city": "oslo", "days": 2})
    assert output == {"city": "Oslo", "days": ["oslo-day-1", "oslo-day-2"]}
    assert calls[-1] == {
        "path": "/forecast",
        "tool_name": "Weather.Forecast",
        "input": {"city": "oslo", "days": 2},
        "user_id": "user-1",
    }


def test_http_worker_error_is_a_tool_error_with_its_message(
    worker: tuple[str, list[dict[str, Any]]], dispatcher: Dispatcher
) -> None:
    url, _ = worker
    with pytest.raises(ToolFailedError, match="cannot reach printer p9"):
        run(dispatcher, make_tool("Printer.Print", "http", url + "/fail"), {"printer": "p9"})


def test_http_timeout_is_reported_once_and_never_retried(
    worker: tuple[str, list[dict[str, Any]]], dispatcher: Dispatcher
) -> None:
    url, calls = worker
    before = len(calls)
    started = time.monotonic()
    with pytest.raises(ExecutorTimeoutError, match=r"within 0\.3 s"):
        run(dispatcher, make_tool("Slow.Job", "http", url + "/slow", timeout_s=0.3), {})
    assert time.monotonic() - started < 2.0
    assert len([c for c in calls[before:] if c["path"] == "/slow"]) == 1


def test_oversized_output_is_refused(worker: tuple[str, list[dict[str, Any]]], dispatcher: Dispatcher) -> None:
    url, _ = worker
    with pytest.raises(ExecutorUnavailableError, match="more than"):
        run(dispatcher, make_tool("Big.Dump", "http", url + "/huge"), {"size": MAX_OUTPUT_BYTES})


def test_a_compressed_answer_is_refused_though_the_tool_ran(
    worker: tuple[str, list[dict[str, Any]]], dispatcher: Dispatcher
) -> None:
    url, calls = worker
    with pytest.raises(OutputUnreturnableError, match=r"Zip\.Dump ran.*compressed"):
        run(dispatcher, make_tool("Zip.Dump", "http", url + "/gzipped"), {"a": 1})
    assert calls[-1]["path"] == "/gzipped"


def test_unreachable_worker_is_unavailable(dispatcher: Dispatcher) -> None:
    tool = make_tool("Down.Job", "http", f"http://127.0.0.1:{free_port()}/x")
    with pytest.raises(ExecutorUnavailableError) as caught:
        run(dispatcher, tool, {})
    assert "127.0.0.1" not in str(caught.value)  # internal endpoints are not shown to callers


def test_mcp_upstream_structured_output(upstream: str, dispatcher: Dispatcher) -> None:
    assert run(dispatcher, make_tool("Math.Add", "mcp", upstream, "add"), {"a": 2, "b": 40}) == {"sum": 42}


def test_mcp_upstream_text_output(upstream: str, dispatcher: Dispatcher) -> None:
    assert run(dispatcher, make_tool("Text.Shout", "mcp", upstream, "shout"), {"text": "hey"}) == {"result": "HEY!"}


def test_mcp_upstream_tool_error(upstream: str, dispatcher: Dispatcher) -> None:
    with pytest.raises(ToolFailedError, match="explode"):
        run(dispatcher, make_tool("Boom.Explode", "mcp", upstream, "explode"), {"reason": "test"})


def test_mcp_upstream_timeout(upstream: str, dispatcher: Dispatcher) -> None:
    with pytest.raises(ExecutorTimeoutError):
        run(dispatcher, make_tool("Boom.Dawdle", "mcp", upstream, "dawdle", timeout_s=0.3), {"seconds": 3})


@pytest.fixture(scope="module", params=["json", "sse"])
def large_upstream(request: pytest.FixtureRequest) -> Iterator[str]:
    with serve(large_text_mcp_app(json_response=request.param == "json")) as url:
        yield url + "/mcp"


def test_mcp_upstream_output_within_the_limit_is_returned_whole(large_upstream: str, dispatcher: Dispatcher) -> None:
    # 2 MiB: over SSE too, where the SDK's own event limit (1 MiB) would have refused it.
    size = 2 * MEBIBYTE
    assert run(dispatcher, make_tool("Big.Text", "mcp", large_upstream, "text"), {"size": size}) == "x" * size


def test_mcp_upstream_output_past_the_limit_says_the_tool_ran(large_upstream: str, dispatcher: Dispatcher) -> None:
    with pytest.raises(OutputUnreturnableError, match=rf"Big\.Text ran.*more than {MAX_OUTPUT_BYTES:,} bytes"):
        run(dispatcher, make_tool("Big.Text", "mcp", large_upstream, "text"), {"size": MAX_OUTPUT_BYTES + 1})


def test_mcp_upstream_down(dispatcher: Dispatcher) -> None:
    with pytest.raises(ExecutorUnavailableError, match="could not be reached"):
        run(dispatcher, make_tool("Math.Add", "mcp", f"http://127.0.0.1:{free_port()}/mcp", "add"), {"a": 1, "b": 2})


def test_kind_without_an_adapter_is_unavailable(dispatcher: Dispatcher) -> None:
    with pytest.raises(ExecutionError, match="not configured"):
        run(dispatcher, make_tool("Fn.Run", "lambda", "my-function"), {})


def _lambda_payload(body: Any) -> dict[str, Any]:
    return {"StatusCode": 200, "Payload": io.BytesIO(json.dumps(body).encode())}


def test_lambda_invokes_the_registered_function_once() -> None:
    client = boto3.client(
        "lambda",
        region_name="eu-west-1",
        config=NO_RETRY_CONFIG,
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    expected = {
        "FunctionName": "arn:aws:lambda:eu-west-1:123456789012:function:forecast",
        "InvocationType": "RequestResponse",
        "Payload": json.dumps(
            {"tool_name": "Weather.Forecast", "input": {"city": "oslo"}, "user_id": "user-1"}
        ).encode(),
    }
    tool = make_tool("Weather.Forecast", "lambda", expected["FunctionName"])  # type: ignore[arg-type]
    with Stubber(client) as stub:
        stub.add_response("invoke", _lambda_payload({"temp_c": 4}), expected)
        stub.add_response(
            "invoke", {**_lambda_payload({"errorMessage": "city unknown"}), "FunctionError": "Unhandled"}, expected
        )
        dispatcher = Dispatcher({"lambda": LambdaExecutor(client)})
        assert run(dispatcher, tool, {"city": "oslo"}) == {"temp_c": 4}
        with pytest.raises(ToolFailedError, match="city unknown"):
            run(dispatcher, tool, {"city": "oslo"})
        stub.assert_no_pending_responses()


def test_lambda_client_never_retries() -> None:
    assert NO_RETRY_CONFIG.retries is not None
    assert NO_RETRY_CONFIG.retries["total_max_attempts"] == 1
