"""Executor faults do not spread: while tools time out (a worker slower than the catalog's timeout) or cannot be
reached (an upstream MCP server that is down), concurrent selects and healthy executions on the same server answer
normally and promptly. The single-call outcomes (executor_timeout, executor_unavailable, isError over MCP) are
covered in tests/integration (test_execute_rest, test_execute_executors, test_mcp_serve); this is the isolation.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.support.gateway_app import GATEWAY_ON, SHORT_TIMEOUT_S, USER, GatewayApp
from tests.support.servers import serve
from tests.support.workers import SLOW_SECONDS


@pytest.fixture(scope="module")
def base_url(gateway: GatewayApp) -> Iterator[str]:
    with serve(gateway.app) as base:
        yield base


async def timed(client: httpx.AsyncClient, path: str, body: dict[str, Any], **options: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    response = await client.post(path, json=body, **options)
    assert response.status_code == 200, response.text
    return time.perf_counter() - started, response.json()


async def mixed_load(base: str, key: str) -> dict[str, list[tuple[float, Any]]]:
    def execute(tool: str, inputs: dict[str, Any]) -> dict[str, Any]:
        return {"tool_name": tool, "input": inputs, "user_id": USER}

    mcp_use = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": "Toolrec_UseTool",
            "arguments": {"tool_name": "Archive.FetchRecord", "inputs": {"a": 1, "b": 2}},
        },
    }
    headers = {"Authorization": f"Bearer {key}"}
    async with httpx.AsyncClient(base_url=base, headers=headers, timeout=30) as client:
        groups = {
            "slow": [timed(client, "/v1/tools/execute", execute("Reports.RunQuarterlyReport", {})) for _ in range(6)],
            "down": [
                timed(client, "/v1/tools/execute", execute("Archive.FetchRecord", {"a": 1, "b": 2})) for _ in range(4)
            ],
            "mcp_down": [
                timed(client, f"/mcp/{GATEWAY_ON}", mcp_use, headers={"X-Toolrec-User": USER}) for _ in range(3)
            ],
            "select": [
                timed(client, "/v1/tools/select", {"tasks": ["get the weather forecast"], "user_id": USER})
                for _ in range(12)
            ],
            "healthy": [
                timed(client, "/v1/tools/execute", execute("Weather.GetForecast", {"city": "rome"})) for _ in range(6)
            ],
        }
        names = list(groups)
        results = await asyncio.gather(*(asyncio.gather(*groups[name]) for name in names))
    return dict(zip(names, [list(r) for r in results], strict=True))


def test_timeouts_and_dead_upstreams_do_not_hold_other_requests(base_url: str, gateway: GatewayApp) -> None:
    results = asyncio.run(mixed_load(base_url, gateway.api_key))
    for seconds, body in results["slow"]:
        assert body["success"] is False and body["error"]["name"] == "executor_timeout"
        assert body["duration_ms"] < (SHORT_TIMEOUT_S + 1) * 1000 and seconds < SLOW_SECONDS  # cut at the timeout
    for _, body in results["down"]:
        assert body["success"] is False and body["error"]["name"] == "executor_unavailable"
    for _, body in results["mcp_down"]:
        assert body["result"]["isError"] is True
        assert body["result"]["structuredContent"]["error"]["name"] == "executor_unavailable"
    for _, body in results["select"]:
        assert body["results"][0]["suggestions"][0]["tool_name"] == "Weather.GetForecast"
    for _, body in results["healthy"]:
        assert body["success"] is True and body["output"]["city"] == "Rome"
    # Nothing waited for the slow worker: every request finished before it would have answered.
    slowest = max(seconds for group in results.values() for seconds, _ in group)
    assert slowest < SLOW_SECONDS, slowest
