"""Helpers for the serving tests: a demo index, a policy, the app wired by the real composition root, and
API Gateway HTTP API (payload format 2.0) events as the Lambda function receives them."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import numpy as np

from build_index.build import index_tools
from build_index.catalog_io import read_catalogs
from build_index.model_prepare import MODEL_ID
from build_index.ops.serve import DEMO_DIR, demo_policy
from build_index.publish import publish
from handler.catalog.tool import Tool
from handler.policy.file_store import PolicyDocument, write_document
from handler.policy.keys import hash_key
from handler.policy.model import ApiKeyRecord
from handler.ranking.query import Embedder
from handler.ranking.recommend import recommend
from handler.ranking.retriever import RankingIndex
from handler.settings import Settings

API_KEY = "trk_test-key-for-serving-tests"
SCOPED_KEY = "trk_test-key-limited-to-support"


def demo_tools() -> list[Tool]:
    return read_catalogs([DEMO_DIR / "tools.jsonl"])


def publish_tools(tools: list[Tool], location: str, embedder: Embedder, s3_client: Any = None) -> str:
    """Build with the real build step and publish (LATEST last); returns the build id."""
    return publish(index_tools(tools, embedder, MODEL_ID, progress=False), location, s3_client).build_id


def policy_for_tests() -> PolicyDocument:
    """The demo policy plus a 'support' gateway, a key limited to it, and a user who may not use Slack."""
    document = demo_policy()
    document = PolicyDocument.model_validate(
        {
            **document.model_dump(mode="json"),
            "gateways": [
                *[g.model_dump(mode="json") for g in document.gateways],
                {"gateway_id": "support", "allowed": ["Zendesk.*", "Slack.SendMessage"], "recommendation": "on"},
            ],
            "access_rules": [
                *[r.model_dump(mode="json") for r in document.access_rules],
                {"rule_id": "no-slack", "subject": "no-slack-user", "effect": "deny", "tools": ["Slack.*"]},
            ],
        }
    )
    document.api_keys.append(ApiKeyRecord(key_id="test", key_hash=hash_key(API_KEY)))
    document.api_keys.append(ApiKeyRecord(key_id="scoped", key_hash=hash_key(SCOPED_KEY), gateway_id="support"))
    return document


def write_test_policy(path: Path) -> Path:
    write_document(path, policy_for_tests())
    return path


def file_settings(index_location: str, policy_file: Path, cache_dir: Path, **overrides: Any) -> Settings:
    return Settings(
        index_location=index_location,
        index_cache_dir=cache_dir,
        policy_backend="file",
        policy_file=policy_file,
        **overrides,
    )


def apigw_event(
    method: str,
    path: str,
    body: Any = None,
    *,
    key: str | None = API_KEY,
    query: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
    raw_body: bytes | None = None,
    base64_body: bool = False,
) -> dict[str, Any]:
    """An API Gateway HTTP API v2 event, shaped as AWS sends it (lowercase headers, $default stage)."""
    payload = raw_body if raw_body is not None else (b"" if body is None else json.dumps(body).encode())
    all_headers = {
        "accept": "*/*",
        "content-length": str(len(payload)),
        "host": "abc123.execute-api.us-east-1.amazonaws.com",
        "user-agent": "curl/8.5.0",
        "x-amzn-trace-id": "Root=1-67891233-abcdef012345678912345678",
        "x-forwarded-for": "203.0.113.7",
        "x-forwarded-port": "443",
        "x-forwarded-proto": "https",
    }
    if body is not None or raw_body is not None:
        all_headers["content-type"] = "application/json"
    if key is not None:
        all_headers["authorization"] = f"Bearer {key}"
    all_headers.update(headers or {})
    now = time.time()
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": path,
        "rawQueryString": urlencode(query or {}),
        "headers": all_headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": "abc123.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "abc123",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7",
                "userAgent": "curl/8.5.0",
            },
            "requestId": "JKJaXmPLvHcESHA=",
            "routeKey": "$default",
            "stage": "$default",
            "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(now)),
            "timeEpoch": int(now * 1000),
        },
        "isBase64Encoded": base64_body,
    }
    if query:
        event["queryStringParameters"] = {k: str(v) for k, v in query.items()}
    if payload:
        event["body"] = base64.b64encode(payload).decode() if base64_body else payload.decode()
    return event


class LambdaContext:
    function_name = "toolrec"
    memory_limit_in_mb = 1024
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:toolrec"
    aws_request_id = "6f1c2a0e-1111-2222-3333-444455556666"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def invoke(handler: Any, event: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
    """Call the Mangum handler as Lambda would; returns status, headers and the decoded JSON body."""
    response = handler(event, LambdaContext())
    body = response.get("body") or ""
    if response.get("isBase64Encoded"):
        body = base64.b64decode(body).decode()
    return response["statusCode"], response.get("headers", {}), json.loads(body) if body else None


@contextmanager
def lambda_thread_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """The event loop a Mangum handler built in this block runs on, closed at the end.

    Mangum adopts the thread's current loop when it is constructed (creating one if there is none); a loop
    left behind is dropped unclosed by the next ``asyncio.run`` in the thread, which leaks its sockets.
    """
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield loop
    finally:
        loop.close()
        asyncio.set_event_loop(None)


def full_answer_size(ranking: RankingIndex, embedder: Embedder, task: str, allowed: Collection[str], top_k: int) -> int:
    """How many suggestions select owes for ``task`` when only ``allowed`` tools may be used: min(top_k, allowed), or
    0 when the ranking core itself, ranking exactly those tools, calls the task a no match (the calibrated empty
    answer). What "no slot lost to a filtered-out tool" means for a policy test."""
    mask = np.array([name in allowed for name in ranking.names])
    found = recommend(ranking, embedder, task, None, top_k, mask)
    return 0 if found.no_match else min(top_k, len(allowed))
