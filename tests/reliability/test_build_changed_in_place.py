"""A served build changed in place does not take the server down (issue 33 item 3). The probe truncated the served
build's ``vectors.npy`` and ``tools.jsonl``, as ``cp`` over a build folder or ``rsync --inplace`` would, and sent a
select: the connection closed, and the process had died of SIGBUS (its arrays were mapped from the files that
shrank), logging nothing. A server maps its own copy of a local build, verified as it is made; it keeps answering
from that copy and logs that the published build changed under it.

A real ``toolrec serve`` in a subprocess, on the demo index it builds on its first run.
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx

from build_index.ops.loopback import serve_subprocess
from handler.index.format import BUILDS, LATEST

KEY = "trk_changed-in-place-0123456789abcdef"
TASKS = ["send a Slack message to the ops channel", "open a GitHub issue for the flaky test", "refund a Stripe charge"]


def _tops(base: str) -> list[str]:
    body = {"tasks": TASKS, "user_id": "demo-user"}
    response = httpx.post(f"{base}/v1/tools/select", json=body, headers={"Authorization": f"Bearer {KEY}"}, timeout=30)
    assert response.status_code == 200, response.text[:300]
    return [result["suggestions"][0]["tool_name"] for result in response.json()["results"]]


def test_a_build_truncated_under_the_server_is_survived_and_logged(tmp_path: Path) -> None:
    root, log_path = tmp_path / "root", tmp_path / "serve.log"
    env = {"TOOLREC_API_KEY": KEY, "TOOLREC_INDEX_REFRESH_SECONDS": "0"}  # LATEST checked on every request
    with serve_subprocess(["--root", str(root)], env, startup_timeout_s=120, log_path=log_path) as (base, process):
        before = _tops(base)
        build = root / "index" / BUILDS / (root / "index" / LATEST).read_text().strip()
        for name in ("vectors.npy", "tools.jsonl"):
            os.truncate(build / name, 0)  # what `cp` over the folder does first
        for _ in range(3):
            assert _tops(base) == before
        health = httpx.get(f"{base}/healthz", timeout=10)
        assert process.poll() is None, log_path.read_text(errors="replace")[-2000:]
    assert health.status_code == 200 and health.json()["build_id"] == build.name, health.text
    said = log_path.read_text(errors="replace")
    assert f"build {build.name}" in said and "changed in place" in said and "vectors.npy" in said, said[-2000:]
