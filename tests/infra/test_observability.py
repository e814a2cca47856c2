"""handler/observability.py: JSON logs with request ids, EMF metrics, cold start once, nothing secret logged."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from build_index.bench.events import load_event
from handler import observability

SECRET_KEY = "tr_live_2f9c0b7e1d"
TOOL_INPUT = "the quarterly numbers are confidential"


@dataclass
class LambdaContext:
    function_name: str = "toolrec-acme-prod"
    memory_limit_in_mb: int = 1769
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:toolrec-acme-prod"
    aws_request_id: str = "c0ffee00-0000-4000-8000-000000000001"


def _event(route: str) -> dict[str, Any]:
    method, path = route.split(" ")
    body = json.dumps({"tool_name": "Slack.SendMessage", "input": {"text": TOOL_INPUT}})
    return load_event(method, path, route_key=route, headers={"authorization": f"Bearer {SECRET_KEY}"}, body=body)


def _select_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    observability.bind(query_id="q-123", gateway_id="support")
    observability.record_select(4.5, ["post to #ops", "rent a car"], [None, "no_match"])
    observability.logger.info("selected", extra={"authorization": event["headers"]["authorization"]})
    return {"statusCode": 200, "body": "{}"}


def _lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines() if line.strip()]


@pytest.fixture
def fresh_instance(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(observability._state, "cold_start", True)
    monkeypatch.setitem(observability._state, "emit_metrics", False)


@pytest.mark.usefixtures("fresh_instance")
def test_logs_are_json_with_request_ids_and_lambda_context(capsys: pytest.CaptureFixture[str]) -> None:
    handler = observability.instrument(_select_handler)
    assert handler(_event("POST /v1/tools/select"), LambdaContext())["statusCode"] == 200
    logs = [line for line in _lines(capsys.readouterr().out) if "message" in line]
    assert [line["message"] for line in logs] == ["tools selected", "selected", "request done"]
    assert (logs[0]["tasks"], logs[0]["latency_ms"], logs[0]["empty_reasons"]) == (2, 4.5, [None, "no_match"])
    assert "task_text" not in logs[0] and "rent a car" not in json.dumps(logs)  # end users' text: not by default
    for line in logs:
        assert line["query_id"] == "q-123"
        assert line["gateway_id"] == "support"
        assert line["route"] == "POST /v1/tools/select"
        assert line["function_request_id"] == LambdaContext.aws_request_id
    assert logs[-1]["status"] == 200


@pytest.mark.usefixtures("fresh_instance")
def test_metrics_select_latency_no_match_and_cold_start_once(capsys: pytest.CaptureFixture[str]) -> None:
    handler = observability.instrument(_select_handler)
    handler(_event("POST /v1/tools/select"), LambdaContext())
    handler(_event("POST /v1/tools/select"), LambdaContext())
    blobs = [line for line in _lines(capsys.readouterr().out) if "_aws" in line]
    names = [m["Name"] for blob in blobs for m in blob["_aws"]["CloudWatchMetrics"][0]["Metrics"]]
    assert names.count("ColdStart") == 1
    assert names.count("SelectLatency") == 2
    selects = [blob for blob in blobs if "SelectLatency" in blob]
    assert selects[0]["SelectLatency"] == [4.5]
    assert selects[0]["NoMatch"] == [1.0]
    assert all(blob["_aws"]["CloudWatchMetrics"][0]["Namespace"] == "toolrec" for blob in blobs)


@pytest.mark.usefixtures("fresh_instance")
def test_requests_without_metrics_flush_nothing_and_keys_do_not_leak(capsys: pytest.CaptureFixture[str]) -> None:
    observability.instrument(_select_handler)(_event("POST /v1/tools/select"), LambdaContext())
    capsys.readouterr()
    health = observability.instrument(lambda event, context: {"statusCode": 200})
    health(_event("GET /healthz"), LambdaContext())
    lines = _lines(capsys.readouterr().out)
    assert not [line for line in lines if "_aws" in line]  # no empty metric blob, no Powertools warning
    (done,) = lines
    assert done["route"] == "GET /healthz"
    assert "query_id" not in done  # the previous invocation's keys were cleared


@pytest.mark.usefixtures("fresh_instance")
def test_no_secret_or_tool_input_in_logs(capsys: pytest.CaptureFixture[str]) -> None:
    observability.instrument(_select_handler)(_event("POST /v1/tools/execute"), LambdaContext())
    out = capsys.readouterr().out
    assert SECRET_KEY not in out
    assert TOOL_INPUT not in out
    assert observability.REDACTED in out


def test_bind_accepts_only_identifiers() -> None:
    with pytest.raises(ValueError, match="api_key"):
        observability.bind(api_key=SECRET_KEY)


@pytest.mark.usefixtures("fresh_instance")
def test_outside_lambda_select_metrics_are_not_buffered(capsys: pytest.CaptureFixture[str]) -> None:
    observability.record_select(1.0, ["post to #ops"], [None])
    assert not observability.metrics.metric_set
    (line,) = _lines(capsys.readouterr().out)  # the select's log line, and no metric blob
    assert line["message"] == "tools selected" and "_aws" not in line


@pytest.mark.parametrize(
    ("environ", "enabled"),
    [
        ({"AWS_LAMBDA_FUNCTION_NAME": "toolrec-acme", "POWERTOOLS_TRACE_DISABLED": "false"}, True),
        ({"AWS_LAMBDA_FUNCTION_NAME": "toolrec-acme"}, True),
        ({"AWS_LAMBDA_FUNCTION_NAME": "toolrec-acme", "POWERTOOLS_TRACE_DISABLED": "true"}, False),
        ({"AWS_LAMBDA_FUNCTION_NAME": "toolrec-acme", "POWERTOOLS_TRACE_DISABLED": "1"}, False),
        ({"AWS_LAMBDA_FUNCTION_NAME": "toolrec-acme", "AWS_SAM_LOCAL": "true"}, False),
        ({"POWERTOOLS_TRACE_DISABLED": "false"}, False),  # outside Lambda (toolrec serve, tests)
    ],
)
def test_tracing_follows_the_template_switch_inside_lambda_only(environ: dict[str, str], enabled: bool) -> None:
    assert observability.tracing_enabled(environ) is enabled
