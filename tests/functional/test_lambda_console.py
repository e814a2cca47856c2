"""The console's page and its usage view through the Lambda handler (PRODUCT.md §8): served by the same app as the
API, under a strict Content-Security-Policy, and GET /v1/usage scoped to what the key may see. The page itself runs
in a real browser in tests/browser/test_console.py."""

from __future__ import annotations

import json
import re
from typing import Any

from handler.api.routes.console import CONTENT_SECURITY_POLICY
from tests.functional.conftest import Function
from tests.functional.test_lambda_errors_apps import assert_error
from tests.support.serving import SCOPED_KEY, LambdaContext, apigw_event

SLACK_INPUT = {"channel_name": "ops", "text": "deploy finished"}


def raw(function: Function, method: str, path: str, **options: Any) -> tuple[int, dict[str, str], str]:
    """Status, lowercased headers and the body as text (the page is not JSON)."""
    response = function.handler(apigw_event(method, path, key=None, **options), LambdaContext())
    headers = {name.lower(): value for name, value in response.get("headers", {}).items()}
    return response["statusCode"], headers, response.get("body") or ""


def test_the_console_is_served_at_the_root_under_a_strict_policy(function: Function) -> None:
    status, headers, page = raw(function, "GET", "/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    assert headers["content-security-policy"] == CONTENT_SECURITY_POLICY
    policy = dict(part.strip().split(" ", 1) for part in CONTENT_SECURITY_POLICY.split(";"))
    assert policy["default-src"] == policy["script-src"] == "'self'"  # no inline script, no eval, no elsewhere
    assert headers["x-content-type-options"] == "nosniff"
    scripts = re.findall(r"<script[^>]*>", page)
    assert scripts == ['<script src="console/console.js" defer>']  # one script, a file of this origin
    assert not re.search(r"\son\w+\s*=", page)  # no inline event handlers
    assert not re.search(r"(src|href)=\"(https?:)?//", page)  # nothing fetched from outside


def test_the_page_loads_its_two_files_and_nothing_else_of_the_folder(function: Function) -> None:
    for name, media_type in [("console.js", "text/javascript"), ("console.css", "text/css")]:
        status, headers, body = raw(function, "GET", f"/console/{name}")
        assert status == 200 and headers["content-type"].startswith(media_type)
        assert body
    status, _, body = raw(function, "GET", "/console/index.html")
    assert status == 404 and json.loads(body)["name"] == "not_found"
    script = raw(function, "GET", "/console/console.js")[2]
    # Catalog text is set as text: the script never parses strings as markup or code.
    for forbidden in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function"):
        assert forbidden not in script, forbidden


def test_an_unknown_path_is_a_json_404_that_names_the_docs(function: Function) -> None:
    error = assert_error(function.call("GET", "/nope"), 404, "not_found")
    assert error["message"] == "no route GET /nope; the API is described at /docs"


def _select(function: Function, tasks: list[str], **options: Any) -> str:
    status, _, body = function.call(
        "POST", "/v1/tools/select", {"tasks": tasks, "user_id": "demo-user", **options.pop("body", {})}, **options
    )
    assert status == 200, body
    return str(body["query_id"])


def test_usage_counts_recommendations_runs_and_the_tools_run_per_gateway(function: Function) -> None:
    query_id = _select(function, ["send a Slack message to the ops channel", "open a GitHub issue"],
                       body={"gateway_id": "default"})  # fmt: skip
    _select(function, ["reply to the customer's Zendesk ticket"], key=SCOPED_KEY)  # the key's gateway: support
    status, _, run = function.call(
        "POST",
        "/v1/tools/execute",
        {"tool_name": "Slack.SendMessage", "input": SLACK_INPUT, "user_id": "demo-user", "query_id": query_id},
    )
    assert status == 200 and run["error"]["name"] == "executor_unavailable"  # the demo's tools have no executor

    status, _, every = function.call("GET", "/v1/usage", query={"days": "3"})
    assert status == 200, every
    assert [len(every["days"]), every["recommendations"], every["tasks"], every["executions"]] == [3, 2, 3, 1]
    assert (every["recommendations_followed"], every["follow_rate"]) == (1, 0.5)
    assert every["days"][-1] == {"date": every["days"][-1]["date"], "recommendations": 2, "executions": 1}
    assert every["top_tools"] == [{"tool_name": "Slack.SendMessage", "runs": 1, "succeeded": 0}]
    assert every["gateway_id"] is None and every["truncated"] is False

    status, _, default = function.call("GET", "/v1/usage", query={"gateway_id": "default"})
    assert (default["recommendations"], default["executions"], len(default["days"])) == (1, 1, 14)


def test_a_key_limited_to_a_gateway_sees_only_that_gateways_use(function: Function) -> None:
    _select(function, ["send a Slack message to the ops channel"], body={"gateway_id": "default"})
    support = _select(function, ["reply to the customer's Zendesk ticket"], key=SCOPED_KEY)
    # Another key links two runs to the support gateway's select: one of a tool the gateway allows, one it does not.
    for tool, inputs in [("Slack.SendMessage", SLACK_INPUT), ("Weather.GetForecast", {"city": "Lima"})]:
        body = {"tool_name": tool, "input": inputs, "user_id": "demo-user", "query_id": support}
        assert function.call("POST", "/v1/tools/execute", body)[0] == 200

    status, _, scoped = function.call("GET", "/v1/usage", key=SCOPED_KEY)
    assert status == 200, scoped
    assert (scoped["gateway_id"], scoped["recommendations"], scoped["executions"]) == ("support", 1, 1)
    assert scoped["top_tools"] == [{"tool_name": "Slack.SendMessage", "runs": 1, "succeeded": 0}]  # no Weather
    assert_error(function.call("GET", "/v1/usage", key=SCOPED_KEY, query={"gateway_id": "default"}), 403, "forbidden")
    assert function.call("GET", "/v1/usage")[2]["executions"] == 2  # the unscoped key sees both runs


def test_usage_refuses_a_bad_window_and_needs_a_key(function: Function) -> None:
    for days in ("0", "91", "many"):
        error = assert_error(function.call("GET", "/v1/usage", query={"days": days}), 400, "validation_error")
        assert [e["field"] for e in error["field_errors"]] == ["days"]
    assert_error(function.call("GET", "/v1/usage", key=None), 401, "unauthorized")
    assert_error(function.call("GET", "/v1/usage", query={"gateway_id": "nope"}), 404, "not_found")
