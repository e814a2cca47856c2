"""`explain` over real HTTP on a build that learned from use (PRODUCT.md §2 "Why", §6): a suggestion that usage
moved says by how much, as the query log taught it; the same request on the build without usage says nothing of it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx

from build_index.cli import main as toolrec
from build_index.ops.serve import DEMO_DIR, demo_policy
from handler.composition import build_app
from handler.inference.embedder import OnnxEmbedder
from handler.policy.file_store import FilePolicyStore, write_document
from handler.policy.model import ExecutionRecord, QueryRecord
from tests.support.servers import serve
from tests.support.serving import API_KEY, file_settings, write_test_policy

TASK = "tell the on-call crew the database failover finished"
RAN = ("Slack.SendMessage", "Jira.TransitionIssue")  # run together for the task: each the other's companion


def query_log(directory: Path) -> Path:
    """The local query log after one select and both tools run for it, through each of three API keys on three days
    (the evidence the query log needs: build_index/usage/evidence.py, three keys over at least a day)."""
    policy = directory / "policy.json"
    write_document(policy, demo_policy())
    store = FilePolicyStore(policy)
    for day, key in enumerate(("k1", "k2", "k3")):
        now = datetime.now(UTC) - timedelta(days=2 - day)
        created = QueryRecord(query_id=f"q-{key}", user_id="ada", key_id=key, tasks=(TASK,), recommended=(RAN,),
                              created_at=now, expires_at=int(datetime.now(UTC).timestamp()) + 3600)  # fmt: skip
        store.put_query(created)
        for tool in RAN:
            run = ExecutionRecord(tool_name=tool, user_id="ada", key_id=key, at=now, outcome="ok")
            store.record_execution(f"q-{key}", run)
    return store.query_log_path


def explained(index: Path, tmp_path: Path, embedder: OnnxEmbedder) -> dict[str, dict[str, Any]]:
    """Each suggestion's `why` for TASK, by tool name, from the app serving ``index``."""
    policy = write_test_policy(tmp_path / f"{index.name}-policy.json")
    app = build_app(file_settings(str(index), policy, tmp_path / f"{index.name}-cache"), embedder=embedder)
    request = {"tasks": [TASK], "user_id": "demo-user", "top_k": 10, "explain": True}
    with serve(app) as base:
        response = httpx.post(f"{base}/v1/tools/select", json=request, headers={"Authorization": f"Bearer {API_KEY}"})
    assert response.status_code == 200, response.text
    return {s["tool_name"]: s["why"] for s in response.json()["results"][0]["suggestions"]}


def test_a_suggestion_usage_moved_says_how(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    catalog = str(DEMO_DIR / "tools.jsonl")
    cold, warm = tmp_path / "cold", tmp_path / "warm"
    assert toolrec(["build", "--catalog", catalog, "--out", str(cold), "--quiet"]) == 0
    log = query_log(tmp_path)
    assert toolrec(["build", "--catalog", catalog, "--usage", str(log), "--out", str(warm), "--quiet"]) == 0

    before, after = explained(cold, tmp_path, embedder), explained(warm, tmp_path, embedder)
    assert not any("usage" in why for why in before.values()), before
    first, second = (after[name].get("usage", {}) for name in RAN)
    assert first.get("past_tasks", 0) > 0, after  # its past task is this very task: its similarity was raised
    assert after[RAN[0]]["similarity"] == before[RAN[0]]["similarity"]  # the text's, though the score reads it raised
    assert second.get("companions", 0) > 0, after  # run beside the best tool for this task
    moved = {name for name, why in after.items() if "usage" in why}
    assert moved <= set(RAN), moved  # usage moves only what it learned
    for why in after.values():
        assert all(value > 0 for value in why.get("usage", {}).values()), why  # each part only when nonzero
