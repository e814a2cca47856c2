"""Faults in AWS dependencies, injected on loopback: S3 unreachable or hanging at cold start, and DynamoDB
throttling. The clients are the ones the composition root creates (not injected), so their retry and timeout
configuration is what is under test: bounded, then a clean 503 that names the cause, then recovery.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.awsrequest import AWSResponse
from mangum import Mangum
from moto import mock_aws
from moto.server import ThreadedMotoServer

from handler.aws import CLIENT_OPTIONS
from handler.composition import build_app
from handler.inference.embedder import OnnxEmbedder
from handler.settings import Settings
from tests.integration.test_serving_aws import TABLES, write_policy_with_cli
from tests.reliability.conftest import assert_error_body
from tests.support.servers import free_port
from tests.support.serving import (
    API_KEY,
    apigw_event,
    demo_tools,
    invoke,
    lambda_thread_loop,
    publish_tools,
    write_test_policy,
)

BUCKET, PREFIX = "fault-index", "tenant"
DYNAMODB_CLIENT_OPTIONS = CLIENT_OPTIONS["dynamodb", "serve"]
COLD_START_BOUND_S = 10.0  # Lambda's init phase: a hung S3 must not hold an instance for minutes


def select(handler: Mangum, **fields: Any) -> tuple[int, Any]:
    status, _, body = invoke(handler, apigw_event("POST", "/v1/tools/select", {"tasks": ["send a message"], **fields}))
    return status, body


def healthz(handler: Mangum) -> tuple[int, Any]:
    status, _, body = invoke(handler, apigw_event("GET", "/healthz", key=None))
    return status, body


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    """AWS credentials for a local endpoint and a port nothing listens on yet: S3 is down."""
    port = free_port()
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with lambda_thread_loop():
        yield port


def s3_app(tmp_path: Path, embedder: OnnxEmbedder) -> Any:
    settings = Settings(
        index_location=f"s3://{BUCKET}/{PREFIX}",
        index_cache_dir=tmp_path / "cache",
        index_refresh_seconds=1,
        policy_backend="file",
        policy_file=write_test_policy(tmp_path / "policy.json"),
    )
    return build_app(settings, embedder=embedder)


def bounded_cold_start(tmp_path: Path, embedder: OnnxEmbedder) -> tuple[Mangum, float]:
    built: list[Any] = []
    started = time.monotonic()
    thread = threading.Thread(target=lambda: built.append(s3_app(tmp_path, embedder)), daemon=True)
    thread.start()
    thread.join(COLD_START_BOUND_S)
    elapsed = time.monotonic() - started
    assert built, f"cold start still blocked on S3 after {elapsed:.0f} s: the S3 client's timeouts are unbounded"
    return Mangum(built[0], lifespan="off"), elapsed  # built here: Mangum adopts this thread's event loop


def assert_unavailable(function: Mangum) -> None:
    status, body = select(function, user_id="u")
    assert status == 503 and body["name"] == "service_unavailable", body
    assert_error_body(status, body)
    search_status, _, search = invoke(function, apigw_event("POST", "/v1/tools/search", {"query": "x", "user_id": "u"}))
    assert search_status == 503 and search["name"] == "service_unavailable"
    status, health = healthz(function)
    assert status == 503 and health["status"] == "unavailable"
    # Says what is wrong in generic words; never the bucket, which the log names (issue 15 item 8).
    assert "storage cannot be read" in health["reason"] and BUCKET not in json.dumps([body, health]), health


def publish_when_s3_returns(port: int, embedder: OnnxEmbedder) -> ThreadedMotoServer:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    s3 = boto3.client("s3", region_name="us-east-1")  # AWS_ENDPOINT_URL_S3 points at the server
    s3.create_bucket(Bucket=BUCKET)
    publish_tools(demo_tools(), f"s3://{BUCKET}/{PREFIX}", embedder, s3)
    return server


def wait_until_serving(function: Mangum, within_s: float = 15.0) -> Any:
    deadline = time.monotonic() + within_s
    while True:
        status, body = select(function, user_id="u")
        if status == 200 or time.monotonic() > deadline:
            return status, body
        time.sleep(0.5)


def test_s3_down_at_cold_start_is_503_then_recovers(aws_env: int, tmp_path: Path, embedder: OnnxEmbedder) -> None:
    function, _ = bounded_cold_start(tmp_path, embedder)
    assert_unavailable(function)
    server = publish_when_s3_returns(aws_env, embedder)
    try:
        status, body = wait_until_serving(function)
        assert status == 200, body
        assert body["results"][0]["suggestions"]
        assert healthz(function)[1]["status"] == "ok"
    finally:
        server.stop()


class HangingEndpoint:
    """Accepts connections on the port and never answers (a stuck endpoint) until closed."""

    def __init__(self, port: int) -> None:
        self.listener = socket.create_server(("127.0.0.1", port))
        self.listener.settimeout(0.2)
        self.held: list[socket.socket] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.stop.is_set():
            try:
                self.held.append(self.listener.accept()[0])
            except TimeoutError:
                continue

    def close(self) -> None:
        if not self.stop.is_set():
            self.stop.set()
            self.thread.join()
            for connection in self.held:
                connection.close()
            self.listener.close()


def test_hanging_s3_at_cold_start_is_bounded_then_recovers(
    aws_env: int, tmp_path: Path, embedder: OnnxEmbedder
) -> None:
    hanging = HangingEndpoint(aws_env)
    try:
        function, elapsed = bounded_cold_start(tmp_path, embedder)
        print(f"\ncold start against a hanging S3 gave up after {elapsed:.1f} s")
        assert_unavailable(function)
    finally:
        hanging.close()
    server = publish_when_s3_returns(aws_env, embedder)
    try:
        status, body = wait_until_serving(function, within_s=30)
        assert status == 200, body
    finally:
        server.stop()


THROTTLED = (
    b'{"__type": "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",'
    b' "message": "The level of configured provisioned throughput for the table was exceeded."}'
)


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self, **_: Any) -> Iterator[bytes]:
        yield self.data


class Throttle:
    """A before-send hook on the service's own DynamoDB client: answers the next ``times`` calls with a throttling
    error (as DynamoDB does), counting every attempt the client makes."""

    def __init__(self) -> None:
        self.remaining = 0
        self.attempts: list[float] = []

    def __call__(self, request: Any, **_: Any) -> AWSResponse | None:
        self.attempts.append(time.monotonic())
        if self.remaining <= 0:
            return None
        self.remaining -= 1
        headers = {
            "Content-Type": "application/x-amz-json-1.0",
            "x-amzn-ErrorType": "ProvisionedThroughputExceededException",
        }
        return AWSResponse(request.url, 400, headers, _Body(THROTTLED))


@pytest.fixture
def dynamodb_function(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, embedder: OnnxEmbedder, demo_index: Path
) -> Iterator[tuple[Mangum, Throttle]]:
    for name, value in TABLES.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws(), lambda_thread_loop():
        write_policy_with_cli()
        settings = Settings(
            index_location=str(demo_index),
            index_cache_dir=tmp_path / "cache",
            policy_backend="dynamodb",
            policy_cache_seconds=0,  # every request reads DynamoDB
        )
        app = build_app(settings, embedder=embedder)
        throttle = Throttle()
        client = app.state.services.policy.inner._client  # the client the composition root created
        client.meta.events.register_first("before-send.dynamodb", throttle)
        yield Mangum(app, lifespan="off"), throttle


def test_brief_dynamodb_throttling_is_retried_with_backoff(dynamodb_function: tuple[Mangum, Throttle]) -> None:
    function, throttle = dynamodb_function
    throttle.remaining = 1
    status, body = select(function, user_id="u")
    assert status == 200, body
    first, second = throttle.attempts[:2]
    assert second - first > 0  # a retry, after a pause


def test_sustained_dynamodb_throttling_is_a_bounded_clean_503(dynamodb_function: tuple[Mangum, Throttle]) -> None:
    function, throttle = dynamodb_function
    throttle.remaining = 10_000
    started = time.monotonic()
    status, body = select(function, user_id="u")
    elapsed = time.monotonic() - started
    assert status == 503 and body["name"] == "service_unavailable", body
    assert_error_body(status, body)
    assert API_KEY not in str(body)
    print(f"\nthrottled: {len(throttle.attempts)} attempts, 503 after {elapsed:.2f} s")
    # Retried, a bounded number of times (the composition root's client configuration), then given up.
    assert len(throttle.attempts) == DYNAMODB_CLIENT_OPTIONS["retries"]["total_max_attempts"], throttle.attempts
    assert elapsed < 10, elapsed  # well inside API Gateway's 30 s
    throttle.remaining = 0
    status, body = select(function, user_id="u")
    assert status == 200, body  # throttling over: the same instance answers again
