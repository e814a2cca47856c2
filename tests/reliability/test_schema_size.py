"""No answer outgrows Lambda's 6 MB because of the tools it lists (issue 22 item 7): an 8.1 MB ``input_schema`` was
ingested, and the default Anthropic tools page was then 8 MB and a ``top_k`` 1 select 7.9 MB. Now the build
refuses a schema over the cap (catalog files naming file and line, ``--from-mcp`` and ``refresh`` naming the
upstream tool), and every listing that carries schemas is bounded in bytes as well as in tools: the providers'
tools pages and MCP ``tools/list`` end early and page on (``offset``; ``nextCursor``), and select and search keep
each task's best tools, rank by rank, while they fit.

Black-box: the ``toolrec`` commands as a user runs them, an upstream MCP server built with the SDK, and the
real composition root served on 127.0.0.1 with 60 tools whose schemas are each just under the cap.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp.server.mcpserver import MCPServer

from build_index import cli
from build_index.build import index_tools
from build_index.model_prepare import MODEL_ID
from build_index.publish import publish
from handler.catalog.json_limits import MAX_SCHEMA_BYTES
from handler.catalog.tool import Tool
from handler.composition import build_app
from handler.index.format import LATEST
from handler.policy.keys import hash_key
from handler.ranking.query import Embedder
from tests.support.aio import in_thread
from tests.support.servers import serve
from tests.support.serving import file_settings

KEY = "trk_schema-size-0123456789abcdef0123456"
USER = "sara"
LISTED, META = "listed", "meta"  # recommendation off (tools/list lists the tools) and on
LAMBDA_ANSWER_BYTES = 6 * 1024 * 1024
# A listing's answer stays within half of Lambda's: the API Gateway envelope escapes every quote of the body again.
LISTING_ANSWER_BYTES = LAMBDA_ANSWER_BYTES // 2
TOOL_COUNT = 60
TASKS = [f"report on ledger entries of kind {n}" for n in range(16)]  # REST's most tasks in one select


def _schema_of(size: int) -> dict[str, Any]:
    """An object schema of about ``size`` bytes of JSON: fields with long descriptions, as generated APIs have."""
    fields = size // 1040
    properties = {f"field_{n}": {"type": "string", "description": "d" * 1000} for n in range(fields)}
    return {"type": "object", "properties": properties}


def _tool(name: str, schema: dict[str, Any]) -> Tool:
    return Tool(name=name, app=name.partition(".")[0], description="Report on ledger entries of one kind.",
                input_schema=schema)  # fmt: skip


# Refused at build and at MCP ingest.


def test_toolrec_build_refuses_a_schema_over_the_cap_naming_the_tool_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    catalog = tmp_path / "tools.jsonl"
    rows = [_tool("Ledger.Summary", _schema_of(10_000)), _tool("Ledger.Dump", _schema_of(8_100_000))]  # the probe's
    catalog.write_text("".join(row.model_dump_json() + "\n" for row in rows), encoding="utf-8")
    out = tmp_path / "index"
    assert in_thread(cli.main, ["build", "--catalog", str(catalog), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"{catalog}:2" in err and "Ledger.Dump" in err and f"{MAX_SCHEMA_BYTES:,} bytes" in err, err
    assert "Ledger.Summary" not in err and not out.exists()


def _oversized_upstream() -> MCPServer:
    """An upstream MCP server whose ``dump`` tool lists an input schema of 100 KB."""

    class Oversized(MCPServer):
        async def list_tools(self) -> list[types.Tool]:
            tools = await super().list_tools()
            return [t.model_copy(update={"input_schema": _schema_of(100_000)}) for t in tools]

    server = Oversized(name="ledger", log_level="WARNING")

    @server.tool(description="Dump the ledger.")
    def dump(kind: str) -> str:
        return kind

    return server


def test_build_from_mcp_and_refresh_refuse_an_upstream_schema_over_the_cap(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], embedder: Embedder
) -> None:
    index_dir = tmp_path / "index"
    publish(index_tools([_tool("Ledger.Summary", _schema_of(1_000))], embedder, MODEL_ID, progress=False),
            str(index_dir))  # fmt: skip
    published = (index_dir / LATEST).read_text()
    app = _oversized_upstream().streamable_http_app(json_response=True, stateless_http=True)
    with serve(app) as upstream:
        url = f"{upstream}/mcp"
        build = ["build", "--from-mcp", url, "--mcp-app", "Ledger", "--out", str(tmp_path / "new"), "--quiet"]
        assert in_thread(cli.main, build) == 2
        built_err = capsys.readouterr().err
        refresh = ["refresh", "--index", str(index_dir), "--from-mcp", url, "--mcp-app", "Ledger"]
        assert in_thread(cli.main, refresh) != 0
        refresh_err = capsys.readouterr().err
    for err in (built_err, refresh_err):
        assert "'dump'" in err and f"{MAX_SCHEMA_BYTES:,} bytes" in err, err
    assert not (tmp_path / "new").exists() and (index_dir / LATEST).read_text() == published


# Listings bounded in bytes.


@dataclass
class Served:
    client: httpx.Client
    names: list[str]

    def mcp(self, gateway: str, method: str, params: dict[str, Any]) -> httpx.Response:
        message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return self.client.post(f"/mcp/{gateway}", json=message, headers={"X-Toolrec-User": USER})


@pytest.fixture(scope="module")
def served(embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    root = tmp_path_factory.mktemp("schema-size")
    schema = _schema_of(MAX_SCHEMA_BYTES - 5_000)  # each allowed; 60 of them are 3.6 MB
    tools = [_tool(f"Ledger.Report{chr(65 + n // 26)}{chr(65 + n % 26)}", schema) for n in range(TOOL_COUNT)]
    publish(index_tools(tools, embedder, MODEL_ID, progress=False), str(root / "index"))
    policy = {
        "version": 1,
        "gateways": [
            {"gateway_id": LISTED, "allowed": ["*"], "recommendation": "off"},
            {"gateway_id": META, "allowed": ["*"], "recommendation": "on"},
        ],
        "access_rules": [{"rule_id": "all", "subject": "*", "effect": "allow", "tools": ["*"]}],
        "api_keys": [{"key_id": "size", "key_hash": hash_key(KEY)}],
    }
    (root / "policy.json").write_text(json.dumps(policy))
    settings = file_settings(str(root / "index"), root / "policy.json", root / "cache")
    with serve(build_app(settings, embedder=embedder)) as base, httpx.Client(base_url=base, timeout=30) as client:
        client.headers["Authorization"] = f"Bearer {KEY}"
        yield Served(client, [t.name for t in tools])


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_providers_tools_page_is_bounded_in_bytes_and_paging_by_offset_gets_every_tool(
    served: Served, provider: str
) -> None:
    listed: list[str] = []
    pages = 0
    while True:
        response = served.client.get(f"/v1/providers/{provider}/tools", params={"user_id": USER, "offset": len(listed)})
        assert response.status_code == 200, response.text[:300]
        assert len(response.content) <= LISTING_ANSWER_BYTES, f"a page of {len(response.content):,} bytes"
        page = response.json()
        assert page["total"] == TOOL_COUNT
        listed += [tool["name"] for tool in page["tools"]]
        pages += 1
        if not page["tools"] or len(listed) >= page["total"]:  # README's client loop
            break
    assert listed == [name.replace(".", "_") for name in served.names] and pages > 1


def test_mcp_tools_list_is_bounded_in_bytes_and_pages_with_next_cursor(served: Served) -> None:
    listed: list[str] = []
    params: dict[str, Any] = {}
    for _ in range(TOOL_COUNT):
        response = served.mcp(LISTED, "tools/list", params)
        assert response.status_code == 200, response.text[:300]
        assert len(response.content) <= LISTING_ANSWER_BYTES, f"a listing of {len(response.content):,} bytes"
        result = response.json()["result"]
        listed += [tool["name"] for tool in result["tools"]]
        if "nextCursor" not in result:
            break
        params = {"cursor": result["nextCursor"]}
    assert listed == [name.replace(".", "_") for name in served.names] and params


def test_a_cursor_toolrec_never_gave_is_invalid_params(served: Served) -> None:
    response = served.mcp(LISTED, "tools/list", {"cursor": "not-a-cursor"})
    assert response.json()["error"]["code"] == types.INVALID_PARAMS, response.text


def test_select_keeps_each_tasks_best_tools_while_they_fit(served: Served) -> None:
    def select(tasks: list[str]) -> httpx.Response:
        return served.client.post("/v1/tools/select", json={"tasks": tasks, "user_id": USER, "top_k": 20})

    response = select(TASKS)
    assert response.status_code == 200, response.text[:300]
    assert len(response.content) <= LISTING_ANSWER_BYTES, f"a select of {len(response.content):,} bytes"
    for task, result in zip(TASKS, response.json()["results"], strict=True):
        alone = [s["tool_name"] for s in select([task]).json()["results"][0]["suggestions"]]
        kept = [s["tool_name"] for s in result["suggestions"]]
        assert kept == alone[: len(kept)] and (kept or not alone), (task, kept, alone)


def test_mcp_select_tools_answer_fits_a_lambda_answer(served: Served) -> None:
    arguments = {"name": "Toolrec_SelectTools", "arguments": {"tasks": TASKS}}
    response = served.mcp(META, "tools/call", arguments)
    assert response.status_code == 200, response.text[:300]
    assert len(response.content) <= LAMBDA_ANSWER_BYTES, f"a SelectTools answer of {len(response.content):,} bytes"
    results = response.json()["result"]["structuredContent"]["results"]
    assert all(result["tools"] for result in results)
