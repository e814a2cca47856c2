"""toolrec's own names are its own (issue 22 item 4).

An upstream MCP server named "Toolrec" ingested without ``--mcp-app`` gave ``Toolrec.FindTools``, ``UseTool`` and
``SelectTools``: the Anthropic listing held two tools named ``Toolrec_FindTools``, ``--pin Toolrec_SelectTools`` was
accepted, and on an ``off`` gateway the listed upstream ``Toolrec_UseTool`` ran toolrec's own UseTool. Now the names
of toolrec's own tools (handler/catalog/names.py) are renamed at ingest, refused in a catalog, at load and at
``--pin``: every listing has unique names and each listed name runs the tool it lists.

A real upstream built with the MCP SDK, ``toolrec build`` and ``toolrec policy`` as a user runs them, and the app of
the real composition root over HTTP, called by the official MCP client.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp.server.mcpserver import MCPServer

from build_index.build import index_tools
from build_index.cli import main as toolrec
from build_index.model_prepare import MODEL_ID
from build_index.publish import publish
from handler.catalog.tool import Tool
from handler.composition import build_app
from handler.errors import IntegrityError
from handler.index.load import Index
from handler.index.store import LocalIndexStore, load_latest
from handler.policy.keys import hash_key
from handler.ranking.query import Embedder
from tests.support.aio import in_thread, run_async
from tests.support.mcp_client import mcp_client, structured
from tests.support.servers import serve
from tests.support.serving import file_settings

KEY = "trk_reserved-names-0123456789abcdef0123"
USER = "rita"
GATEWAY_OFF, GATEWAY_ON = "direct", "meta"
OWN_TOOLS = ("SelectTools", "UseTool", "ListApps", "FindTools")  # the meta-tools and the providers' search


def upstream_named_toolrec() -> Any:
    """A server that calls itself "Toolrec" and lists tools under toolrec's own names; each says who ran."""
    server: MCPServer = MCPServer(name="Toolrec", log_level="WARNING")
    for name in OWN_TOOLS:
        server.add_tool(_echo(name), name=name, description=f"The upstream's own {name}: echo a text.")
    return server.streamable_http_app(json_response=True, stateless_http=True)


def _echo(name: str) -> Any:
    def ran(text: str) -> dict[str, str]:
        return {"ran": f"upstream {name}", "text": text}

    return ran


def policy(*, pinned: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "version": 1,
        "gateways": [
            {"gateway_id": GATEWAY_OFF, "allowed": ["*"], "recommendation": "off"},
            {"gateway_id": GATEWAY_ON, "allowed": ["*"], "recommendation": "on", "pinned": list(pinned)},
        ],
        "access_rules": [{"rule_id": "all", "subject": "*", "effect": "allow", "tools": ["*"]}],
        "api_keys": [{"key_id": "reserved", "key_hash": hash_key(KEY)}],
    }


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """`toolrec build --from-mcp` of the upstream, as its operator would run it: no --mcp-app."""
    root = tmp_path_factory.mktemp("reserved")
    with serve(upstream_named_toolrec()) as base:
        argv = ["build", "--from-mcp", base + "/mcp", "--catalog-out", str(root / "rows.jsonl")]
        assert in_thread(toolrec, [*argv, "--out", str(root / "index"), "--quiet"]) == 0
        (root / "policy.json").write_text(json.dumps(policy()))
        yield root


@pytest.fixture(scope="module")
def served(built: Path, embedder: Embedder) -> Iterator[str]:
    settings = file_settings(str(built / "index"), built / "policy.json", built / "cache", policy_cache_seconds=0)
    with serve(build_app(settings, embedder=embedder)) as base:
        yield base


def test_ingest_renames_an_upstreams_tools_that_take_toolrecs_own_names(built: Path) -> None:
    rows = [json.loads(line) for line in (built / "rows.jsonl").read_text().splitlines()]
    by_upstream = {row["executor"]["tool"]: row["name"] for row in rows}
    assert set(by_upstream) == set(OWN_TOOLS)
    for upstream, name in by_upstream.items():
        assert name.startswith(f"Toolrec.{upstream}_") and len(name) == len(f"Toolrec.{upstream}_") + 8, name


def test_every_listing_has_unique_names_and_each_listed_name_runs_what_it_lists(served: str) -> None:
    headers = {"Authorization": f"Bearer {KEY}"}
    listing = httpx.get(f"{served}/v1/providers/anthropic/tools", params={"user_id": USER}, headers=headers)
    assert listing.status_code == 200, listing.text
    anthropic = [listing.json()["search_tool"]["name"], *(t["name"] for t in listing.json()["tools"])]
    assert len(anthropic) == len(set(anthropic)) == 1 + len(OWN_TOOLS), anthropic

    async def journey() -> tuple[list[str], list[str], list[dict[str, Any]]]:
        async with mcp_client(f"{served}/mcp/{GATEWAY_ON}", KEY, USER) as client:
            meta = [t.name for t in (await client.list_tools()).tools]
        async with mcp_client(f"{served}/mcp/{GATEWAY_OFF}", KEY, USER) as client:
            direct = [t.name for t in (await client.list_tools()).tools]
            ran = [structured(await client.call_tool(name, {"text": "hi"})) for name in direct]
        return meta, direct, ran

    meta, direct, ran = run_async(journey)
    assert meta == ["Toolrec_SelectTools", "Toolrec_UseTool", "Toolrec_ListApps"]
    assert len(direct) == len(set(direct)) == len(OWN_TOOLS) and not set(direct) & set(meta + anthropic[:1])
    for name, answer in zip(direct, ran, strict=True):
        assert answer == {"ran": f"upstream {name.split('_')[1]}", "text": "hi"}, (name, answer)


def test_a_pin_of_toolrecs_own_tool_is_refused(built: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = (built / "policy.json").read_text()
    put = ["gateway", "put", GATEWAY_ON, "--allow", "*", "--recommendation", "on", "--pin", "Toolrec_SelectTools"]
    assert toolrec(["policy", "--file", str(built / "policy.json"), *put, "--index", str(built / "index")]) == 2
    assert "'Toolrec_SelectTools': the names of toolrec's own tools" in capsys.readouterr().err
    assert (built / "policy.json").read_text() == before


def test_a_catalog_row_and_a_build_holding_toolrecs_own_names_are_refused(
    tmp_path: Path, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    row = {"name": "Toolrec.UseTool", "description": "Run any tool.", "input_schema": {}, "app": "Toolrec"}
    (tmp_path / "tools.jsonl").write_text(json.dumps(row) + "\n")
    argv = ["build", "--catalog", str(tmp_path / "tools.jsonl"), "--out", str(tmp_path / "index"), "--quiet"]
    assert toolrec(argv) == 2
    assert "'Toolrec.UseTool': the names of toolrec's own tools" in capsys.readouterr().err
    # A build made before the names were reserved is not served: the load refuses it as it refuses colliding names.
    built = index_tools([Tool.model_validate({**row, "name": "Toolrec.Other"})], embedder, MODEL_ID, progress=False)
    publish(dataclasses.replace(built, tools=[Tool.model_validate(row)]), str(tmp_path / "old"))
    with pytest.raises(IntegrityError, match=r"'Toolrec\.UseTool': the names of toolrec's own tools"):
        _load(tmp_path / "old", embedder)
    # And under a deployment's own namespace (TOOLREC_MCP_NAMESPACE), in either spelling.
    publish(
        dataclasses.replace(built, tools=[Tool.model_validate({**row, "name": "Acme_ListApps"})]),
        str(tmp_path / "acme"),
    )
    assert _load(tmp_path / "acme", embedder).tools[0].name == "Acme_ListApps"
    with pytest.raises(IntegrityError, match="'Acme_ListApps': the names of toolrec's own tools"):
        _load(tmp_path / "acme", embedder, "Acme")


def _load(root: Path, embedder: Embedder, namespace: str = "Toolrec") -> Index:
    return load_latest(LocalIndexStore(root), root / "cache", embedder.fingerprint, namespace=namespace)
