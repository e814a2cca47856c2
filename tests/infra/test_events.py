"""events/: each per-route event `sam local invoke` reads is the one template the tests and the bench fill in
(build_index/bench/events.py), so the events the suite sends cannot drift from those a deployment is tried with."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from build_index.bench.events import EVENTS_DIR, load_event

ROUTE_EVENTS = sorted(p for p in EVENTS_DIR.glob("*.json") if p.name != "env.json")


def test_there_are_route_events() -> None:
    assert ROUTE_EVENTS, EVENTS_DIR  # an empty glob would skip the check below, not fail it


@pytest.mark.parametrize("path", ROUTE_EVENTS, ids=lambda p: p.name)
def test_each_route_event_is_the_template_filled_in(path: Path) -> None:
    event = json.loads(path.read_text())
    headers = {name: value for name, value in event["headers"].items() if name != "content-length"}
    filled = load_event(
        event["requestContext"]["http"]["method"],
        event["rawPath"],
        headers=headers,
        body=event.get("body", ""),
        query=event["rawQueryString"],
        route_key=event["routeKey"],
    )
    assert filled == event


def test_query_and_base64_body_as_api_gateway_sends_them() -> None:
    event = load_event("GET", "/v1/apps", query="user_id=ana&tag=a&tag=b%20c", body=b"\x00{}", base64_body=True)
    assert event["queryStringParameters"] == {"user_id": "ana", "tag": "a,b c"}
    assert event["isBase64Encoded"] and base64.b64decode(event["body"]) == b"\x00{}"
    assert event["headers"]["content-length"] == "3"
    assert "pathParameters" not in event and event["routeKey"] == "$default"
