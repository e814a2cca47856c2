"""Logs, metrics and traces at the Lambda boundary (AWS Lambda Powertools).

The whole API the service uses:

- ``configure(level)`` once at cold start (level from ``Settings.log_level``);
- ``instrument(handler)`` around the Mangum handler: Lambda context in every log line, a fresh set of keys per
  invocation, the cold-start metric, the X-Ray segment when tracing is on, the metrics flushed at the end;
- ``bind(query_id=..., gateway_id=..., route=...)`` inside a request: those keys join every later log line;
- ``record_select(latency_ms, tasks, empty_reasons)`` after a select: one log line (its number of tasks, latency
  and empty reasons; the task text only when ``configure(log_tasks=True)``), the SelectLatency and NoMatch metrics;
- ``logger`` for the service's own log lines.

Logs are JSON, one object a line. Only the keys ``bind`` accepts are added to every line, so an API key, a header
or a tool's input cannot reach the logs through it; a filter also blanks such names if a caller passes them as
``extra``. Tracing follows ``POWERTOOLS_TRACE_DISABLED`` (the template's ``EnableTracing`` sets it); Powertools
also turns it off outside Lambda. Metrics are CloudWatch embedded-metric JSON on stdout, emitted only inside an
instrumented (Lambda) invocation, so ``toolrec serve`` prints none.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit, single_metric

SERVICE = "toolrec"
NAMESPACE = "toolrec"
# What may be attached to every log line of a request. Identifiers only: never a key, a header or a tool input.
BOUND_KEYS = frozenset({"query_id", "gateway_id", "route"})
# Names a careless `extra=` could carry; their values are replaced before formatting.
SENSITIVE_NAMES = frozenset(
    {"authorization", "api_key", "apikey", "key", "token", "secret", "password", "input", "inputs", "arguments"}
)
REDACTED = "[redacted]"

Handler = TypeVar("Handler", bound=Callable[..., Any])


class _CurrentStdout:
    """Writes to whatever ``sys.stdout`` is at the time (Lambda ships stdout to CloudWatch; tests capture it)."""

    def write(self, text: str) -> int:
        return sys.stdout.write(text)

    def flush(self) -> None:
        sys.stdout.flush()


class _RedactSensitive(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        for name in SENSITIVE_NAMES.intersection(record.__dict__):
            setattr(record, name, REDACTED)
        return True


logger = Logger(service=SERVICE, stream=_CurrentStdout())  # type: ignore[arg-type]
logger.addFilter(_RedactSensitive())
metrics = Metrics(service=SERVICE)
if not metrics.namespace:  # POWERTOOLS_METRICS_NAMESPACE (set by the template) wins when present
    metrics.namespace = NAMESPACE
_state = {"cold_start": True, "emit_metrics": False, "log_tasks": False}


def configure(level: str = "INFO", log_tasks: bool = False) -> None:
    """Set the log level (``TOOLREC_LOG_LEVEL``) and whether a select's log line holds its tasks' text
    (``TOOLREC_LOG_TASKS``); call once at cold start.

    The service's modules log through ``logging.getLogger(__name__)`` under ``handler``: that tree gets the
    Powertools handler too, so every line is the same JSON object with the Lambda context and bound keys.
    """
    logger.setLevel(level)
    _state["log_tasks"] = log_tasks
    tree = logging.getLogger("handler")
    tree.handlers[:] = [logger.registered_handler]
    tree.setLevel(level)
    tree.propagate = False


def bind(**keys: str | None) -> None:
    """Attach request identifiers to every later log line of this invocation (None values are skipped)."""
    unknown = set(keys) - BOUND_KEYS
    if unknown:
        raise ValueError(f"bind accepts only {sorted(BOUND_KEYS)}, not {sorted(unknown)}")
    logger.append_keys(**{name: value for name, value in keys.items() if value is not None})


def unbind_request() -> None:
    """Forget the query and gateway a previous request bound. In Lambda ``instrument`` starts every invocation
    afresh; under ``toolrec serve`` the app calls this at the start of each request instead."""
    logger.remove_keys(["query_id", "gateway_id"])


def record_select(latency_ms: float, tasks: Sequence[str], empty_reasons: Sequence[str | None]) -> None:
    """One select request, as an execution is (``tool executed``): a log line with its query id (bound), number of
    tasks, latency and each task's empty reason (null: it got tools), and its metrics. The tasks' text is what end
    users typed: it is logged only where the operator turned that on (``configure(log_tasks=True)``)."""
    fields: dict[str, Any] = {"tasks": len(tasks), "latency_ms": round(latency_ms, 3), "empty_reasons": empty_reasons}
    if _state["log_tasks"]:
        fields["task_text"] = list(tasks)
    logger.info("tools selected", extra=fields)
    if not _state["emit_metrics"]:
        return
    no_match = sum(1 for reason in empty_reasons if reason in ("no_match", "below_min_score"))
    metrics.add_metric(name="SelectLatency", unit=MetricUnit.Milliseconds, value=latency_ms)
    metrics.add_metric(name="SelectTasks", unit=MetricUnit.Count, value=len(tasks))
    metrics.add_metric(name="NoMatch", unit=MetricUnit.Count, value=no_match)


def instrument(handler: Handler) -> Handler:
    """Wrap a Lambda handler ``(event, context)`` with the logger context, cold-start metric, tracing and flush."""

    def call(event: dict[str, Any], context: Any) -> Any:  # a plain function: Mangum instances have no __name__
        return handler(event, context)

    traced = _traced(call)

    def invocation(event: dict[str, Any], context: Any) -> Any:
        started = time.perf_counter()
        bind(route=_route(event))
        response = traced(event, context)
        status = response.get("statusCode") if isinstance(response, dict) else None
        logger.info("request done", extra={"status": status, "latency_ms": _elapsed_ms(started)})
        return response

    # clear_state: keys bound by the previous invocation of this warm instance never leak into this one.
    logged = logger.inject_lambda_context(invocation, clear_state=True, log_event=False)

    def wrapped(event: dict[str, Any], context: Any) -> Any:
        _state["emit_metrics"] = True
        if _state["cold_start"]:
            _state["cold_start"] = False
            with single_metric(name="ColdStart", unit=MetricUnit.Count, value=1, namespace=metrics.namespace) as m:
                m.add_dimension(name="service", value=SERVICE)
        try:
            return logged(event, context)
        finally:
            # Powertools warns on an empty flush; most requests (healthz, apps) add no metric.
            if metrics.metric_set:
                metrics.flush_metrics()

    return wrapped  # type: ignore[return-value]


def tracing_enabled(environ: Mapping[str, str] = os.environ) -> bool:
    """Powertools' own rule: on inside a deployed Lambda unless ``POWERTOOLS_TRACE_DISABLED`` is true."""
    disabled = environ.get("POWERTOOLS_TRACE_DISABLED", "").strip().lower() in {"1", "y", "yes", "t", "true", "on"}
    in_lambda = "AWS_LAMBDA_FUNCTION_NAME" in environ and "AWS_SAM_LOCAL" not in environ
    return in_lambda and not disabled


def _traced(call: Callable[..., Any]) -> Callable[..., Any]:
    """The X-Ray segment around each invocation, when tracing is on. The tracer is made only then: building one
    imports the X-Ray SDK even when it is disabled, ~0.3 s of every cold start (measured with -X importtime)."""
    if not tracing_enabled():
        return call
    from aws_lambda_powertools import Tracer

    traced: Callable[..., Any] = Tracer(service=SERVICE).capture_lambda_handler(call, capture_response=False)
    return traced


def _route(event: Any) -> str | None:
    """The API Gateway route key (``POST /v1/tools/select``); for a catch-all ``$default`` route, method and path."""
    if not isinstance(event, dict):
        return None
    route = event.get("routeKey")
    if route and route != "$default":
        return str(route)
    http = event.get("requestContext", {}).get("http", {})
    return f"{http.get('method')} {event.get('rawPath')}" if http else None


def _elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)
