"""Pinned tools (PRODUCT.md §7): the official MCP SDK client against ``toolrec serve`` over real HTTP.

A gateway that recommends lists its pinned tools beside the meta-tools, the same list on every request, each
callable by its listed name; policy decides who sees and runs them; ``auto`` counts the pins as already listed; a
pin whose tool a new build dropped is left out of the listing and logged.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from build_index.ops.loopback import serve_subprocess
from handler.catalog.tool import Tool
from handler.mcp.meta_tools import PINNED_INSTRUCTION
from handler.policy.keys import generate_key, hash_key
from handler.ranking.query import Embedder
from tests.support.aio import run_async
from tests.support.gateway_app import UNCONNECTED_USER, USER, Backends, catalog
from tests.support.mcp_client import error_of, mcp_client, structured
from tests.support.serving import publish_tools

pytestmark = pytest.mark.slow

META = ["Toolrec_SelectTools", "Toolrec_UseTool", "Toolrec_ListApps"]
ON, AUTO_MANY, AUTO_FEW = "pinned-on", "pinned-auto-many", "pinned-auto-few"
# With the fillers the catalog holds 28 tools: `auto` recommends once 25 or more of them are not pinned.
FILLERS = [
    Tool(
        name=f"Notes.Entry{i:02d}",
        app="Notes",
        description=f"Keep note number {i} of the team notebook.",
        input_schema={"type": "object", "properties": {}},
    )
    for i in range(20)
]
ON_PINS = ["Text.Shout", "weather_getforecast", "Admin.DeleteUser"]  # any spelling names the tool, as in calls


def policy_document(key: str) -> dict[str, Any]:
    def gateway(gateway_id: str, recommendation: str, pinned: list[str]) -> dict[str, Any]:
        return {"gateway_id": gateway_id, "allowed": ["*"], "recommendation": recommendation, "pinned": pinned}

    return {
        "version": 1,
        "gateways": [
            gateway(ON, "on", ON_PINS),
            gateway(AUTO_MANY, "auto", ["Calculator.AddNumbers", "Text.Shout"]),  # 26 others: recommend
            gateway(AUTO_FEW, "auto", ["Text.Shout", "Notes.Entry00", "Notes.Entry01", "Notes.Entry02"]),  # 24
        ],
        "access_rules": [
            {"rule_id": "everyone", "subject": "*", "effect": "allow", "tools": ["*"]},
            {"rule_id": "no-admin", "subject": USER, "effect": "deny", "tools": ["Admin.*"]},
        ],
        "api_keys": [{"key_id": "test", "key_hash": hash_key(key)}],
    }


@dataclass(frozen=True)
class Server:
    url: str
    api_key: str
    index_dir: Path
    log: Path
    tools: list[Tool]


@contextmanager
def start_server(root: Path, tools: list[Tool], embedder: Embedder) -> Iterator[Server]:
    index_dir, policy_file, log = root / "index", root / "policy.json", root / "serve.log"
    publish_tools(tools, str(index_dir), embedder)
    key = generate_key()
    policy_file.write_text(json.dumps(policy_document(key)), encoding="utf-8")
    args = ["--root", str(root / "serve"), "--index", str(index_dir), "--policy", str(policy_file)]
    # Refresh on every request, so a test that publishes a new build sees it served next.
    with serve_subprocess(args, env={"TOOLREC_INDEX_REFRESH_SECONDS": "0"}, log_path=log) as (url, _):
        yield Server(url, key, index_dir, log, tools)


@pytest.fixture(scope="module")
def server(backends: Backends, embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tools = [*catalog(backends.worker_url, backends.upstream_url, backends.dead_url), *FILLERS]
    with start_server(tmp_path_factory.mktemp("pinned"), tools, embedder) as running:
        yield running


def journey(server: Server, gateway: str, user: str, steps: Any) -> Any:
    async def main() -> Any:
        async with mcp_client(f"{server.url}/mcp/{gateway}", server.api_key, user) as client:
            return await steps(client)

    return run_async(main)


async def listing(client: Any) -> list[dict[str, Any]]:
    return [t.model_dump(mode="json") for t in (await client.list_tools()).tools]


def names(tools: list[dict[str, Any]]) -> list[str]:
    return [t["name"] for t in tools]


def test_on_lists_the_pins_beside_the_meta_tools_the_same_every_time(server: Server) -> None:
    async def steps(client: Any) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str | None]:
        first = await listing(client)
        await client.call_tool("Toolrec_SelectTools", {"tasks": ["get the weather forecast for Oslo"]})
        return first, await listing(client), client.instructions

    first, again, instructions = journey(server, ON, UNCONNECTED_USER, steps)
    # Meta-tools first, then the pins in the gateway's order, under the catalog's names.
    assert names(first) == [*META, "Text_Shout", "Weather_GetForecast", "Admin_DeleteUser"]
    # The same list within a session and in a new one: a client's prompt cache survives.
    later, _, _ = journey(server, ON, UNCONNECTED_USER, steps)
    assert first == again == later
    assert instructions is not None and PINNED_INSTRUCTION in instructions
    shout = next(t for t in server.tools if t.name == "Text.Shout")
    pinned = first[3]
    assert (pinned["description"], pinned["input_schema"]) == (shout.description, shout.input_schema)


def test_pinned_tools_are_called_by_their_listed_name(server: Server, backends: Backends) -> None:
    async def steps(client: Any) -> tuple[Any, Any]:
        shouted = await client.call_tool("Text_Shout", {"text": "pinned"})
        forecast = await client.call_tool("Weather.GetForecast", {"city": "oslo"})  # the dotted name works too
        return shouted, forecast

    before = len(backends.worker_calls)
    shouted, forecast = journey(server, ON, USER, steps)
    assert not shouted.is_error and structured(shouted) == {"result": "PINNED!"}
    assert structured(forecast) == {"city": "Oslo", "days": ["oslo-day-1"]}
    assert backends.worker_calls[before:][-1]["input"] == {"city": "oslo"}


def test_a_pin_the_user_may_not_use_is_neither_listed_nor_run(server: Server, backends: Backends) -> None:
    async def steps(client: Any) -> tuple[list[dict[str, Any]], dict[str, Any], dict[str, Any]]:
        refused = error_of(await client.call_tool("Admin_DeleteUser", {"user": "carol"}))
        unknown = error_of(await client.call_tool("Admin_Teleport", {}))
        return await listing(client), refused, unknown

    before = len(backends.worker_calls)
    listed, refused, unknown = journey(server, ON, USER, steps)  # alice is denied Admin.*
    assert names(listed) == [*META, "Text_Shout", "Weather_GetForecast"]
    # The same answer as a tool that does not exist: a denied pin reveals nothing.
    assert refused == {"name": "not_found", "message": "no tool named 'Admin_DeleteUser' that you may use"}
    assert unknown["name"] == refused["name"] == "not_found"
    assert len(backends.worker_calls) == before


def test_auto_counts_the_pins_as_listed_already(server: Server) -> None:
    many = journey(server, AUTO_MANY, USER, listing)
    assert names(many) == [*META, "Calculator_AddNumbers", "Text_Shout"]  # 26 unpinned tools: recommend

    few = journey(server, AUTO_FEW, USER, listing)  # 24 unpinned tools: a static list is cheaper
    usable = [t.name.replace(".", "_") for t in server.tools if not t.name.startswith("Admin.")]
    assert sorted(names(few)) == sorted(usable)

    async def call(client: Any) -> Any:
        return await client.call_tool("Calculator_AddNumbers", {"a": 2, "b": 3})

    assert structured(journey(server, AUTO_MANY, USER, call)) == {"sum": 5}


def test_a_pin_dropped_from_a_new_build_is_left_out_and_logged(
    backends: Backends, embedder: Embedder, tmp_path: Path
) -> None:
    tools = catalog(backends.worker_url, backends.upstream_url, backends.dead_url)
    with start_server(tmp_path, tools, embedder) as running:
        assert names(journey(running, ON, UNCONNECTED_USER, listing))[3:] == [
            "Text_Shout",
            "Weather_GetForecast",
            "Admin_DeleteUser",
        ]
        publish_tools([t for t in tools if t.name != "Text.Shout"], str(running.index_dir), embedder)
        assert names(journey(running, ON, UNCONNECTED_USER, listing))[3:] == ["Weather_GetForecast", "Admin_DeleteUser"]
        text = running.log.read_text(encoding="utf-8")
        warnings = [json.loads(line) for line in text.splitlines() if "pinned tools not listed" in line]
        assert len(warnings) == 1 and "Text.Shout" in warnings[0]["message"], text[-2000:]
