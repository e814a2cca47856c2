"""Helpers for the serving tests: a demo index, a policy, the app wired by the real composition root, and
API Gateway HTTP API (payload format 2.0) events as the Lambda function receives them."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from build_index.bench.events import load_event
from build_index.build import index_tools
from build_index.ingest.catalog_files import read_catalogs
from build_index.model_prepare import MODEL_ID
from build_index.ops.serve import DEMO_DIR, demo_policy
from build_index.publish import publish
from handler.catalog.tool import Tool
from handler.policy.file_store import write_document
from handler.policy.keys import hash_key
from handler.policy.model import ApiKeyRecord, PolicyDocument
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
    """The template's API Gateway HTTP API v2 event (``load_event``) with a JSON body and this suite's bearer key."""
    payload = raw_body if raw_body is not None else (b"" if body is None else json.dumps(body).encode())
    request_headers: dict[str, str] = {}
    if body is not None or raw_body is not None:
        request_headers["content-type"] = "application/json"
    if key is not None:
        request_headers["authorization"] = f"Bearer {key}"
    request_headers.update(headers or {})
    return load_event(method, path, headers=request_headers, body=payload, query=query or {}, base64_body=base64_body)


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
