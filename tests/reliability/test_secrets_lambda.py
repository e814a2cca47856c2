"""No secret in the Lambda function's output: the configured entry point (Powertools logs and metrics on stdout, the
service's own logs) is cold-started from TOOLREC_* variables at DEBUG level and invoked with API Gateway v2 events
carrying a known key (valid and not), a header and a tool input; stdout, stderr and every response are searched."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from handler.policy.keys import hash_key
from tests.support.serving import API_KEY, apigw_event, invoke, lambda_thread_loop, write_test_policy

WRONG_KEY = "trk_a-wrong-key-that-is-still-a-SECRET"
SECRET_HEADER = "x-upstream-token"
SECRET_VALUE = "SECRET-header-value-7f3a"


def test_lambda_output_never_carries_keys(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, demo_index: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    env = {
        "TOOLREC_INDEX_LOCATION": str(demo_index),
        "TOOLREC_INDEX_CACHE_DIR": str(tmp_path / "cache"),
        "TOOLREC_POLICY_BACKEND": "file",
        "TOOLREC_POLICY_FILE": str(write_test_policy(tmp_path / "policy.json")),
        "TOOLREC_LOG_LEVEL": "DEBUG",
        "POWERTOOLS_LOG_LEVEL": "DEBUG",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delitem(sys.modules, "handler.lambda_entry", raising=False)
    responses: list[str] = []
    with lambda_thread_loop():
        entry = importlib.import_module("handler.lambda_entry")
        extra = {SECRET_HEADER: SECRET_VALUE}
        events = [
            apigw_event("POST", "/v1/tools/select", {"tasks": ["send a message"], "user_id": "u"}, headers=extra),
            apigw_event("POST", "/v1/tools/search", {"query": "slack", "user_id": "u"}, headers=extra),
            apigw_event("GET", "/v1/apps", query={"user_id": "demo-user"}, headers=extra),
            apigw_event(
                "POST",
                "/v1/tools/execute",
                {
                    "tool_name": "Slack.SendMessage",
                    "user_id": "u",
                    "input": {"channel_name": "ops", "text": SECRET_VALUE},
                },
            ),
            apigw_event("POST", "/v1/tools/select", {"tasks": [""], "user_id": "u"}),
            apigw_event("POST", "/v1/tools/select", {"tasks": ["x"], "user_id": "u"}, key=WRONG_KEY),
            apigw_event(
                "POST", "/v1/tools/select", {"tasks": ["x"], "user_id": "u"}, key=None, query={"api_key": WRONG_KEY}
            ),
            apigw_event(
                "POST",
                "/mcp/default",
                {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={"x-toolrec-user": "u"},
            ),
        ]
        for event in events:
            status, headers, body = invoke(entry.handler, event)
            assert status < 500, body
            responses.append(f"{headers} {body}")
    output = capfd.readouterr()
    logged = output.out + output.err
    assert "cold start" in logged and "POST /v1/tools/select" in logged, "the capture is broken"
    for secret in (API_KEY, WRONG_KEY, hash_key(API_KEY), hash_key(WRONG_KEY), SECRET_VALUE):
        assert secret not in logged, secret
        assert not [r for r in responses if secret in r], secret
