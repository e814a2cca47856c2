"""API Gateway HTTP API (payload format 2.0) events, filled in from the one template under the repository's events/.

The tests and the cold-start bench build every event here, so each has the shape of the per-route events that
`sam local invoke` reads (``events/*.json``, which ``tests/infra/test_events.py`` holds to the same template): AWS
Lambda Powertools' ``tests/events/*.json`` and ``load_event``. The template is read from the checkout, where the
tests and the bench run; the Lambda package leaves ``build_index/bench`` out.
"""

from __future__ import annotations

import base64
import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

EVENTS_DIR = Path(__file__).resolve().parents[2] / "events"
TEMPLATE = EVENTS_DIR / "templates" / "http_api_v2.json"
CATCH_ALL_ROUTE = "$default"


def load_event(
    method: str,
    path: str,
    *,
    headers: Mapping[str, str] | None = None,
    body: str | bytes = b"",
    query: str | Mapping[str, object] = "",
    route_key: str = CATCH_ALL_ROUTE,
    base64_body: bool = False,
) -> dict[str, Any]:
    """The template's event for one request.

    ``headers`` join the template's (what API Gateway adds and a plain client sends) and win over them, names
    lowercased as API Gateway delivers them; ``content-length`` is the body's unless given. ``query`` is a raw query
    string or a mapping. ``route_key`` is the API route that matched (``POST /mcp/{gateway_id}``: its parameters
    become ``pathParameters``), or the catch-all ``$default``.
    """
    payload = body.encode() if isinstance(body, str) else body
    raw_query = query if isinstance(query, str) else urlencode(query)
    event: dict[str, Any] = json.loads(_template())
    event["headers"] |= {"content-length": str(len(payload))} | {k.lower(): v for k, v in (headers or {}).items()}
    event.update(routeKey=route_key, rawPath=path, rawQueryString=raw_query, isBase64Encoded=base64_body)
    context = event["requestContext"]
    context["routeKey"] = route_key
    context["http"].update(method=method, path=path, userAgent=event["headers"].get("user-agent", ""))
    if raw_query:
        event["queryStringParameters"] = _query_parameters(raw_query)
    if parameters := _path_parameters(route_key, path):
        event["pathParameters"] = parameters
    if payload:
        event["body"] = base64.b64encode(payload).decode() if base64_body else payload.decode()
    return event


@functools.cache
def _template() -> str:
    # Read once, parsed per event: each caller gets its own dict, and the bench's timed queries no file read.
    return TEMPLATE.read_text()


def _query_parameters(raw_query: str) -> dict[str, str]:
    """Decoded, as API Gateway passes them: a repeated name's values joined by commas."""
    parameters: dict[str, str] = {}
    for name, value in parse_qsl(raw_query, keep_blank_values=True):
        parameters[name] = f"{parameters[name]},{value}" if name in parameters else value
    return parameters


def _path_parameters(route_key: str, path: str) -> dict[str, str]:
    route_path = route_key.partition(" ")[2]
    pairs = zip(route_path.split("/"), path.split("/"), strict=False)
    return {pattern[1:-1]: segment for pattern, segment in pairs if pattern.startswith("{") and pattern.endswith("}")}
