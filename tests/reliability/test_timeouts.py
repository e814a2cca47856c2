"""A tool waits no longer than the deployment allows (issue 22): the serving function's Timeout is API Gateway's
30 s, and a catalog's timeout_s defaults to 30 s too, so a slow tool met Lambda's limit before toolrec's own and
the call ended with no answer and no record. ``TOOLREC_MAX_TOOL_SECONDS`` (25 s deployed, template.yaml) bounds
every tool's wait whatever its catalog says; tests/infra/test_template.py holds the template's numbers.

A real HTTP worker that answers after 3 s, and the app of the real composition root over HTTP.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx

from build_index.build import index_tools
from build_index.model_prepare import MODEL_ID
from build_index.publish import publish
from handler.catalog.tool import Executor, Tool
from handler.composition import build_app
from handler.policy.keys import hash_key
from handler.ranking.query import Embedder
from tests.support.servers import serve
from tests.support.serving import file_settings
from tests.support.workers import SLOW_SECONDS, http_worker_app

KEY = "trk_timeouts-0123456789abcdef0123456789"


def test_a_tool_waits_no_longer_than_the_deployment_allows(tmp_path: Path, embedder: Embedder) -> None:
    with serve(http_worker_app()) as worker:
        slow = Tool(
            name="Reports.Generate",
            app="Reports",
            description="Generate the monthly sales report.",
            input_schema={"type": "object"},
            executor=Executor(kind="http", target=f"{worker}/slow", timeout_s=30),  # the catalog allows 30 s
        )
        publish(index_tools([slow], embedder, MODEL_ID, progress=False), str(tmp_path / "index"))
        policy = {
            "version": 1,
            "access_rules": [{"rule_id": "all", "subject": "*", "effect": "allow", "tools": ["*"]}],
            "api_keys": [{"key_id": "t", "key_hash": hash_key(KEY)}],
        }
        (tmp_path / "policy.json").write_text(json.dumps(policy))
        cache = tmp_path / "cache"
        settings = file_settings(str(tmp_path / "index"), tmp_path / "policy.json", cache, max_tool_seconds=1.0)
        with serve(build_app(settings, embedder=embedder)) as base:
            started = time.monotonic()
            body = {"tool_name": "Reports.Generate", "input": {}, "user_id": "u"}
            answer = httpx.post(f"{base}/v1/tools/execute", json=body, headers={"Authorization": f"Bearer {KEY}"})
            waited = time.monotonic() - started
    assert answer.status_code == 200 and answer.json()["success"] is False, answer.text
    assert answer.json()["error"]["name"] == "executor_timeout", answer.text
    assert "within 1 s" in answer.json()["error"]["message"] and waited < SLOW_SECONDS, waited
