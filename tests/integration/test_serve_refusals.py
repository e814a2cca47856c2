"""What a caller is told when a request is refused, over real HTTP against ``toolrec serve`` on the demo: over the
official MCP SDK a refused request's reason reaches the user (issue 33 item 10), and an unknown tool or gateway
names the nearest one the caller may see, never a denied one (issue 34 item 6; PRODUCT.md §2 Errors, §3)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp.shared.exceptions import MCPError

from build_index.cli import main as toolrec
from build_index.ops.loopback import serve_subprocess
from build_index.ops.serve import DEMO_USER, prepare_embedded_default
from handler.inference.embedder import OnnxEmbedder
from tests.support.aio import run_async
from tests.support.mcp_client import error_of, mcp_client, use

pytestmark = pytest.mark.slow

KEY = "trk_refusals-test-key"
SMS_KEY = "trk_refusals-test-key-of-gateway-sms"
NO_REFUNDS = "no-refunds-user"  # denied Stripe.RefundPayment alone
TYPO = "Stripe.RefundPaymnt"


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory, embedder: OnnxEmbedder) -> Iterator[str]:
    root = tmp_path_factory.mktemp("refusals") / ".toolrec"
    prepare_embedded_default(root, embedder, KEY)  # the demo, as `toolrec serve` leaves it
    policy = ["policy", "--file", str(root / "policy.json")]
    assert toolrec([*policy, "gateway", "put", "sms", "--allow", "Twilio.*"]) == 0
    assert toolrec([*policy, "key", "create", "--key", SMS_KEY, "--gateway", "sms"]) == 0
    deny = ["--subject", NO_REFUNDS, "--rule-id", "no-refunds", "--effect", "deny", "--tools", "Stripe.RefundPayment"]
    assert toolrec([*policy, "rule", "put", *deny]) == 0
    with serve_subprocess(["--root", str(root)], {"TOOLREC_API_KEY": KEY}, startup_timeout_s=120) as (base, _):
        yield base


def _mcp_refusal(url: str, key: str, gateway: str) -> str:
    """What the SDK's user sees when the gateway refuses the session (the message of the MCPError it raises)."""

    async def journey() -> None:
        async with mcp_client(f"{url}/mcp/{gateway}", key, DEMO_USER) as client:
            await client.list_tools()

    # The SDK client raises from its transport task group, so the MCPError arrives inside an ExceptionGroup.
    with pytest.raises(BaseExceptionGroup) as caught:
        run_async(journey)
    errors = caught.value.subgroup(MCPError)
    assert errors is not None, caught.value
    return str(_leaf(errors))


def _leaf(group: BaseException) -> BaseException:
    return _leaf(group.exceptions[0]) if isinstance(group, BaseExceptionGroup) else group


def test_the_mcp_sdk_shows_why_an_unknown_gateway_is_refused(url: str) -> None:
    assert _mcp_refusal(url, KEY, "defualt") == "unknown gateway 'defualt' — did you mean 'default'?"


def test_the_mcp_sdk_shows_why_another_gateways_key_is_refused(url: str) -> None:
    message = _mcp_refusal(url, SMS_KEY, "default")
    assert message == "this API key may not use gateway 'default': it is limited to 'sms'"


def test_the_mcp_sdk_shows_why_a_key_is_refused(url: str) -> None:
    assert _mcp_refusal(url, "trk_never-issued", "default") == "the API key is not valid"


def test_a_refusal_keeps_its_http_status_and_answers_the_request_id(url: str) -> None:
    ping = {"jsonrpc": "2.0", "id": 7, "method": "ping"}
    user = {"X-Toolrec-User": DEMO_USER}
    missing = httpx.post(f"{url}/mcp/default", json=ping, headers=user)
    assert missing.status_code == 401 and missing.headers["www-authenticate"] == "Bearer"  # an OAuth client's cue
    assert missing.json()["id"] == 7 and missing.json()["error"]["data"]["name"] == "unauthorized"
    unknown = httpx.post(f"{url}/mcp/defualt", json=ping, headers={**user, "Authorization": f"Bearer {KEY}"})
    assert unknown.status_code == 404
    assert unknown.json() == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {
            "code": -32600,
            "message": "unknown gateway 'defualt' — did you mean 'default'?",
            "data": {"name": "not_found", "message": "unknown gateway 'defualt' — did you mean 'default'?"},
        },
    }


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/v1/tools/select", {"tasks": ["send a text message"], "user_id": DEMO_USER, "gateway_id": "smss"}),
        ("/v1/tools/search", {"query": "sms", "user_id": DEMO_USER, "gateway_id": "smss"}),
    ],
)
def test_rest_names_the_nearest_gateway(url: str, path: str, body: dict[str, Any]) -> None:
    answer = httpx.post(f"{url}{path}", json=body, headers={"Authorization": f"Bearer {KEY}"})
    assert answer.status_code == 404
    assert answer.json() == {"name": "not_found", "message": "unknown gateway 'smss' — did you mean 'sms'?"}


def test_a_key_of_one_gateway_is_not_told_of_another(url: str) -> None:
    body = {"tasks": ["send a text message"], "user_id": DEMO_USER, "gateway_id": "defualt"}
    answer = httpx.post(f"{url}/v1/tools/select", json=body, headers={"Authorization": f"Bearer {SMS_KEY}"})
    assert answer.status_code == 403 and "'default'" not in answer.json()["message"]


def _execute(url: str, tool_name: str, user_id: str) -> dict[str, Any]:
    body = {"tool_name": tool_name, "input": {}, "user_id": user_id}
    answer = httpx.post(f"{url}/v1/tools/execute", json=body, headers={"Authorization": f"Bearer {KEY}"})
    assert answer.status_code == 404, answer.text
    message: str = answer.json()["message"]
    return {"message": message}


def test_rest_execute_names_the_nearest_tool_the_user_may_use(url: str) -> None:
    told = _execute(url, TYPO, DEMO_USER)["message"]
    assert told == f"no tool named {TYPO!r} that you may use — did you mean 'Stripe.RefundPayment'?"


def test_a_denied_tool_is_never_the_nearest(url: str) -> None:
    # No tool this user may use is near: told what anyone is told of a name nothing is near, as if the denied tool
    # did not exist (PRODUCT.md §2 Refusals).
    assert _execute(url, TYPO, NO_REFUNDS)["message"] == f"no tool named {TYPO!r} that you may use"
    # Near another tool of the app the user may use: that one, never the denied one.
    for name in ("Stripe.RefundPayment", "Stripe.RefundPaymentLink"):
        told = _execute(url, name, NO_REFUNDS)["message"]
        assert told == f"no tool named {name!r} that you may use — did you mean 'Stripe.CreatePaymentLink'?"


def test_mcp_names_the_nearest_tool_the_user_may_use_in_the_spelling_called(url: str) -> None:
    async def journey(user: str) -> tuple[dict[str, Any], dict[str, Any]]:
        async with mcp_client(f"{url}/mcp/default", KEY, user) as client:
            through_use = error_of(await use(client, TYPO, {}))
            direct = error_of(await client.call_tool("stripe_refundpaymnt", {}))
            return through_use, direct

    through_use, direct = run_async(journey, DEMO_USER)
    assert through_use["message"] == f"no tool named {TYPO!r} that you may use — did you mean 'Stripe.RefundPayment'?"
    assert direct["message"] == (
        "no tool named 'stripe_refundpaymnt' that you may use — did you mean 'Stripe_RefundPayment'?"
    )
    denied_use, denied_direct = run_async(journey, NO_REFUNDS)
    assert denied_use["message"] == f"no tool named {TYPO!r} that you may use"
    assert denied_direct["message"] == "no tool named 'stripe_refundpaymnt' that you may use"
