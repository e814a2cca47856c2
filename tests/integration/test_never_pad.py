"""Never pad (PRODUCT.md §2 Refusals, issue 32 item 2), over real HTTP and MCP against ``toolrec serve`` on the demo:
a user denied the tools that fit gets what a build without those tools would answer, judged by the same no-match
rule: ``no_match`` when nothing allowed fits, never the allowed tools that fit nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from build_index.cli import main as toolrec
from build_index.ops.loopback import serve_subprocess
from build_index.ops.serve import prepare_embedded_default
from handler.inference.embedder import OnnxEmbedder
from tests.support.aio import run_async
from tests.support.mcp_client import mcp_client, structured

pytestmark = pytest.mark.slow

DEMO_TOOLS = Path(__file__).resolve().parents[2] / "build_index" / "demo" / "tools.jsonl"
KEY = "trk_never-pad-test-key"
NO_STRIPE = "no-stripe-user"  # denied Stripe.*
ANYONE = "anyone"
GATEWAY = "everything"
TASKS = [
    "refund the stripe payment",
    "refund the customer's stripe charge of $25",
    "renew my passport",
    "send a Slack message to the ops channel",
]


def _serve(root: Path, embedder: OnnxEmbedder, index: str | None = None) -> Any:
    prepare_embedded_default(root, embedder, KEY, index=index)
    policy = ["policy", "--file", str(root / "policy.json")]
    assert (
        toolrec([*policy, "rule", "put", "--subject", "*", "--rule-id", "all", "--effect", "allow", "--tools", "*"])
        == 0
    )
    deny = ["--subject", NO_STRIPE, "--rule-id", "no-stripe", "--effect", "deny", "--tools", "Stripe.*"]
    assert toolrec([*policy, "rule", "put", *deny]) == 0
    assert toolrec([*policy, "gateway", "put", GATEWAY, "--allow", "*"]) == 0
    where = ["--root", str(root)] + ([] if index is None else ["--index", index])
    return serve_subprocess(where, {"TOOLREC_API_KEY": KEY}, startup_timeout_s=120)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory, embedder: OnnxEmbedder) -> Iterator[str]:
    with _serve(tmp_path_factory.mktemp("demo") / ".toolrec", embedder) as (base, _):
        yield base


@pytest.fixture(scope="module")
def without_stripe(tmp_path_factory: pytest.TempPathFactory, embedder: OnnxEmbedder) -> Iterator[str]:
    """The demo built without its Stripe tools, served to a user who may use everything."""
    folder = tmp_path_factory.mktemp("no-stripe")
    catalog = folder / "tools.jsonl"
    rows = [line for line in DEMO_TOOLS.read_text().splitlines() if line.strip()]
    catalog.write_text("".join(r + "\n" for r in rows if json.loads(r)["app"] != "Stripe"))
    assert toolrec(["build", "--catalog", str(catalog), "--out", str(folder / "index"), "--quiet"]) == 0
    with _serve(folder / ".toolrec", embedder, index=str(folder / "index")) as (base, _):
        yield base


def _select(base: str, user: str) -> list[dict[str, Any]]:
    headers = {"Authorization": f"Bearer {KEY}"}
    body = {"tasks": TASKS, "user_id": user, "top_k": 5}
    response = httpx.post(f"{base}/v1/tools/select", json=body, headers=headers, timeout=60)
    assert response.status_code == 200, response.text
    results: list[dict[str, Any]] = response.json()["results"]
    return results


def _answer(result: dict[str, Any], key: str = "suggestions") -> tuple[str | None, list[str]]:
    return result.get("empty_reason"), [s["tool_name"] for s in result[key]]


def test_a_denied_tool_leaves_what_a_build_without_it_answers(demo: str, without_stripe: str) -> None:
    denied = [_answer(r) for r in _select(demo, NO_STRIPE)]
    absent = [_answer(r) for r in _select(without_stripe, ANYONE)]
    assert denied == absent
    assert denied[0] == ("no_match", [])  # the refund: nothing the user may use fits, so nothing is shown
    assert not any(name.startswith("Stripe.") for _, names in denied for name in names)
    assert denied[2] == ("no_match", [])
    assert denied[3][1] and denied[3][1][0] == "Slack.SendMessage"
    allowed = [_answer(r) for r in _select(demo, ANYONE)]
    assert allowed[0][1][0] == "Stripe.RefundPayment"  # the same task, the tool allowed: it fits


def test_select_tools_over_mcp_never_pads_either(demo: str) -> None:
    async def journey() -> dict[str, Any]:
        async with mcp_client(f"{demo}/mcp/{GATEWAY}", KEY, NO_STRIPE) as client:
            return structured(await client.call_tool("Toolrec_SelectTools", {"tasks": TASKS}))

    over_mcp = [_answer(r, "tools") for r in run_async(journey)["results"]]
    assert over_mcp == [_answer(r) for r in _select(demo, NO_STRIPE)]
    assert over_mcp[0] == ("no_match", [])
