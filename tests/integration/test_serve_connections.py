"""`/v1/apps`, execute and `toolrec policy list` say the same of each connection of the demo (issue 33 item 11).

The demo user's Slack and GitHub connections are live but lack scopes some of their tools need: execute asks to
authorize those tools, so by PRODUCT.md §2 (connected: the user can call the app's tools without authorizing
first) the apps are not connected. The list said "connected" for both."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from build_index.cli import main as toolrec
from build_index.ops.loopback import serve_subprocess
from build_index.ops.serve import DEMO_USER, prepare_embedded_default
from handler.inference.embedder import OnnxEmbedder
from tests.functional.test_apps_connected import _valid_input
from tests.support.serving import demo_tools

pytestmark = pytest.mark.slow

KEY = "trk_connections-test-key"
HEADERS = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory, embedder: OnnxEmbedder) -> Iterator[tuple[str, Path]]:
    root = tmp_path_factory.mktemp("connections") / ".toolrec"
    prepare_embedded_default(root, embedder, KEY)
    with serve_subprocess(["--root", str(root)], {"TOOLREC_API_KEY": KEY}, startup_timeout_s=120) as (url, _):
        yield url, root


def _runs_without_authorizing(url: str, app: str) -> bool:
    """Whether execute runs every tool of the app for the demo user without asking to authorize first."""
    for tool in [t for t in demo_tools() if t.app == app]:
        body = {"tool_name": tool.name, "input": _valid_input(tool.input_schema), "user_id": DEMO_USER}
        answer = httpx.post(f"{url}/v1/tools/execute", json=body, headers=HEADERS)
        if answer.status_code == 403 and answer.json()["name"] == "authorization_required":
            return False
    return True


def test_apps_execute_and_the_policy_list_agree_on_every_connection(
    served: tuple[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    url, root = served
    answer = httpx.get(f"{url}/v1/apps", params={"user_id": DEMO_USER, "limit": 100}, headers=HEADERS)
    apps = {app["app_id"]: app for app in answer.json()["apps"]}
    assert toolrec(["policy", "--file", str(root / "policy.json"), "list"]) == 0
    listed = dict(re.findall(rf"^connection {DEMO_USER} -> (\w+): (\w+(?: \w+)?)\b", capsys.readouterr().out, re.M))
    assert set(listed) == {"Slack", "GitHub", "GoogleCalendar"}
    for app, state in listed.items():
        connected = _runs_without_authorizing(url, app)
        assert apps[app]["connected"] is connected, app
        assert state == ("connected" if connected else "not connected"), (app, state)
    assert (listed["Slack"], listed["GitHub"], listed["GoogleCalendar"]) == (
        "not connected",
        "not connected",
        "connected",
    )


def test_the_list_names_what_a_connection_lacks(served: tuple[str, Path], capsys: pytest.CaptureFixture[str]) -> None:
    _, root = served
    assert toolrec(["policy", "--file", str(root / "policy.json"), "list"]) == 0
    lines = {line.split(":")[0]: line for line in capsys.readouterr().out.splitlines()}
    assert lines[f"connection {DEMO_USER} -> GitHub"] == (
        f"connection {DEMO_USER} -> GitHub: not connected, scopes repo;"
        f" 1 of the 10 GitHub tools {DEMO_USER} may use needs more: public_repo (GET /v1/apps lists them)"
    )
