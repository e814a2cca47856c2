"""The deployed handler's logs (the service's own and observability's) never carry an API key or a tool input.

Runs the real composition root behind Mangum, wrapped by ``observability.instrument`` as the entry module wraps it,
at DEBUG, and reads everything written to stdout and stderr.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi import FastAPI
from mangum import Mangum

from handler import observability
from handler.composition import build_app
from handler.inference.embedder import OnnxEmbedder
from tests.support.serving import (
    API_KEY,
    apigw_event,
    demo_tools,
    file_settings,
    invoke,
    lambda_thread_loop,
    publish_tools,
    write_test_policy,
)

TOOL_INPUT = "merger with Globex closes on Friday"
WRONG_KEY = "trk_wrong-key-0123456789"


def debug_app(root: Path, embedder: OnnxEmbedder) -> FastAPI:
    """The composition root on the demo catalog under ``root``, logging at DEBUG (the most it ever writes)."""
    publish_tools(demo_tools(), str(root / "index"), embedder)
    settings = file_settings(str(root / "index"), write_test_policy(root / "policy.json"), root / "cache")
    return build_app(settings.model_copy(update={"log_level": "DEBUG"}), embedder=embedder)


def test_no_api_key_or_tool_input_in_any_log_line(
    tmp_path: Path, embedder: OnnxEmbedder, capfd: pytest.CaptureFixture[str]
) -> None:
    with lambda_thread_loop():
        app = debug_app(tmp_path, embedder)
        handler = observability.instrument(Mangum(app, lifespan="off"))
        select = {"tasks": ["send a Slack message"], "user_id": "ana"}
        execute = {"tool_name": "Slack.SendMessage", "input": {"channel_name": "deals", "text": TOOL_INPUT},
                   "user_id": "bob"}  # fmt: skip
        statuses = [
            invoke(handler, apigw_event("POST", "/v1/tools/select", select))[0],
            invoke(handler, apigw_event("POST", "/v1/tools/execute", execute))[0],
            invoke(handler, apigw_event("POST", "/v1/tools/select", select, key=WRONG_KEY))[0],
        ]
    assert statuses[0] == 200
    assert statuses[2] == 401
    captured = capfd.readouterr()
    logs = captured.out + captured.err
    lines = [json.loads(line) for line in logs.splitlines() if line.startswith("{")]
    assert len(lines) >= 3  # one "request done" per invocation at least: there were logs to leak into
    for secret in (API_KEY, WRONG_KEY, TOOL_INPUT):
        assert secret not in logs
    done = [line for line in lines if line.get("message") == "request done"]
    assert [(d["route"], d["status"]) for d in done] == [
        ("POST /v1/tools/select", 200),
        ("POST /v1/tools/execute", statuses[1]),
        ("POST /v1/tools/select", 401),
    ]


def test_outside_lambda_a_request_never_logs_an_earlier_requests_query_id(
    tmp_path: Path, embedder: OnnxEmbedder, capfd: pytest.CaptureFixture[str]
) -> None:
    # No instrument(): as under `toolrec serve`, where nothing but the app resets the bound keys per request.
    with lambda_thread_loop():
        app = debug_app(tmp_path, embedder)
        handler = Mangum(app, lifespan="off")
        status, _, body = invoke(
            handler, apigw_event("POST", "/v1/tools/select", {"tasks": ["send a Slack message"], "user_id": "ana"})
        )
        assert status == 200
        capfd.readouterr()
        # A new build: the next request logs the swap.
        publish_tools(demo_tools()[:-1], str(tmp_path / "index"), embedder)
        app.state.services.holder._next_check = 0.0
        assert invoke(handler, apigw_event("POST", "/v1/tools/search", {"query": "slack", "user_id": "ana"}))[0] == 200
    captured = capfd.readouterr()
    lines = [json.loads(line) for line in (captured.out + captured.err).splitlines() if line.startswith("{")]
    assert lines, "the second request logged nothing to check"
    assert all(line.get("query_id") != body["query_id"] for line in lines)
