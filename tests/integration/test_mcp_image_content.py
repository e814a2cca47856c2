"""An upstream MCP tool that answers with an image: MCP clients get MCP image content (not base64 inside JSON
text), through a direct call and through UseTool; REST execute still answers JSON. Real HTTP on loopback: the
upstream server, toolrec's app served by uvicorn, the official MCP client."""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp_types import CallToolResult, ImageContent, TextContent

from build_index.build import index_tools
from build_index.model_prepare import MODEL_ID
from build_index.publish import publish
from handler.catalog.tool import Executor, Tool
from handler.composition import build_app
from handler.policy.keys import generate_key, hash_key
from handler.ranking.query import Embedder
from handler.settings import Settings
from tests.support.aio import run_async
from tests.support.mcp_client import mcp_client, use
from tests.support.servers import serve
from tests.support.workers import badge_png, image_mcp_app

USER, DIRECT, RECOMMENDING = "ana", "direct", "assistant"
BADGE = "Badges.RenderBadge"


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Iterator[tuple[str, str]]:
    root = tmp_path_factory.mktemp("images")
    key = generate_key()
    policy = {
        "version": 1,
        "gateways": [
            {"gateway_id": DIRECT, "allowed": ["Badges.*"], "recommendation": "off"},
            {"gateway_id": RECOMMENDING, "allowed": ["Badges.*"], "recommendation": "on"},
        ],
        "access_rules": [{"rule_id": "everyone", "subject": "*", "effect": "allow", "tools": ["*"]}],
        "api_keys": [{"key_id": "test", "key_hash": hash_key(key)}],
    }
    (root / "policy.json").write_text(json.dumps(policy))
    with serve(image_mcp_app()) as upstream:
        badge = Tool(
            name=BADGE,
            app="Badges",
            description="Render a badge image for a label.",
            input_schema={"type": "object", "properties": {"label": {"type": "string"}}, "required": ["label"]},
            executor=Executor(kind="mcp", target=upstream + "/mcp", tool="badge", timeout_s=5),
        )
        publish(index_tools([badge], embedder, MODEL_ID, progress=False), str(root / "index"))
        settings = Settings(
            index_location=str(root / "index"),
            index_cache_dir=root / "cache",
            policy_file=root / "policy.json",
            policy_cache_seconds=0,
        )
        with serve(build_app(settings, embedder=embedder)) as base:
            yield base, key


def call(gateway: tuple[str, str], gateway_id: str, journey: Any) -> CallToolResult:
    base, key = gateway

    async def main() -> CallToolResult:
        async with mcp_client(f"{base}/mcp/{gateway_id}", key, USER) as client:
            result: CallToolResult = await journey(client)
            return result

    return run_async(main)


def the_badge(label: str) -> ImageContent:
    return ImageContent(data=base64.b64encode(badge_png(label)).decode(), mime_type="image/png")


def test_a_direct_call_answers_with_the_upstream_image(gateway: tuple[str, str]) -> None:
    result = call(gateway, DIRECT, lambda client: client.call_tool("Badges_RenderBadge", {"label": "build ok"}))
    assert not result.is_error
    assert result.content == [TextContent(text="badge for build ok"), the_badge("build ok")]


def test_use_tool_puts_the_envelope_first_then_the_image(gateway: tuple[str, str]) -> None:
    result = call(gateway, RECOMMENDING, lambda client: use(client, BADGE, {"label": "v2"}))
    assert not result.is_error
    envelope, *blocks = result.content
    assert isinstance(envelope, TextContent)
    summary = json.loads(envelope.text)
    assert summary == result.structured_content
    assert summary["success"] is True and summary["tool_name"] == BADGE and "output" not in summary
    assert blocks == [TextContent(text="badge for v2"), the_badge("v2")]


def test_rest_execute_still_answers_json(gateway: tuple[str, str]) -> None:
    base, key = gateway
    response = httpx.post(
        f"{base}/v1/tools/execute",
        json={"tool_name": BADGE, "input": {"label": "rest"}, "user_id": USER},
        headers={"Authorization": f"Bearer {key}"},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["success"] is True
    assert body["output"] == [
        {"type": "text", "text": "badge for rest"},
        {"type": "image", "data": base64.b64encode(badge_png("rest")).decode(), "mimeType": "image/png"},
    ]
