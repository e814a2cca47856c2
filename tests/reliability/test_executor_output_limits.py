"""What a tool answers is read only up to the output limit, and the server's memory stays near it (issue 22 items 1
and 2): the http executor read a worker's whole body before checking its 5 MB limit (a 256 MB answer grew the
server by ~500 MB), error bodies too, and the mcp executor had no limit at all (a 12 MB text came back whole).

Black-box: ``toolrec serve`` in a subprocess (its peak resident memory read from /proc), a real HTTP worker that
streams as fast as it is read, and an upstream MCP server built with the SDK, all on 127.0.0.1.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from build_index.build import index_tools
from build_index.model_prepare import MODEL_ID
from build_index.ops.loopback import serve_subprocess
from build_index.publish import publish
from handler.catalog.tool import Executor, Tool
from handler.execute.bounded_output import MAX_OUTPUT_BYTES
from handler.policy.file_store import query_log_file
from handler.policy.keys import hash_key
from handler.ranking.query import Embedder
from tests.support.servers import serve
from tests.support.workers import MEBIBYTE, http_worker_app, large_text_mcp_app

KEY = "trk_output-limits-0123456789abcdef012345"
USER = "olga"
GATEWAY = "direct"
STREAMED_MIB = 256  # the probe's size: far past the limit, and still streamed in a second or two on loopback
UPSTREAM_TEXT = 12 * MEBIBYTE  # the probe's upstream answer
# The limit, the body read into it, its decoded copy and the response built from it: a few times the limit, far
# from the hundreds of MB that buffering cost (measured: 502 MB before, under 6 MB now; docs/security.md).
PEAK_GROWTH_BOUND_MB = 6 * MAX_OUTPUT_BYTES / MEBIBYTE


@dataclass
class Stack:
    base: str
    pid: int
    worker_calls: list[dict[str, Any]]
    query_log: Path

    def post(self, path: str, body: Any, **headers: str) -> httpx.Response:
        all_headers = {"Authorization": f"Bearer {KEY}", **headers}
        return httpx.post(f"{self.base}{path}", json=body, headers=all_headers, timeout=60)

    def execute(self, tool: str, inputs: dict[str, Any], query_id: str | None = None) -> dict[str, Any]:
        body = {"tool_name": tool, "input": inputs, "user_id": USER, **({"query_id": query_id} if query_id else {})}
        response = self.post("/v1/tools/execute", body)
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer

    def peak_growth_mb(self, action: Callable[[], Any]) -> tuple[Any, float]:
        """What ``action`` returns, and how far the server's resident memory rose above its level before it."""
        Path(f"/proc/{self.pid}/clear_refs").write_text("5")  # resets the peak (VmHWM) to the current RSS
        before = _status_kib(self.pid, "VmRSS")
        result = action()
        growth = (_status_kib(self.pid, "VmHWM") - before) / 1024
        print(f"server peak memory growth: {growth:.1f} MB")  # the figure docs/security.md quotes
        return result, growth

    def outcomes_logged(self, query_id: str) -> list[str]:
        lines = [json.loads(line) for line in self.query_log.read_text(encoding="utf-8").splitlines()]
        return [e["record"]["outcome"] for e in lines if e["kind"] == "execution" and e["query_id"] == query_id]


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    raise AssertionError(f"no {field} for process {pid}")


@pytest.fixture(scope="module")
def stack(embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    root = tmp_path_factory.mktemp("output-limits")
    calls: list[dict[str, Any]] = []
    with serve(http_worker_app(calls)) as worker, serve(large_text_mcp_app()) as upstream:
        stream = Executor(kind="http", target=f"{worker}/stream", timeout_s=20)
        text = Executor(kind="mcp", target=f"{upstream}/mcp", tool="text", timeout_s=20)
        tools = [
            Tool(name="Dump.Stream", app="Dump", description="Stream a data dump of any size.",
                 input_schema={"type": "object"}, executor=stream),
            Tool(name="Dump.Text", app="Dump", description="Answer a long text from the upstream server.",
                 input_schema={"type": "object"}, executor=text),
        ]  # fmt: skip
        publish(index_tools(tools, embedder, MODEL_ID, progress=False), str(root / "index"))
        policy = {
            "version": 1,
            "gateways": [{"gateway_id": GATEWAY, "allowed": ["*"], "recommendation": "off"}],
            "access_rules": [{"rule_id": "all", "subject": "*", "effect": "allow", "tools": ["*"]}],
            "api_keys": [{"key_id": "limits", "key_hash": hash_key(KEY)}],
        }
        (root / "policy.json").write_text(json.dumps(policy))
        args = ["--root", str(root), "--index", str(root / "index"), "--policy", str(root / "policy.json")]
        with serve_subprocess(args, {"TOOLREC_API_KEY": KEY}) as (base, process):
            yield Stack(base, process.pid, calls, query_log_file(root / "policy.json"))


def _ran_but_too_large(answer: dict[str, Any], tool: str) -> None:
    assert answer["success"] is False and answer["output"] is None, str(answer)[:300]
    assert answer["error"]["name"] == "executor_unavailable", answer["error"]
    message = answer["error"]["message"]
    assert f"{tool} ran" in message and f"more than {MAX_OUTPUT_BYTES:,} bytes" in message, message


def test_a_worker_streaming_far_past_the_limit_is_cut_just_past_it(stack: Stack) -> None:
    within = stack.execute("Dump.Stream", {"mebibytes": 1})  # also warms the executor up before measuring
    assert within["success"] is True and len(within["output"]["blob"]) == MEBIBYTE
    before = len(stack.worker_calls)
    started = time.monotonic()
    answer, growth = stack.peak_growth_mb(lambda: stack.execute("Dump.Stream", {"mebibytes": STREAMED_MIB}))
    _ran_but_too_large(answer, "Dump.Stream")
    assert growth < PEAK_GROWTH_BOUND_MB, f"the server grew {growth:.0f} MB reading a {STREAMED_MIB} MiB answer"
    assert time.monotonic() - started < 5
    assert len(stack.worker_calls) == before + 1  # it ran once; nothing ran it again


def test_an_error_body_far_past_the_limit_is_cut_too(stack: Stack) -> None:
    stack.execute("Dump.Stream", {"mebibytes": 1, "status": 502})
    answer, growth = stack.peak_growth_mb(
        lambda: stack.execute("Dump.Stream", {"mebibytes": STREAMED_MIB, "status": 502})
    )
    assert answer["success"] is False and answer["error"]["name"] == "tool_error", answer
    message = answer["error"]["message"]
    assert "HTTP 502" in message and f"more than {MAX_OUTPUT_BYTES:,} bytes" in message, message
    assert growth < PEAK_GROWTH_BOUND_MB, f"the server grew {growth:.0f} MB reading a {STREAMED_MIB} MiB error"


def test_an_upstream_mcp_answer_past_the_limit_is_a_recorded_tool_error(stack: Stack) -> None:
    assert stack.execute("Dump.Text", {"size": 1000})["output"] == "x" * 1000  # warm, and within
    select = stack.post("/v1/tools/select", {"tasks": ["answer a long text from the upstream"], "user_id": USER})
    query_id = select.json()["query_id"]
    answer, growth = stack.peak_growth_mb(lambda: stack.execute("Dump.Text", {"size": UPSTREAM_TEXT}, query_id))
    _ran_but_too_large(answer, "Dump.Text")
    assert growth < PEAK_GROWTH_BOUND_MB, f"the server grew {growth:.0f} MB reading a 12 MiB upstream answer"
    assert stack.outcomes_logged(query_id) == ["executor_unavailable"]


def test_over_mcp_an_upstream_answer_past_the_limit_is_an_is_error_result(stack: Stack) -> None:
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "Dump_Text", "arguments": {"size": UPSTREAM_TEXT}},
    }
    response = stack.post(f"/mcp/{GATEWAY}", call, **{"X-Toolrec-User": USER})
    assert response.status_code == 200, response.text[:300]
    result = response.json()["result"]
    assert result["isError"] is True, str(result)[:300]
    assert "Dump.Text ran" in result["structuredContent"]["error"]["message"], result
