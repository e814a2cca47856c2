"""The MCP meta-tools hold to the same rules as REST (issue 15, items 6 and 7).

``ListApps`` is GET /v1/apps restricted to the apps of the tools the gateway allows, counts included (PRODUCT.md
§3): compared with /v1/apps called by a key limited to that gateway, which REST restricts the same way.
``SelectTools`` and ``UseTool`` enforce the limits their schemas advertise, the limits REST enforces (one
definition): a violation is an ``isError`` result naming the field (MCP SEP-1303: input validation errors are tool
execution errors, so the model can correct its call), and nothing is looked up or run.

The demo catalog behind ``toolrec``'s real composition root, served on loopback, called by the official MCP client.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from handler.api.schemas import MAX_CONTEXT_CHARS, MAX_TASK_CHARS, MAX_TASKS
from handler.api.schemas import MAX_ID_CHARS as ID_MAX_CHARS
from handler.composition import build_app
from handler.policy.file_store import write_document
from handler.policy.keys import hash_key
from handler.policy.model import ApiKeyRecord, Gateway, PolicyDocument
from handler.ranking.query import Embedder
from tests.support.aio import run_async
from tests.support.mcp_client import error_of, mcp_client, structured
from tests.support.servers import serve
from tests.support.serving import API_KEY, SCOPED_KEY, file_settings, policy_for_tests

USER = "demo-user"
NOTHING_KEY = "trk_test-key-limited-to-nothing"
SUPPORT, NOTHING = "support", "nothing"  # support: Zendesk.* and Slack.SendMessage (tests/support/serving.py)
TASK = "send a message to the team on Slack"


@pytest.fixture(scope="module")
def base(demo_index: Path, embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("meta-tools")
    document = policy_for_tests()
    document = PolicyDocument.model_validate(
        {
            **document.model_dump(mode="json"),
            "gateways": [
                *[g.model_dump(mode="json") for g in document.gateways],
                Gateway(gateway_id=NOTHING, allowed=(), recommendation="on").model_dump(mode="json"),
            ],
        }
    )
    document.api_keys.append(ApiKeyRecord(key_id="nothing", key_hash=hash_key(NOTHING_KEY), gateway_id=NOTHING))
    write_document(root / "policy.json", document)
    settings = file_settings(str(demo_index), root / "policy.json", root / "cache")
    with serve(build_app(settings, embedder=embedder)) as url:
        yield url


def call(base: str, gateway: str, tool: str, arguments: dict[str, Any], timeout: float = 30) -> Any:
    async def main() -> Any:
        async with mcp_client(f"{base}/mcp/{gateway}", API_KEY, USER, timeout=timeout) as client:
            return await client.call_tool(tool, arguments)

    return run_async(main)


def rest_apps(base: str, key: str) -> dict[str, Any]:
    response = httpx.get(
        f"{base}/v1/apps", params={"user_id": USER, "limit": 200}, headers={"Authorization": f"Bearer {key}"}
    )
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


# Item 6: ListApps is /v1/apps restricted to the gateway.


@pytest.mark.parametrize(("gateway", "key"), [(SUPPORT, SCOPED_KEY), (NOTHING, NOTHING_KEY), ("default", API_KEY)])
def test_list_apps_is_the_rest_apps_of_the_gateways_tools(base: str, gateway: str, key: str) -> None:
    result = call(base, gateway, "Toolrec_ListApps", {"limit": 200})
    assert not result.is_error, result.content
    listed = structured(result)
    expected = rest_apps(base, key)
    assert listed["total"] == expected["total"]
    assert {a["app_id"]: a["tool_count"] for a in listed["apps"]} == {
        a["app_id"]: a["tool_count"] for a in expected["apps"]
    }
    if gateway == NOTHING:
        assert listed["apps"] == [] and listed["total"] == 0
    if gateway == SUPPORT:  # Zendesk's tools and the one Slack tool: Slack counts 1, not all of Slack's
        counts = {a["app_id"]: a["tool_count"] for a in listed["apps"]}
        assert set(counts) == {"Slack", "Zendesk"} and counts["Slack"] == 1, counts


# Item 7: the advertised limits hold over MCP, as over REST.


def _refused(result: Any, field: str) -> dict[str, Any]:
    error = error_of(result)
    assert error["name"] == "validation_error", error
    assert field in {e["field"] for e in error.get("field_errors", [])}, error
    return error


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"tasks": ["x" * (MAX_TASK_CHARS + 1)]}, "tasks.0"),
        ({"tasks": ["send a slack message " * 3000]}, "tasks.0"),  # ~60 KB, as the probe sent
        ({"tasks": [TASK], "context": "c" * (MAX_CONTEXT_CHARS + 1)}, "context"),
        ({"tasks": [TASK] * (MAX_TASKS + 1)}, "tasks"),
        ({"tasks": []}, "tasks"),
        ({"tasks": ["   "]}, "tasks.0"),
        ({"tasks": [TASK], "top_k": 3}, "top_k"),  # not an argument SelectTools takes
        ({}, "tasks"),
    ],
)
def test_select_tools_refuses_what_its_schema_does_not_allow(base: str, arguments: dict[str, Any], field: str) -> None:
    _refused(call(base, "default", "Toolrec_SelectTools", arguments), field)


@pytest.mark.parametrize(
    ("arguments", "field"),
    [({"tasks": ["send \ud800 a message"]}, "tasks.0"), ({"tasks": [TASK], "context": "on \udfff slack"}, "context")],
)
def test_select_tools_refuses_a_lone_surrogate_as_invalid_text(
    base: str, arguments: dict[str, Any], field: str
) -> None:
    # JSON escapes carry it; the SDK client cannot encode one, so the request is sent as raw JSON-RPC.
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "Toolrec_SelectTools", "arguments": arguments},
    }
    response = httpx.post(
        f"{base}/mcp/default",
        content=json.dumps(message).encode("ascii"),
        headers={
            "Authorization": f"Bearer {API_KEY}",
            "X-Toolrec-User": USER,
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
        },
    )
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["isError"] is True
    problems = result["structuredContent"]["error"]["field_errors"]
    assert field in {p["field"] for p in problems}, problems


def test_rest_refuses_the_same_task_and_context_lengths(base: str) -> None:
    headers = {"Authorization": f"Bearer {API_KEY}"}
    for body in (
        {"tasks": ["x" * (MAX_TASK_CHARS + 1)], "user_id": USER},
        {"tasks": [TASK], "context": "c" * (MAX_CONTEXT_CHARS + 1), "user_id": USER},
    ):
        response = httpx.post(f"{base}/v1/tools/select", json=body, headers=headers)
        assert response.status_code == 400, response.text


def test_select_tools_at_the_limits_answers(base: str) -> None:
    task = (TASK + " ") * (MAX_TASK_CHARS // (len(TASK) + 1))
    arguments = {"tasks": [task[:MAX_TASK_CHARS]] * MAX_TASKS, "context": "c" * MAX_CONTEXT_CHARS}
    # 16 tasks of 1,000 characters embed up to 80 texts: seconds on a busy 2-core machine, so the answer, not its
    # latency, is what this checks (Performance measures latency).
    result = call(base, "default", "Toolrec_SelectTools", arguments, timeout=180)
    assert not result.is_error, result.content
    assert len(structured(result)["results"]) == MAX_TASKS


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"tool_name": "Slack." + "S" * ID_MAX_CHARS, "inputs": {}}, "tool_name"),
        ({"tool_name": "Slack.SendMessage", "inputs": {}, "query_id": "q" * (ID_MAX_CHARS + 1)}, "query_id"),
        ({"tool_name": "", "inputs": {}}, "tool_name"),
        ({"tool_name": "Slack.SendMessage", "inputs": []}, "inputs"),
        ({"tool_name": "Slack.SendMessage", "inputs": {}, "extra": 1}, "extra"),
    ],
)
def test_use_tool_refuses_what_rest_execute_refuses(base: str, arguments: dict[str, Any], field: str) -> None:
    _refused(call(base, "default", "Toolrec_UseTool", arguments), field)
    rest = {"tool_name": arguments["tool_name"], "input": arguments["inputs"], "user_id": USER}
    if "query_id" in arguments:
        rest["query_id"] = arguments["query_id"]
    if "extra" in arguments:
        rest["extra"] = arguments["extra"]
    headers = {"Authorization": f"Bearer {API_KEY}"}
    assert httpx.post(f"{base}/v1/tools/execute", json=rest, headers=headers).status_code == 400
