"""The MCP gateway through the Lambda handler: the official SDK client's HTTP requests become API Gateway HTTP API
(v2) events for the Mangum handler, on one warm container, invocation after invocation."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from mangum import Mangum

from build_index.bench.events import load_event
from handler.ranking.query import Embedder
from tests.support.aio import run_async
from tests.support.apigw import LambdaContainer, MangumTransport
from tests.support.gateway_app import (
    GATEWAY_OFF,
    GATEWAY_ON,
    UNCONNECTED_USER,
    USER,
    GatewayApp,
    Prepared,
    gateway_app,
    policy_document,
)
from tests.support.mcp_client import (
    SUM_TASK,
    direct_flow,
    error_of,
    mcp_client,
    recommendation_flow,
    structured,
    use,
)

URL = "https://api.example.test/mcp"
BROKEN_TASK = "this lookup breaks the embedder"


class BreaksOnOneTask:
    """The real embedder, except that one task's lookup fails, as an onnxruntime error would."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def fingerprint(self) -> str:
        return self.inner.fingerprint

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    def embed(self, text: str) -> npt.NDArray[np.float32]:
        if text == BROKEN_TASK:
            raise RuntimeError("onnxruntime failed")
        return self.inner.embed(text)


@pytest.fixture(scope="module")
def gateway(prepared: Prepared, embedder: Embedder) -> GatewayApp:
    """The shared gateway app (tests/support/gateway_fixtures.py), except that one task's embedding fails."""
    return gateway_app(prepared, BreaksOnOneTask(embedder))


@pytest.fixture(scope="module")
def container(gateway: GatewayApp) -> Iterator[LambdaContainer]:
    warm = LambdaContainer(lambda: Mangum(gateway.app, lifespan="off"))
    yield warm
    warm.close()


def journey(container: LambdaContainer, gateway: GatewayApp, gateway_id: str, user: str, flow: Any) -> Any:
    async def main() -> Any:
        async with mcp_client(f"{URL}/{gateway_id}", gateway.api_key, user, MangumTransport(container)) as client:
            return await flow(client)

    return run_async(main)


def test_select_then_use_through_the_handler(container: LambdaContainer, gateway: GatewayApp) -> None:
    before = container.invocations
    query_id = journey(container, gateway, GATEWAY_ON, USER, recommendation_flow)
    # discover probe, initialize, initialized, tools/list, SelectTools, UseTool x2 (and the client's re-list for
    # the dotted name): each message its own invocation of the same warm handler.
    assert container.invocations - before >= 7
    record = gateway.policy.get_query(query_id)
    assert record is not None
    assert [e.tool_name for e in record.executions] == ["Weather.GetForecast", "Calculator.AddNumbers"]


def test_warm_container_serves_session_after_session(container: LambdaContainer, gateway: GatewayApp) -> None:
    for _ in range(3):
        journey(container, gateway, GATEWAY_OFF, USER, direct_flow)
        journey(container, gateway, GATEWAY_ON, USER, recommendation_flow)


def test_one_failing_task_does_not_fail_the_others(container: LambdaContainer, gateway: GatewayApp) -> None:
    async def flow(client: Any) -> dict[str, Any]:
        return structured(await client.call_tool("Toolrec_SelectTools", {"tasks": [BROKEN_TASK, SUM_TASK]}))

    body = journey(container, gateway, GATEWAY_ON, USER, flow)
    broken, working = body["results"]
    assert broken == {"task": BROKEN_TASK, "tools": [], "empty_reason": "unavailable"}
    assert working["tools"][0]["tool_name"] == "Calculator.AddNumbers" and "empty_reason" not in working


def test_errors_through_the_handler(container: LambdaContainer, gateway: GatewayApp) -> None:
    async def flow(client: Any) -> list[str]:
        return [
            error_of(await use(client, "Slack.SendMessage", {"channel_name": "ops", "text": "x"}))["name"],
            error_of(await use(client, "Archive.FetchRecord", {"a": 1, "b": 2}))["name"],
            error_of(await use(client, "Reports.RunQuarterlyReport", {}))["name"],
        ]

    names = journey(container, gateway, GATEWAY_ON, UNCONNECTED_USER, flow)
    assert names == ["authorization_required", "executor_unavailable", "executor_timeout"]


def _post(container: LambdaContainer, gateway: GatewayApp, body: str, **headers: str) -> dict[str, Any]:
    base = {"authorization": f"Bearer {gateway.api_key}", "x-toolrec-user": USER, "content-type": "application/json"}
    event = load_event("POST", f"/mcp/{GATEWAY_ON}", headers={**base, **headers}, body=body)
    return container.invoke_in_thread(event)


def test_raw_exchanges(container: LambdaContainer, gateway: GatewayApp) -> None:
    notification = _post(container, gateway, '{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    assert notification["statusCode"] == 202
    not_json = _post(container, gateway, "{not json")
    assert not_json["statusCode"] == 400 and '"code":-32700' in not_json["body"].replace(" ", "")
    batch = _post(container, gateway, '[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]')
    assert batch["statusCode"] == 400
    discover = _post(container, gateway, '{"jsonrpc": "2.0", "id": 2, "method": "server/discover"}')
    assert '"code":-32601' in discover["body"].replace(" ", "")
    bad_params = _post(container, gateway, '{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {}}')
    assert '"code":-32602' in bad_params["body"].replace(" ", "")
    old_version = _post(
        container, gateway, '{"jsonrpc": "2.0", "id": 4, "method": "tools/list"}', **{"mcp-protocol-version": "1999"}
    )
    assert old_version["statusCode"] == 400 and '"code":-32022' in old_version["body"].replace(" ", "")


def test_a_refused_request_through_the_handler_is_a_json_rpc_error(
    container: LambdaContainer, gateway: GatewayApp
) -> None:
    """Refused before its exchange, as `toolrec serve` refuses it: REST's status, a JSON-RPC error the SDK shows."""
    ping = '{"jsonrpc": "2.0", "id": "p-1", "method": "ping"}'
    headers = {"authorization": f"Bearer {gateway.api_key}", "x-toolrec-user": USER}
    event = load_event("POST", "/mcp/nope", headers=headers, body=ping)
    unknown = container.invoke_in_thread(event)
    assert unknown["statusCode"] == 404
    body = json.loads(unknown["body"])
    assert (body["id"], body["error"]["code"]) == ("p-1", -32600)
    assert body["error"]["message"].startswith("unknown gateway 'nope'")
    no_key = container.invoke_in_thread(
        load_event("POST", f"/mcp/{GATEWAY_ON}", headers={"x-toolrec-user": USER}, body=ping)
    )
    assert no_key["statusCode"] == 401 and json.loads(no_key["body"])["error"]["data"]["name"] == "unauthorized"


def test_before_any_index_is_published_the_gateway_still_answers(
    gateway: GatewayApp, embedder: Embedder, tmp_path: Path
) -> None:
    # A fresh deployment: the function starts before the first build reaches the index location.
    no_index = Prepared(tmp_path / "no-index", tmp_path / "policy.json", gateway.api_key, tmp_path)
    (tmp_path / "policy.json").write_text(json.dumps(policy_document(gateway.api_key)))
    cold = gateway_app(no_index, embedder)
    container = LambdaContainer(lambda: Mangum(cold.app, lifespan="off"))

    async def flow(client: Any) -> tuple[list[str], dict[str, Any], dict[str, Any]]:
        listed = [t.name for t in (await client.list_tools()).tools]
        selected = structured(await client.call_tool("Toolrec_SelectTools", {"tasks": [SUM_TASK, "weather"]}))
        used = error_of(await use(client, "Calculator.AddNumbers", {"a": 1, "b": 2}))
        return listed, selected, used

    try:
        listed, selected, used = journey(container, cold, GATEWAY_ON, USER, flow)
    finally:
        container.close()
    assert listed == ["Toolrec_SelectTools", "Toolrec_UseTool", "Toolrec_ListApps"]
    assert selected["query_id"] is None
    assert [r["empty_reason"] for r in selected["results"]] == ["unavailable", "unavailable"]
    assert used["name"] == "service_unavailable"
