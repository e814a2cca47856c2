"""A select costs in proportion to its size, whatever its words (issue 33 item 1, PRODUCT.md §2 "Errors"): one
4,000-letter unknown word as context took 2 s per task (16 tasks: 30 to 50 s) because every cut of the word was
analyzed in full to find two catalog words joined; a run like "a-a-a-..." cost the value splitter the square of its
length.

Each probe is timed against an ordinary request of the same shape (the same number of tasks and characters, in plain
words) on the same server, so a loaded machine slows both alike; a probe is timed twice before it fails, as noise
only ever adds time.

Real server on loopback: toolrec's own composition root over the demo index.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from handler.composition import build_app
from handler.ranking.query import Embedder
from tests.support.servers import serve
from tests.support.serving import API_KEY, file_settings, write_test_policy

USER = "bob"
TASK = "send a Slack message to the ops channel"
PLAIN_CONTEXT = ("the weekly notes are ready and the team wants them posted where everyone reads them " * 60)[:4000]
PLAIN_TASK = ("post the weekly release notes to the team channel so everyone reads them today " * 20)[:1000]


def _body(tasks: list[str], context: str | None = None) -> dict[str, Any]:
    return {"tasks": tasks, "user_id": USER} | ({"context": context} if context is not None else {})


# (the probe, the ordinary request of its shape)
PROBES = {
    "one task, a 4,000-letter word as context": (_body([TASK], "q" * 4000), _body([TASK], PLAIN_CONTEXT)),
    "16 tasks, a 4,000-letter word as context": (_body([TASK] * 16, "q" * 4000), _body([TASK] * 16, PLAIN_CONTEXT)),
    "16 tasks, each a 1,000-letter word": (_body(["q" * 1000] * 16), _body([PLAIN_TASK] * 16)),
    "16 tasks and context, a-a-a-...": (
        _body(["a-" * 500] * 16, "a-" * 2000),
        _body([PLAIN_TASK] * 16, PLAIN_CONTEXT),
    ),
}


@pytest.fixture(scope="module")
def client(demo_index: Path, embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    root = tmp_path_factory.mktemp("request-cost")
    settings = file_settings(str(demo_index), write_test_policy(root / "policy.json"), root / "cache")
    with serve(build_app(settings, embedder=embedder)) as base, httpx.Client(base_url=base, timeout=120) as http:
        http.headers["Authorization"] = f"Bearer {API_KEY}"
        assert http.post("/v1/tools/select", json=_body([TASK])).status_code == 200  # warm: model, tables
        yield http


def _seconds(client: httpx.Client, body: dict[str, Any]) -> float:
    started = time.perf_counter()
    response = client.post("/v1/tools/select", json=body)
    elapsed = time.perf_counter() - started
    assert response.status_code == 200, response.text[:300]
    assert len(response.json()["results"]) == len(body["tasks"])
    return elapsed


@pytest.mark.parametrize("probe", list(PROBES))
def test_a_select_costs_no_more_than_an_ordinary_one_of_its_size(client: httpx.Client, probe: str) -> None:
    odd, ordinary = PROBES[probe]
    usual = min(_seconds(client, ordinary) for _ in range(2))
    bound = 2 * usual + 0.5
    spent = _seconds(client, odd)
    if spent >= bound:
        spent = min(spent, _seconds(client, odd))
    assert spent < bound, f"{probe}: {spent:.2f} s, an ordinary request of its size {usual:.2f} s"
