"""What the query log must show before learning from use moves an answer (docs/security.md "Learning from use"): a
burst from several keys is one piece of evidence (issue 33 item 4), and on a machine only its operator uses, the
README's local recipe learns from that operator's own runs (issue 34 item 5). Both through the real path: the
service over HTTP writes the query log, the CLI folds it, the service or the ranking answers from the new build."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from build_index.cli import main as toolrec
from handler.composition import build_app
from handler.index.store import LocalIndexStore, load_latest
from handler.inference.embedder import OnnxEmbedder
from handler.policy.keys import hash_key
from handler.ranking.recommend import recommend
from tests.support.docs import runnable_blocks
from tests.support.servers import serve
from tests.support.serving import demo_tools, file_settings
from tests.support.workers import http_worker_app

ACCEPTANCE = Path(__file__).parents[1] / "acceptance" / "demo_tasks.jsonl"
TIED = "send the standup notes to the team"
WORDINGS = [f"{TIED} {w}" for w in ("now", "today", "please", "asap")]
SMS_KEYS = [f"trk_burst-sms-{n}-0123456789abcdef" for n in range(3)]
TEAM_KEY = "trk_burst-team-0123456789abcdef0"


def write_catalog(path: Path, worker: str, runnable: str) -> None:
    """The demo catalog, with ``runnable`` given an executor (the worker's echo) and no connection to grant."""
    rows = [t.model_dump(mode="json", exclude_none=True) for t in demo_tools()]
    for row in rows:
        if row["name"] == runnable:
            row.pop("requirements", None)
            row["executor"] = {"kind": "http", "target": f"{worker}/echo"}
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


@contextmanager
def served(index: Path, policy: dict[str, Any], cache: Path, embedder: OnnxEmbedder) -> Iterator[str]:
    """The app over HTTP on a local index and policy file (its query log beside it), rereading the index each time."""
    policy_file = index.parent / "policy.json"
    policy_file.write_text(json.dumps(policy))
    settings = file_settings(str(index), policy_file, cache, index_refresh_seconds=0)
    with serve(build_app(settings, embedder=embedder)) as base:
        yield base


def post(base: str, key: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = httpx.post(f"{base}{path}", json=body, headers={"Authorization": f"Bearer {key}"}, timeout=60)
    assert response.status_code == 200, response.text
    answer: dict[str, Any] = response.json()
    return answer


def select_and_run(base: str, key: str, user: str, task: str, tool: str) -> None:
    """One select at top_k 20 that suggests ``tool``, then a successful run of it linked to that select."""
    found = post(base, key, "/v1/tools/select", {"tasks": [task], "user_id": user, "top_k": 20})
    assert tool in [s["tool_name"] for s in found["results"][0]["suggestions"]]
    execute = {"tool_name": tool, "input": {"to": "+15550100", "body": "notes"}, "user_id": user,
               "query_id": found["query_id"]}  # fmt: skip
    assert post(base, key, "/v1/tools/execute", execute)["success"] is True


def burst_policy() -> dict[str, Any]:
    """Three keys limited to gateway "sms" (Twilio only); a key of gateway "team" (Slack and Twilio)."""
    sms = [{"key_id": f"sms{n}", "key_hash": hash_key(key), "gateway_id": "sms"} for n, key in enumerate(SMS_KEYS)]
    return {
        "version": 1,
        "gateways": [
            {"gateway_id": "sms", "allowed": ["Twilio.*"], "recommendation": "on"},
            {"gateway_id": "team", "allowed": ["Slack.*", "Twilio.*"], "recommendation": "on"},
        ],
        "access_rules": [{"rule_id": "all", "subject": "*", "effect": "allow", "tools": ["*"]}],
        "api_keys": [*sms, {"key_id": "team", "key_hash": hash_key(TEAM_KEY), "gateway_id": "team"}],
    }


def team_first_answers(base: str) -> dict[str, str | None]:
    """Gateway team's first answer for the burst's task, its wordings and every demo acceptance task, 16 a select."""
    rows = [json.loads(line) for line in ACCEPTANCE.read_text().splitlines() if line.strip()]
    tasks = list(dict.fromkeys([TIED, *WORDINGS, *(r["task"] for r in rows)]))
    first: dict[str, str | None] = {}
    for start in range(0, len(tasks), 16):
        batch = tasks[start : start + 16]
        answer = post(base, TEAM_KEY, "/v1/tools/select", {"tasks": batch, "user_id": "vic"})
        for task, result in zip(batch, answer["results"], strict=True):
            first[task] = result["suggestions"][0]["tool_name"] if result["suggestions"] else None
    return first


def test_a_burst_from_three_keys_of_one_gateway_moves_no_first_answer(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    """Issue 33 item 4, the probe as it ran: three keys of gateway "sms", each 4 user ids x the same 4 wordings at
    top_k 20, each followed by a linked run of Twilio.SendSms (48 in a few seconds), then `toolrec refresh --usage`.
    Before, gateway "team" got Twilio.SendSms first instead of Slack.SendMessage for that task: three keys were
    enough. Now the burst is one piece of evidence, and every first answer of gateway "team" stays where it was."""
    with serve(http_worker_app()) as worker:
        write_catalog(tmp_path / "tools.jsonl", worker, "Twilio.SendSms")
        index = tmp_path / "deploy" / "index"
        assert toolrec(["build", "--catalog", str(tmp_path / "tools.jsonl"), "--out", str(index), "--quiet"]) == 0
        with served(index, burst_policy(), tmp_path / "cache", embedder) as base:
            before = team_first_answers(base)
            assert before[TIED] == "Slack.SendMessage"
            for key in SMS_KEYS:
                for user in range(4):
                    for wording in WORDINGS:
                        select_and_run(base, key, f"mallory{user}", wording, "Twilio.SendSms")
            cold = httpx.get(f"{base}/healthz").json()["build_id"]
            log = index.parent / "policy.queries.jsonl"
            assert toolrec(["refresh", "--index", str(index), "--usage", str(log)]) == 0
            assert httpx.get(f"{base}/healthz").json()["build_id"] != cold  # the refreshed build is the one served
            after = team_first_answers(base)
    moved = {task: (before[task], after[task]) for task in before if before[task] != after[task]}
    assert moved == {}


README_RECIPE = ".venv/bin/toolrec build --from-index"
MY_KEY = "trk_local-operator-0123456789abcdef"
USED_FOR = ["text the on-call engineer that the database failover finished", "text the on-call engineer that the "
            "backup restore is done", "text the on-call engineer that the deploy rolled back"]  # fmt: skip
RELATED = "text the on-call engineer that the cache cluster restarted"


def test_readmes_local_recipe_learns_from_one_operators_own_use(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    """Issue 34 item 5: one key, a few selects and linked runs on a served index laid out as `make serve` lays it
    out, then README's recipe as written. Before, it learned nothing ("not used: too_few_keys") and said nothing a
    user could act on. Now a build without the local setting says why and what to do, and the recipe's warm index
    ranks the tool used higher for a related task than the cold one does."""
    tool = "Twilio.SendSms"
    root = tmp_path / ".toolrec"
    with serve(http_worker_app()) as worker:
        write_catalog(tmp_path / "tools.jsonl", worker, tool)
        assert toolrec(["build", "--catalog", str(tmp_path / "tools.jsonl"), "--out", str(root / "index")]) == 0
        policy = {"version": 1, "gateways": [{"gateway_id": "default", "allowed": ["*"]}],
                  "access_rules": [{"rule_id": "everyone", "subject": "*", "effect": "allow", "tools": ["*"]}],
                  "api_keys": [{"key_id": "me", "key_hash": hash_key(MY_KEY)}]}  # fmt: skip
        with served(root / "index", policy, tmp_path / "cache", embedder) as base:
            for task in USED_FOR:
                select_and_run(base, MY_KEY, "demo-user", task, tool)

    recipe = [b for b in runnable_blocks() if b.page.name == "README.md" and b.first_line.startswith(README_RECIPE)]
    assert len(recipe) == 1
    script = recipe[0].text.replace(".venv/bin/", f"{Path(sys.executable).parent}/")
    ran = subprocess.run(["bash", "-e", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                         env=dict(os.environ), check=False)  # fmt: skip
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "3 execution groups, 3 distinct tasks for 1 tools; not used: none" in ran.stdout

    names = [t.name for t in demo_tools()]

    def rank(index: Path) -> int:
        loaded = load_latest(LocalIndexStore(index), index, embedder.fingerprint)
        hits = [names[h.index] for h in recommend(loaded.ranking, embedder, RELATED, None, 20).hits]
        return hits.index(tool)

    assert rank(root / "warm-index") < rank(root / "index")

    # The same log built without the local setting: nothing learned, and the build says why and what to do.
    log, out = ".toolrec/policy.queries.jsonl", str(tmp_path / "deployment-like")
    argv = ["build", "--from-index", str(root / "index"), "--usage", log, "--out", out, "--quiet"]
    plain = subprocess.run([str(Path(sys.executable).parent / "toolrec"), *argv], cwd=tmp_path, capture_output=True,
                           text=True, timeout=300, env=dict(os.environ), check=False)  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    assert "not used: {'too_few_keys': 3}" in plain.stdout
    assert "once 3 API keys ran it, over at least 1 day" in plain.stdout and "--single-operator" in plain.stdout
