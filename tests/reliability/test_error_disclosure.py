"""What a caller is told when the service cannot answer (issue 15, item 8): what is wrong in generic words, never
a file path, a bucket or table name or a parser's position. Callers whose key was never checked (the policy read
fails first) and ``/healthz`` (no key) see these answers; the operator finds the detail in the log.

A real ``toolrec`` app (the composition root) on loopback, with a policy file broken while serving or no index
behind it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from handler.composition import build_app
from handler.errors import IndexUnavailableError
from handler.index.holder import IndexHolder
from handler.ranking.query import Embedder
from tests.reliability.conftest import assert_error_body
from tests.support.servers import serve
from tests.support.serving import API_KEY, file_settings, write_test_policy

SECRET = "secret-location-7f3a"  # in every path below: no answer may contain it
REQUESTS = [
    ("POST", "/v1/tools/select", {"tasks": ["send a slack message"], "user_id": "u"}),
    ("POST", "/v1/tools/search", {"query": "slack", "user_id": "u"}),
    ("POST", "/v1/tools/execute", {"tool_name": "Slack.SendMessage", "input": {}, "user_id": "u"}),
    ("GET", "/v1/apps?user_id=u", None),
    ("POST", "/mcp/default", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
]
PARSER_WORDS = ("line ", "column", "char ", "Expecting", "JSONDecodeError", "ValidationError", "Traceback")


@contextmanager
def log_messages() -> Iterator[list[str]]:
    """WARNING and above logged under ``handler``; entered after build_app, which installs the service's handlers."""
    messages: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            messages.append(record.getMessage())

    collector = Collect(level=logging.WARNING)
    logging.getLogger("handler").addHandler(collector)
    try:
        yield messages
    finally:
        logging.getLogger("handler").removeHandler(collector)


def _assert_generic(status: int, body: object) -> None:
    text = str(body)
    assert SECRET not in text and "/tmp" not in text, body
    assert not any(word in text for word in PARSER_WORDS), body


def _answers(base: str, key: str | None) -> list[tuple[int, object]]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    headers["X-Toolrec-User"] = "u"
    headers["Accept"] = "application/json, text/event-stream"
    answers = []
    for method, path, body in REQUESTS:
        response = httpx.request(method, f"{base}{path}", json=body, headers=headers, timeout=30)
        answers.append((response.status_code, _rest_body(response.json())))
    return answers


def _rest_body(body: object) -> object:
    """The error body; a gateway's MCP endpoint carries it as the data of a JSON-RPC error of the same message."""
    if isinstance(body, dict) and "error" in body and "jsonrpc" in body:
        assert body["error"]["message"] == body["error"]["data"]["message"], body
        return body["error"]["data"]
    return body


def test_a_policy_file_broken_while_serving_tells_callers_nothing_of_it(
    demo_index: Path, embedder: Embedder, tmp_path: Path
) -> None:
    """A broken file stops the start (tests/reliability/test_policy_file_errors.py); broken while serving, the last
    good policy answers every caller as before (issue 33 item 8), and only the log says where and what."""
    policy_file = write_test_policy(tmp_path / SECRET / "policy.json")
    settings = file_settings(str(demo_index), policy_file, tmp_path / "cache", policy_cache_seconds=0)
    app = build_app(settings, embedder=embedder)
    with serve(app) as base, log_messages() as logged:
        before = {key: [status for status, _ in _answers(base, key)] for key in (None, "trk_not-a-key", API_KEY)}
        policy_file.write_text('{"version": 1, "gateways": [', encoding="utf-8")
        for key, statuses in before.items():
            answers = _answers(base, key)
            assert [status for status, _ in answers] == statuses, answers
            for status, body in answers:
                if status >= 400:
                    _assert_generic(status, body)
    assert any(str(policy_file) in message for message in logged), logged  # the operator learns where


def test_healthz_and_requests_without_an_index_say_so_without_its_location(embedder: Embedder, tmp_path: Path) -> None:
    policy_file = write_test_policy(tmp_path / "policy.json")
    missing = tmp_path / SECRET / "index"
    settings = file_settings(str(missing), policy_file, tmp_path / "cache")
    app = build_app(settings, embedder=embedder)
    with serve(app) as base, log_messages() as logged:
        app.state.services.holder.load()  # the retry a later request would make, logged where the test sees it
        health = httpx.get(f"{base}/healthz", timeout=30)
        assert health.status_code == 503 and health.json()["status"] == "unavailable", health.text
        reason = health.json()["reason"]
        assert isinstance(reason, str) and "index" in reason, reason
        _assert_generic(503, health.json())
        for status, body in _answers(base, API_KEY)[:4]:  # MCP answers tools/list on a gateway without an index
            assert status == 503, body
            assert_error_body(status, body)
            _assert_generic(status, body)
    assert any(str(missing) in message for message in logged), logged


class _UnreachableBucket:
    """An index store (the IndexStore port) whose storage refuses every read, naming its bucket as S3 errors do."""

    def latest_build_id(self) -> str:
        raise IndexUnavailableError(f"cannot read s3://{SECRET}-bucket/indexes/LATEST: AccessDenied")

    def fetch(self, build_id: str, cache_dir: Path) -> Path:
        raise AssertionError("never reached")

    def describe(self) -> str:
        return f"s3://{SECRET}-bucket/indexes"


def test_an_unreachable_index_bucket_is_not_named_to_callers(tmp_path: Path) -> None:
    holder = IndexHolder(_UnreachableBucket(), tmp_path, "fingerprint", refresh_seconds=60)
    with log_messages() as logged:
        holder.load()
    health = holder.health()
    assert not health.ok and health.reason is not None and SECRET not in health.reason, health
    with pytest.raises(IndexUnavailableError) as unavailable:
        holder.current()
    assert SECRET not in str(unavailable.value), unavailable.value
    assert any(f"{SECRET}-bucket" in message for message in logged), logged
