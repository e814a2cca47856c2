"""Inputs that were accepted when they should not have been (issue 15, item 11), through the real app over loopback
HTTP: the MCP user header held to the REST `user_id` rule and read as UTF-8, booleans refused where an integer is
meant, and an MCP message whose `id` is not a string or integer answered as an invalid request, not a silent 202.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import mcp_types as types
import pytest

from handler.api.schemas import MAX_ID_CHARS, SELECT_TOP_K_MAX
from handler.policy.file_store import FilePolicyStore
from handler.policy.model import AccessRule
from tests.reliability.conftest import assert_error_body
from tests.support.gateway_app import GATEWAY_OFF, GATEWAY_ON, USER, GatewayApp, Prepared
from tests.support.servers import serve

LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


@pytest.fixture(scope="module")
def client(gateway: GatewayApp) -> Iterator[httpx.Client]:
    # Over real HTTP: Starlette's TestClient re-encodes header values as UTF-8, so it cannot send a byte that is not.
    auth = {"Authorization": f"Bearer {gateway.api_key}"}
    with serve(gateway.app) as base, httpx.Client(base_url=base, headers=auth, timeout=30) as api:
        yield api


def mcp(client: httpx.Client, message: dict[str, Any], user: str | bytes, gateway: str = GATEWAY_ON) -> httpx.Response:
    return client.post(f"/mcp/{gateway}", json=message, headers={"X-Toolrec-User": user})


def listed(response: httpx.Response) -> set[str]:
    assert response.status_code == 200, response.text
    return {tool["name"] for tool in response.json()["result"]["tools"]}


def assert_invalid_request(response: httpx.Response, says: str) -> None:
    """Refused before the exchange the way a missing header is: HTTP 400 with a JSON-RPC Invalid Request, id null."""
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None, body
    assert body["error"]["code"] == types.INVALID_REQUEST and says in body["error"]["message"], body


@pytest.mark.parametrize("user", ["", "u" * (MAX_ID_CHARS + 1), "u" * 10_000])
def test_the_user_header_follows_the_rest_user_id_rule(client: httpx.Client, user: str) -> None:
    assert_invalid_request(mcp(client, LIST, user), "X-Toolrec-User")
    rest = client.post("/v1/tools/search", json={"query": "weather", "user_id": user})
    assert rest.status_code == 400  # the same value is refused by REST, by the same rule


def test_a_user_header_at_the_limit_is_served(client: httpx.Client) -> None:
    assert listed(mcp(client, LIST, "u" * MAX_ID_CHARS))


def test_the_user_header_is_read_as_utf8(client: httpx.Client, prepared: Prepared) -> None:
    """A deny rule for `zoë` applies when her name arrives as UTF-8 bytes (read as latin-1, it named `zoÃ«`)."""
    user = "zoë-ünïcödé"
    rule = AccessRule(rule_id="strict-input-utf8", subject=user, effect="deny", tools=("Admin.*",))
    before = listed(mcp(client, LIST, user.encode(), GATEWAY_OFF))
    assert "Admin_DeleteUser" in before
    policy = FilePolicyStore(prepared.policy_file)  # the file the app reads, uncached (policy_cache_seconds=0)
    policy.put_rule(rule)
    try:
        after = listed(mcp(client, LIST, user.encode(), GATEWAY_OFF))
    finally:
        policy.delete_rule(user, rule.rule_id)
    assert after == before - {"Admin_DeleteUser"}


def test_a_user_header_that_is_not_utf8_is_refused(client: httpx.Client) -> None:
    assert_invalid_request(mcp(client, LIST, b"caf\xe9"), "UTF-8")


@pytest.mark.parametrize("flag", [True, False])
@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/tools/select", {"tasks": ["get the weather"], "user_id": USER}),
        ("/v1/tools/search", {"query": "weather", "user_id": USER}),
    ],
)
def test_top_k_refuses_booleans(client: httpx.Client, path: str, body: dict[str, Any], flag: bool) -> None:
    response = client.post(path, json={**body, "top_k": flag})
    assert response.status_code == 400, response.text
    assert_error_body(400, response.json())
    assert {p["field"] for p in response.json()["field_errors"]} == {"top_k"}


def test_top_k_above_the_maximum_still_returns_the_maximum(client: httpx.Client) -> None:
    body = {"tasks": ["get the weather"], "user_id": USER, "top_k": SELECT_TOP_K_MAX + 1}
    response = client.post("/v1/tools/select", json=body)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("query", [{"limit": "true"}, {"offset": "false"}])
def test_apps_paging_refuses_booleans(client: httpx.Client, query: dict[str, str]) -> None:
    response = client.get("/v1/apps", params={"user_id": USER, **query})
    assert response.status_code == 400, response.text
    assert_error_body(400, response.json())


@pytest.mark.parametrize("arguments", [{"limit": True}, {"offset": False}, {"limit": 5, "offset": True}])
def test_mcp_list_apps_refuses_booleans(client: httpx.Client, arguments: dict[str, Any]) -> None:
    call = {"name": "Toolrec_ListApps", "arguments": arguments}
    response = mcp(client, {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}, USER)
    assert response.status_code == 200, response.text
    result = response.json()["result"]
    assert result["isError"] is True and result["structuredContent"]["error"]["name"] == "validation_error", result


@pytest.mark.parametrize("request_id", [None, {"x": 1}, [1], True, 1.5])
def test_a_request_whose_id_is_not_a_string_or_integer_is_an_invalid_request(
    client: httpx.Client, request_id: Any
) -> None:
    response = mcp(client, {**LIST, "id": request_id}, USER)
    assert_invalid_request(response, "id")


def test_a_notification_without_an_id_still_gets_202(client: httpx.Client) -> None:
    response = mcp(client, {"jsonrpc": "2.0", "method": "notifications/initialized"}, USER)
    assert response.status_code == 202 and not response.content
