"""Checking a call's input against its tool's schema is bounded in time, whatever the schema and the input (issue 22
item 3): jsonschema checks ``uniqueItems`` pair by pair when the items do not sort (a 10,000-item array in a 59 KB
body took seconds of CPU per call, and eight at once slowed every select 100×), and only the regex keywords were
time-limited. Now ``uniqueItems`` is O(n log n), one budget covers the whole check, and past it the call is a 400
saying so while the rest of the server answers as usual.

Real servers on loopback: toolrec (the real composition root) and the test HTTP worker.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from build_index.build import index_tools
from build_index.model_prepare import MODEL_ID
from build_index.publish import publish
from handler.catalog.tool import Executor, Tool
from handler.composition import build_app
from handler.execute.validation_budget import VALIDATION_BUDGET_S
from handler.policy.keys import hash_key
from handler.ranking.query import Embedder
from tests.reliability.conftest import assert_error_body
from tests.support.servers import serve
from tests.support.serving import file_settings
from tests.support.workers import http_worker_app

KEY = "trk_validation-budget-0123456789abcdef01"
USER = "ivan"
CONCURRENT = 4
# One string among integers: jsonschema cannot sort the items, and compares every pair (50 million here).
UNSORTABLE_IDS = ["a", *range(9_999)]
# 300 branches for each of 5,000 items: 1.5 million subschema checks, slow without any regex or uniqueItems.
BRANCHES = 300
SLOW_ITEMS = [BRANCHES - 1] * 5_000


@dataclass
class Setup:
    client: httpx.Client
    worker_calls: list[dict[str, Any]]

    def execute(self, tool: str, inputs: dict[str, Any]) -> tuple[httpx.Response, float]:
        started = time.perf_counter()
        response = self.client.post("/v1/tools/execute", json={"tool_name": tool, "input": inputs, "user_id": USER})
        return response, time.perf_counter() - started

    def select(self) -> tuple[httpx.Response, float]:
        started = time.perf_counter()
        response = self.client.post("/v1/tools/select", json={"tasks": ["tag the records"], "user_id": USER})
        return response, time.perf_counter() - started


@pytest.fixture(scope="module")
def setup(embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    root = tmp_path_factory.mktemp("validation-budget")
    calls: list[dict[str, Any]] = []
    with serve(http_worker_app(calls)) as worker:
        echo = Executor(kind="http", target=f"{worker}/echo", timeout_s=10)
        unique = {"type": "array", "uniqueItems": True}
        branching = {"type": "array", "items": {"anyOf": [{"const": n} for n in range(BRANCHES)]}}
        tools = [
            Tool(name="Records.Tag", app="Records", description="Tag records by their ids.",
                 input_schema={"type": "object", "properties": {"ids": unique}}, executor=echo),
            Tool(name="Records.Classify", app="Records", description="Classify records by their codes.",
                 input_schema={"type": "object", "properties": {"codes": branching}}, executor=echo),
        ]  # fmt: skip
        publish(index_tools(tools, embedder, MODEL_ID, progress=False), str(root / "index"))
        policy = {
            "version": 1,
            "access_rules": [{"rule_id": "all", "subject": "*", "effect": "allow", "tools": ["*"]}],
            "api_keys": [{"key_id": "budget", "key_hash": hash_key(KEY)}],
        }
        (root / "policy.json").write_text(json.dumps(policy))
        settings = file_settings(str(root / "index"), root / "policy.json", root / "cache")
        with serve(build_app(settings, embedder=embedder)) as base, httpx.Client(base_url=base, timeout=10) as client:
            client.headers["Authorization"] = f"Bearer {KEY}"
            yield Setup(client, calls)


def test_unique_items_of_an_unsortable_array_are_checked_quickly_and_starve_nothing(setup: Setup) -> None:
    assert len(json.dumps({"ids": UNSORTABLE_IDS})) < 60_000  # within the 64 KB body limit, as the probe's was
    usual = min(setup.select()[1] for _ in range(3))
    with ThreadPoolExecutor(max_workers=CONCURRENT) as pool:
        pending = [pool.submit(setup.execute, "Records.Tag", {"ids": UNSORTABLE_IDS}) for _ in range(CONCURRENT)]
        during, during_s = setup.select()
        answers = [future.result() for future in pending]
    for response, seconds in answers:
        assert response.status_code == 200 and response.json()["success"] is True, response.text[:300]
        assert seconds < 3.0, seconds
    assert during.status_code == 200 and during_s < max(2.0, 10 * usual), (during_s, usual)


def test_a_duplicate_is_still_found_and_named(setup: Setup) -> None:
    before = len(setup.worker_calls)
    response, _ = setup.execute("Records.Tag", {"ids": [*UNSORTABLE_IDS[:500], {"b": [1, 2], "a": True}, 7.0]})
    assert response.status_code == 400, response.text[:300]
    body = response.json()
    assert_error_body(400, body)
    [problem] = body["field_errors"]
    assert problem["field"] == "ids" and "non-unique" in problem["message"], problem
    assert "8 and 501" in problem["message"], problem  # 7 (item 8) and 7.0 (item 501) are equal in JSON
    assert len(setup.worker_calls) == before  # nothing ran


def test_validation_past_the_budget_is_a_400_saying_so_and_starves_nothing(setup: Setup) -> None:
    before = len(setup.worker_calls)
    with ThreadPoolExecutor(max_workers=CONCURRENT) as pool:
        pending = [pool.submit(setup.execute, "Records.Classify", {"codes": SLOW_ITEMS}) for _ in range(CONCURRENT)]
        during, during_s = setup.select()
        answers = [future.result() for future in pending]
    for response, seconds in answers:
        assert response.status_code == 400, response.text[:300]
        body = response.json()
        assert_error_body(400, body)
        [problem] = body["field_errors"]
        assert f"took over {VALIDATION_BUDGET_S:g} s" in problem["message"] and "not run" in problem["message"]
        assert seconds < VALIDATION_BUDGET_S + 2.0, seconds
    assert during.status_code == 200 and during_s < VALIDATION_BUDGET_S + 2.0, during_s
    assert len(setup.worker_calls) == before


def test_a_large_input_within_the_budget_is_checked_and_runs(setup: Setup) -> None:
    response, _ = setup.execute("Records.Classify", {"codes": SLOW_ITEMS[:40]})
    assert response.status_code == 200 and response.json()["output"] == {"received": {"codes": SLOW_ITEMS[:40]}}
