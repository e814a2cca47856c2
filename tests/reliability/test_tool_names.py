"""One meaning per tool name (issue 15, items 3 and 8).

Callers spell a tool's name several ways (``Slack.SendMessage``, ``Slack_SendMessage`` as MCP lists it, another
case); lookups fold them together. Two catalog names that fold alike made a deny of one spelling miss the tool run
by another, so the build refuses them (naming both rows) and an index that holds them is not served. Every
spelling resolves the same way in REST execute, MCP UseTool and direct calls, and in access rules: a deny written
in any spelling denies the tool whatever spelling the caller uses. A tool the caller may not use answers exactly
as a tool that does not exist, so nobody learns which tools exist by probing.

Real servers on loopback: toolrec (the real composition root) and the test HTTP worker, called over REST and by
the official MCP client.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from build_index.build import index_tools
from build_index.cli import main
from build_index.ingest.catalog_files import read_catalogs
from build_index.ingest.mcp_tools import catalog_entries, merge
from build_index.model_prepare import MODEL_ID
from build_index.publish import publish
from handler.catalog.tool import Executor, Tool
from handler.composition import build_app
from handler.errors import CatalogError
from handler.policy.keys import hash_key
from handler.ranking.query import Embedder
from tests.reliability.conftest import assert_error_body
from tests.support.aio import run_async
from tests.support.mcp_client import error_of, mcp_client, structured
from tests.support.servers import serve
from tests.support.serving import file_settings
from tests.support.workers import http_worker_app

KEY = "trk_tool-names-0123456789abcdef012345"
USER = "erin"
GATEWAY_ON, GATEWAY_OFF = "meta", "direct"
SEND_TASK = "send a message to a Slack channel"
SPELLINGS = ["Slack.SendMessage", "slack.sendmessage", "Slack_SendMessage", "SLACK_SENDMESSAGE"]
MESSAGE = {"channel_name": "ops", "text": "deployed"}


def _schema(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "additionalProperties": False}


def catalog(worker: str) -> list[Tool]:
    def tool(name: str, description: str, path: str, schema: dict[str, Any]) -> Tool:
        executor = Executor(kind="http", target=f"{worker}/{path}", timeout_s=10)
        return Tool(
            name=name, app=name.partition(".")[0], description=description, input_schema=schema, executor=executor
        )

    text = {"channel_name": {"type": "string"}, "text": {"type": "string"}}
    return [
        tool("Slack.SendMessage", "Send a message to a Slack channel.", "post", _schema(text)),
        tool("Slack.ListChannels", "List the channels of a Slack workspace.", "echo", _schema({})),
        tool("Weather.GetForecast", "Get the weather forecast for a city.", "forecast",
             {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
    ]  # fmt: skip


def policy(deny: str | None) -> dict[str, Any]:
    rules: list[dict[str, Any]] = [{"rule_id": "all", "subject": "*", "effect": "allow", "tools": ["*"]}]
    if deny is not None:
        rules.append({"rule_id": "no-send", "subject": USER, "effect": "deny", "tools": [deny]})
    return {
        "version": 1,
        "gateways": [
            {"gateway_id": GATEWAY_ON, "allowed": ["Slack.*", "Weather.*"], "recommendation": "on"},
            {"gateway_id": GATEWAY_OFF, "allowed": ["Slack.*", "Weather.*"], "recommendation": "off"},
        ],
        "access_rules": rules,
        "api_keys": [{"key_id": "names", "key_hash": hash_key(KEY)}],
    }


@dataclass
class Server:
    base: str
    policy_file: Path
    worker_calls: list[dict[str, Any]]

    def set_policy(self, deny: str | None) -> None:
        self.policy_file.write_text(json.dumps(policy(deny)), encoding="utf-8")

    def post(self, path: str, body: dict[str, Any]) -> httpx.Response:
        headers = {"Authorization": f"Bearer {KEY}"}
        return httpx.post(f"{self.base}{path}", json=body, headers=headers, timeout=30)

    def execute(self, tool: str, inputs: dict[str, Any]) -> httpx.Response:
        return self.post("/v1/tools/execute", {"tool_name": tool, "input": inputs, "user_id": USER})

    def shown(self) -> set[str]:
        """Every tool name select and search show the user for a Slack task."""
        select = self.post("/v1/tools/select", {"tasks": [SEND_TASK], "user_id": USER, "top_k": 20})
        search = self.post("/v1/tools/search", {"query": "slack message channel", "user_id": USER, "top_k": 50})
        assert select.status_code == 200 and search.status_code == 200, (select.text, search.text)
        names = {s["tool_name"] for s in select.json()["results"][0]["suggestions"]}
        return names | {s["tool_name"] for s in search.json()["results"]}

    def posts(self) -> int:
        return sum(1 for call in self.worker_calls if call["path"] == "/post")


@pytest.fixture(scope="module")
def worker() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    calls: list[dict[str, Any]] = []
    with serve(http_worker_app(calls)) as url:
        yield url, calls


def _serve_index(
    root: Path, tools: list[Tool], embedder: Embedder, worker: tuple[str, list[dict[str, Any]]]
) -> Iterator[Server]:
    publish(index_tools(tools, embedder, MODEL_ID, progress=False), str(root / "index"))
    server_policy = root / "policy.json"
    server_policy.write_text(json.dumps(policy(None)), encoding="utf-8")  # read at start: it must be there
    settings = file_settings(str(root / "index"), server_policy, root / "cache", policy_cache_seconds=0)
    with serve(build_app(settings, embedder=embedder)) as base:
        yield Server(base, server_policy, worker[1])


@pytest.fixture(scope="module")
def server(
    embedder: Embedder, worker: tuple[str, list[dict[str, Any]]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    yield from _serve_index(tmp_path_factory.mktemp("tool-names"), catalog(worker[0]), embedder, worker)


def _mcp(server: Server, gateway: str, journey: Any) -> Any:
    async def main() -> Any:
        async with mcp_client(f"{server.base}/mcp/{gateway}", KEY, USER) as client:
            return await journey(client)

    return run_async(main)


def _listed(server: Server) -> list[str]:
    async def journey(client: Any) -> list[str]:
        return [t.name for t in (await client.list_tools()).tools]

    listed: list[str] = _mcp(server, GATEWAY_OFF, journey)
    return listed


def _use(server: Server, tool_name: str, inputs: dict[str, Any]) -> types.CallToolResult:
    async def journey(client: Any) -> types.CallToolResult:
        result: types.CallToolResult = await client.call_tool(
            "Toolrec_UseTool", {"tool_name": tool_name, "inputs": inputs}
        )
        return result

    result: types.CallToolResult = _mcp(server, GATEWAY_ON, journey)
    return result


def _direct(server: Server, name: str, inputs: dict[str, Any]) -> types.CallToolResult:
    async def journey(client: Any) -> types.CallToolResult:
        result: types.CallToolResult = await client.call_tool(name, inputs)
        return result

    result: types.CallToolResult = _mcp(server, GATEWAY_OFF, journey)
    return result


# The build refuses names that a lookup cannot tell apart.


def _row(name: str) -> str:
    return json.dumps({"name": name, "description": f"Send a message ({name}).", "input_schema": {}, "app": "Slack"})


@pytest.mark.parametrize("other", ["Slack.Sendmessage", "slack.sendmessage", "Slack_SendMessage", "SLACK_SENDMESSAGE"])
def test_a_catalog_with_names_a_lookup_folds_together_is_refused_naming_both_rows(
    tmp_path: Path, other: str, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog_file = tmp_path / "tools.jsonl"
    catalog_file.write_text(_row("Slack.SendMessage") + "\n" + _row("Slack.ListChannels") + "\n" + _row(other) + "\n")
    with pytest.raises(CatalogError) as refused:
        read_catalogs([catalog_file])
    message = str(refused.value)
    assert f"{catalog_file}:3:" in message and f"{catalog_file}:1" in message, message
    assert repr(other) in message and "'Slack.SendMessage'" in message, message
    out = tmp_path / "index"
    for command in (["build", "--out", str(out), "--quiet"], ["lint"]):
        assert main([*command, "--catalog", str(catalog_file)]) == 2
        err = capsys.readouterr().err
        assert f"{catalog_file}:3:" in err and repr(other) in err and "'Slack.SendMessage'" in err, err
    assert not out.exists()


def test_the_build_step_refuses_colliding_names_however_the_tools_arrived(embedder: Embedder) -> None:
    tools = catalog("http://127.0.0.1:9")
    tools.append(tools[0].model_copy(update={"name": "Slack.Sendmessage"}))  # as a caller of build_index could
    with pytest.raises(CatalogError, match=r"'Slack\.SendMessage'.*'Slack\.Sendmessage'"):
        index_tools(tools, embedder, MODEL_ID, progress=False)


def test_tools_from_an_upstream_mcp_server_that_fold_together_are_refused() -> None:
    schema: dict[str, Any] = {"type": "object"}
    upstream = [types.Tool(name=n, description=f"Get a forecast ({n}).", input_schema=schema)
                for n in ("get-forecast", "get_forecast", "Get_Forecast")]  # fmt: skip
    ingested = catalog_entries("http://127.0.0.1:9/mcp", "Weather", upstream, None)
    with pytest.raises(CatalogError) as refused:
        merge([], ingested)
    assert "'Weather.get_forecast'" in str(refused.value) and "'Weather.Get_Forecast'" in str(refused.value)
    # Against the catalog as well: a catalog row and an ingested tool that fold together.
    catalog_row = Tool(name="Weather.GETFORECAST", description="x", input_schema=schema, app="Weather")
    ingested = catalog_entries(
        "http://127.0.0.1:9/mcp", "Weather", [upstream[0].model_copy(update={"name": "getForecast"})], None
    )
    with pytest.raises(CatalogError, match=r"Weather\.GETFORECAST"):
        merge([catalog_row], ingested)


# An index that already holds colliding names (built before the check) is not served.


@pytest.fixture(scope="module")
def colliding(
    embedder: Embedder, worker: tuple[str, list[dict[str, Any]]], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("colliding")
    tools = catalog(worker[0])
    built = index_tools(tools, embedder, MODEL_ID, progress=False)
    # Written as a build without the name check would: the second Slack tool renamed after the vectors were made.
    renamed = [tools[0], tools[1].model_copy(update={"name": "Slack.Sendmessage"}), tools[2]]
    publish(dataclasses.replace(built, tools=renamed), str(root / "index"))
    server_policy = root / "policy.json"
    server_policy.write_text(json.dumps(policy("Slack.SendMessage")), encoding="utf-8")  # read at start
    settings = file_settings(str(root / "index"), server_policy, root / "cache", policy_cache_seconds=0)
    with serve(build_app(settings, embedder=embedder)) as base:
        yield Server(base, server_policy, worker[1])


def test_an_index_with_colliding_names_is_refused_rather_than_served(colliding: Server) -> None:
    before = colliding.posts()
    health = httpx.get(f"{colliding.base}/healthz", timeout=10)
    assert health.status_code == 503 and health.json()["status"] == "unavailable", health.text
    for path, body in [
        ("/v1/tools/select", {"tasks": [SEND_TASK], "user_id": USER}),
        ("/v1/tools/search", {"query": "slack message", "user_id": USER}),
        ("/v1/tools/execute", {"tool_name": "Slack.SendMessage", "input": MESSAGE, "user_id": USER}),
        ("/v1/tools/execute", {"tool_name": "Slack.Sendmessage", "input": {}, "user_id": USER}),
    ]:
        response = colliding.post(path, body)
        assert response.status_code == 503, (path, response.text)
        assert_error_body(503, response.json())

    async def list_tools(client: Any) -> str:
        with pytest.raises(MCPError) as refused:
            await client.list_tools()
        return refused.value.error.message

    assert "no tool index" in _mcp(colliding, GATEWAY_OFF, list_tools)
    for spelling in ("Slack.SendMessage", "Slack.Sendmessage"):
        assert error_of(_use(colliding, spelling, MESSAGE))["name"] == "service_unavailable"
    assert colliding.posts() == before


# One resolver: every spelling means the same tool, for access rules and for calls.


@pytest.mark.parametrize("deny", SPELLINGS)
def test_a_deny_in_any_spelling_hides_and_refuses_the_tool_in_every_spelling(server: Server, deny: str) -> None:
    server.set_policy(deny)
    before = server.posts()
    shown = server.shown()
    assert "Slack.SendMessage" not in shown and "Slack.ListChannels" in shown, shown
    listed = _listed(server)
    assert "Slack_SendMessage" not in listed and "Slack_ListChannels" in listed, listed
    for spelling in SPELLINGS:
        response = server.execute(spelling, MESSAGE)
        assert (response.status_code, response.json()["name"]) == (404, "not_found"), (spelling, response.text)
        assert error_of(_use(server, spelling, MESSAGE))["name"] == "not_found", spelling
        assert error_of(_direct(server, spelling, MESSAGE))["name"] == "not_found", spelling
    assert server.posts() == before  # nothing ran


@pytest.mark.parametrize(
    "spelling", ["Slack.SendMessage", "slack.SENDMESSAGE", "Slack_SendMessage", "slack_sendmessage"]
)
def test_every_spelling_of_an_allowed_tool_runs_it_over_rest_and_mcp(server: Server, spelling: str) -> None:
    server.set_policy(None)
    before = server.posts()
    response = server.execute(spelling, MESSAGE)
    assert response.status_code == 200, response.text
    assert (response.json()["tool_name"], response.json()["success"]) == ("Slack.SendMessage", True)
    used = _use(server, spelling, MESSAGE)
    assert not used.is_error and structured(used)["tool_name"] == "Slack.SendMessage", used.content
    direct = _direct(server, spelling, MESSAGE)
    assert not direct.is_error and structured(direct)["posted"] is True, direct.content
    assert server.posts() == before + 3


# Item 8: a tool the caller may not use answers exactly as a tool that does not exist.


def test_a_denied_tool_answers_exactly_as_an_unknown_one(server: Server) -> None:
    server.set_policy("Slack.SendMessage")

    def rest(name: str) -> tuple[int, dict[str, Any]]:
        response = server.execute(name, MESSAGE)
        return response.status_code, response.json()

    def shape(answer: Any, name: str) -> str:
        return json.dumps(answer).replace(name, "<name>")

    denied, unknown = "Slack.SendMessage", "Slack.Teleport"
    assert shape(rest(denied), denied) == shape(rest(unknown), unknown)
    assert rest(denied)[0] == 404 and "Slack.SendMessage" in rest(denied)[1]["message"]
    assert shape(error_of(_use(server, denied, MESSAGE)), denied) == shape(
        error_of(_use(server, unknown, MESSAGE)), unknown
    )
    denied_direct, unknown_direct = (
        error_of(_direct(server, "Slack_SendMessage", MESSAGE)),
        error_of(_direct(server, "Slack_Teleport", MESSAGE)),
    )
    assert shape(denied_direct, "Slack_SendMessage") == shape(unknown_direct, "Slack_Teleport")
    assert denied_direct["name"] == "not_found"
