"""A policy file with a JSON or field error (issue 33 item 8, PRODUCT.md §4): at start, `toolrec serve` stops and
names the fields; while serving, the last good policy stays in force and the log names the fields. Before, the
start said "3 invalid field(s)" without naming one, and a bad edit while serving made every request a 503."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from build_index.ops.loopback import free_port, serve_subprocess
from tests.support.serving import API_KEY, write_test_policy

REPO_ROOT = Path(__file__).resolve().parents[2]
SELECT = {"tasks": ["send a Slack message to the ops channel"], "user_id": "demo-user", "top_k": 3}
BAD_FIELDS = {
    "version": 1,
    "gateways": [
        {"gateway_id": "default", "allowed": ["*"], "recommendation": "maybe"},
        {"gateway_id": "support", "allowed": ["*"], "pined": ["Slack.SendMessage"]},
    ],
    "access_rules": [{"rule_id": "everyone", "subject": "*", "effect": "allow", "tools": ["*"]}],
}
NAMED = [
    "gateways[0].recommendation: Input should be 'on', 'off' or 'auto'",
    "gateways[1].pined: unknown field — did you mean 'pinned'?",
]


def test_serve_with_a_broken_policy_file_stops_and_names_the_fields(demo_index: Path, tmp_path: Path) -> None:
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(BAD_FIELDS), encoding="utf-8")
    command = [sys.executable, "-m", "build_index.cli", "serve", "--port", str(free_port()), "--root", str(tmp_path)]
    command += ["--index", str(demo_index), "--policy", str(policy)]
    env = {**os.environ, "TOOLREC_API_KEY": API_KEY}
    result = subprocess.run(command, capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=120, check=False)

    assert result.returncode != 0, result.stdout
    for named in NAMED:
        assert named in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and "toolrec on http" not in result.stdout


def _slack_first(base: str) -> str:
    response = httpx.post(f"{base}/v1/tools/select", json=SELECT, headers={"Authorization": f"Bearer {API_KEY}"})
    assert response.status_code == 200, response.text
    suggestions = response.json()["results"][0]["suggestions"]
    return str(suggestions[0]["tool_name"]) if suggestions else ""


def _wait_for(log: Path, text: str, timeout_s: float = 20.0) -> str:
    deadline = time.monotonic() + timeout_s
    while text not in (printed := log.read_text(errors="replace")):
        assert time.monotonic() < deadline, f"{text!r} never logged: {printed[-2000:]}"
        time.sleep(0.1)
    return printed


def test_a_policy_file_broken_while_serving_keeps_the_last_good_policy(demo_index: Path, tmp_path: Path) -> None:
    policy, log = write_test_policy(tmp_path / "policy.json"), tmp_path / "serve.log"
    good = policy.read_text(encoding="utf-8")
    args = ["--root", str(tmp_path), "--index", str(demo_index), "--policy", str(policy)]
    with serve_subprocess(args, {"TOOLREC_API_KEY": API_KEY}, log_path=log) as (base, _):
        assert _slack_first(base) == "Slack.SendMessage"

        policy.write_text(good[: len(good) // 2], encoding="utf-8")  # a hand edit saved half-way: not JSON
        assert _slack_first(base) == "Slack.SendMessage"  # the last good policy, not a 503
        _wait_for(log, f"cannot read policy file {policy}: not JSON")

        broken = json.loads(good)
        broken["gateways"] = BAD_FIELDS["gateways"]
        broken["access_rules"].append({"rule_id": "x", "subject": "demo-user", "effect": "deny", "tools": ["Slack.*"]})
        policy.write_text(json.dumps(broken), encoding="utf-8")
        assert _slack_first(base) == "Slack.SendMessage"  # the deny in the broken file is not half-applied either
        printed = _wait_for(log, NAMED[0])
        assert NAMED[1] in printed and "last good policy" in printed

        del broken["gateways"]
        policy.write_text(json.dumps(broken), encoding="utf-8")  # fixed: the new rule applies from the next request
        assert not _slack_first(base).startswith("Slack.")
