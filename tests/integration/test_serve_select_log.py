"""`toolrec serve` logs each select as it logs each execution: its query id, number of tasks, latency and empty
reasons, and the tasks' text only where the operator turned that on (issue 34 item 4)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from build_index.ops.loopback import serve_subprocess
from build_index.ops.serve import DEMO_USER, prepare_embedded_default
from handler.inference.embedder import OnnxEmbedder

pytestmark = pytest.mark.slow

KEY = "trk_select-log-test-key"
TASKS = ["send a Slack message to the ops channel", "rent a car in Lisbon for the weekend"]


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory, embedder: OnnxEmbedder) -> Path:
    root = tmp_path_factory.mktemp("select-log") / ".toolrec"
    prepare_embedded_default(root, embedder, KEY)
    return root


def _select_logged(root: Path, log_path: Path, *flags: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Serve, send one select, stop: the select's answer and the one log line that names its query id."""
    with serve_subprocess(
        ["--root", str(root), *flags], {"TOOLREC_API_KEY": KEY, **(env or {})}, log_path=log_path
    ) as (
        url,
        _,
    ):
        body = {"tasks": TASKS, "user_id": DEMO_USER}
        answer = httpx.post(f"{url}/v1/tools/select", json=body, headers={"Authorization": f"Bearer {KEY}"})
        assert answer.status_code == 200, answer.text
    query_id = answer.json()["query_id"]
    lines = [json.loads(line) for line in log_path.read_text().splitlines() if line.startswith("{")]
    (logged,) = [line for line in lines if line.get("message") == "tools selected"]
    assert logged["query_id"] == query_id
    return {"answer": answer.json(), "logged": logged, "log": log_path.read_text()}


def test_each_select_is_logged_without_its_text(root: Path, tmp_path: Path) -> None:
    seen = _select_logged(root, tmp_path / "serve.log")
    logged = seen["logged"]
    assert logged["tasks"] == 2 and logged["level"] == "INFO"
    assert 0 < logged["latency_ms"] < 10_000
    reasons = [result.get("empty_reason") for result in seen["answer"]["results"]]
    assert logged["empty_reasons"] == reasons == [None, "no_match"]
    assert "task_text" not in logged
    assert all(task not in seen["log"] for task in TASKS)  # what end users typed is nowhere in the log


@pytest.mark.parametrize(("flags", "env"), [(("--log-tasks",), {}), ((), {"TOOLREC_LOG_TASKS": "true"})])
def test_the_operator_may_log_the_tasks_text(
    root: Path, tmp_path: Path, flags: tuple[str, ...], env: dict[str, str]
) -> None:
    assert _select_logged(root, tmp_path / "serve.log", *flags, env=env)["logged"]["task_text"] == TASKS
