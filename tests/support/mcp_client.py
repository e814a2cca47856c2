"""The official MCP SDK client pointed at a toolrec gateway, and the user journeys the MCP tests share.

The same journeys run over real HTTP (``toolrec serve``) and through the Lambda handler (API Gateway v2 events),
so both paths are held to one behaviour.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types import CallToolResult, TextContent

from handler.mcp.route import USER_HEADER

WEATHER_TASK, SUM_TASK = "get the weather forecast for Oslo", "add two numbers together"


@asynccontextmanager
async def mcp_client(
    url: str,
    api_key: str,
    user: str | None,
    transport: httpx2.AsyncBaseTransport | None = None,
    timeout: float = 30,
) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {api_key}"}
    if user is not None:
        headers[USER_HEADER] = user
    http = httpx2.AsyncClient(headers=headers, transport=transport, timeout=timeout)
    async with http, Client(streamable_http_client(url, http_client=http)) as client:
        yield client


def structured(result: CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None
    return result.structured_content


async def recommendation_flow(client: Client) -> str:
    """Initialize (done by the client), list the meta-tools, select for two tasks, run both tools. Returns query_id."""
    assert client.server_info is not None and client.server_info.name == "toolrec"
    assert client.instructions is not None and "Toolrec_SelectTools" in client.instructions
    listed = await client.list_tools()
    assert [t.name for t in listed.tools] == ["Toolrec_SelectTools", "Toolrec_UseTool", "Toolrec_ListApps"]
    select_tool, use_tool, _ = listed.tools
    # The descriptions teach the two steps: each names the other.
    assert "Toolrec_UseTool" in (select_tool.description or "") and "query_id" in (select_tool.description or "")
    assert "Toolrec_SelectTools" in (use_tool.description or "")

    selected = await client.call_tool("Toolrec_SelectTools", {"tasks": [WEATHER_TASK, SUM_TASK]})
    assert not selected.is_error, selected.content
    body = structured(selected)
    weather, total = body["results"]
    assert (weather["task"], total["task"]) == (WEATHER_TASK, SUM_TASK)
    assert 1 <= len(weather["tools"]) <= 5 and 1 <= len(total["tools"]) <= 5
    assert weather["tools"][0]["tool_name"] == "Weather.GetForecast"
    assert total["tools"][0]["tool_name"] == "Calculator.AddNumbers"
    assert weather["tools"][0]["input_schema"]["required"] == ["city"]
    query_id: str = body["query_id"]

    forecast = await client.call_tool(
        "Toolrec_UseTool",
        {"tool_name": "Weather.GetForecast", "inputs": {"city": "oslo", "days": 2}, "query_id": query_id},
    )
    assert not forecast.is_error, forecast.content
    assert structured(forecast)["output"] == {"city": "Oslo", "days": ["oslo-day-1", "oslo-day-2"]}

    # UseTool under its dotted name, a tool served by the upstream MCP server.
    added = await client.call_tool(
        "Toolrec.UseTool", {"tool_name": "Calculator.AddNumbers", "inputs": {"a": 20, "b": 22}, "query_id": query_id}
    )
    assert not added.is_error, added.content
    assert structured(added)["output"] == {"sum": 42}
    return query_id


async def direct_flow(client: Client) -> None:
    """Recommendation off: the gateway's tools themselves (only those the user may use), called directly."""
    listed = await client.list_tools()
    assert sorted(t.name for t in listed.tools) == ["Calculator_AddNumbers", "Weather_GetForecast"]
    forecast = await client.call_tool("Weather_GetForecast", {"city": "kyiv"})
    assert not forecast.is_error, forecast.content
    assert structured(forecast) == {"city": "Kyiv", "days": ["kyiv-day-1"]}
    added = await client.call_tool("Calculator_AddNumbers", {"a": -5, "b": 8})
    assert structured(added) == {"sum": 3}


async def use(client: Client, tool_name: str, inputs: dict[str, Any]) -> CallToolResult:
    return await client.call_tool("Toolrec_UseTool", {"tool_name": tool_name, "inputs": inputs})


def error_of(result: CallToolResult) -> dict[str, Any]:
    """The error of a failed call: isError set, the reason both structured and as text."""
    assert result.is_error is True
    error: dict[str, Any] = structured(result)["error"]
    text = result.content[0]
    assert isinstance(text, TextContent) and json.loads(text.text) == result.structured_content
    return error
