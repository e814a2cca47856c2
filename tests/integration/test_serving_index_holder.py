"""The index holder: periodic LATEST checks, an atomic swap that leaves in-flight snapshots intact, and
recovery from a missing or broken index — on a real local index store."""

from __future__ import annotations

from pathlib import Path

import pytest

from handler.catalog.tool import Tool
from handler.errors import IndexUnavailableError, IntegrityError
from handler.index.holder import UNAVAILABLE_RETRY_SECONDS, IndexHolder
from handler.index.store import LocalIndexStore
from handler.inference.embedder import OnnxEmbedder
from handler.ranking.retriever import Method
from tests.integration.test_serving_aws import ROCKET
from tests.support.serving import demo_tools, publish_tools


class CountingStore(LocalIndexStore):
    checks = 0

    def latest_build_id(self) -> str:
        type(self).checks += 1
        return super().latest_build_id()


@pytest.fixture
def clock() -> list[float]:
    return [1000.0]


def make_holder(root: Path, embedder: OnnxEmbedder, clock: list[float], refresh: float = 60) -> IndexHolder:
    return IndexHolder(CountingStore(root), root / "cache", embedder.fingerprint, refresh, clock=lambda: clock[0])


def test_swap_is_atomic_and_periodic(tmp_path: Path, embedder: OnnxEmbedder, clock: list[float]) -> None:
    first = publish_tools(demo_tools(), str(tmp_path), embedder)
    holder = make_holder(tmp_path, embedder, clock)
    in_flight = holder.current()
    CountingStore.checks = 0

    second = publish_tools([*demo_tools(), ROCKET], str(tmp_path), embedder)
    clock[0] += 59
    assert holder.current().build_id == first and CountingStore.checks == 0  # not due yet: no storage call
    clock[0] += 1
    assert holder.current().build_id == second and CountingStore.checks > 0
    # The request that started before the swap still ranks on its own, complete snapshot.
    hits = in_flight.ranking.rank("send a slack message", None, 3, None, Method.BM25)
    assert in_flight.tools[hits[0].index].name == "Slack.SendMessage"
    assert len(in_flight.tools) == 96 and holder.health().tool_count == 97


def test_cold_start_without_an_index_recovers(tmp_path: Path, embedder: OnnxEmbedder, clock: list[float]) -> None:
    holder = make_holder(tmp_path, embedder, clock)
    holder.load()
    health = holder.health()
    assert not health.ok and "no index" in str(health.reason)
    with pytest.raises(IndexUnavailableError):
        holder.current()

    build_id = publish_tools(demo_tools(), str(tmp_path), embedder)
    clock[0] += UNAVAILABLE_RETRY_SECONDS  # retried sooner than the refresh interval while nothing is loaded
    assert holder.current().build_id == build_id and holder.health().ok


def test_a_corrupt_new_build_is_refused_and_the_old_one_kept(
    tmp_path: Path, embedder: OnnxEmbedder, clock: list[float]
) -> None:
    first = publish_tools(demo_tools(), str(tmp_path), embedder)
    holder = make_holder(tmp_path, embedder, clock, refresh=0)
    holder.load()
    second = publish_tools([*demo_tools(), ROCKET], str(tmp_path), embedder)
    (tmp_path / "builds" / second / "tools.jsonl").write_text("")

    assert holder.current().build_id == first
    assert holder.health().ok  # still serving; the failure is logged and retried


def test_an_invalid_record_is_refused_plainly_when_read(
    tmp_path: Path, embedder: OnnxEmbedder, clock: list[float]
) -> None:
    # Records are parsed on demand (handler/index/records.py): a build written around the build step's validation
    # loads, its valid records serve, and the invalid one is refused with a reason fit for a 503 body.
    versioned = Tool.model_construct(**{**ROCKET.model_dump(), "name": "Acme.LaunchRocket_v2.1"})
    publish_tools([*demo_tools(), versioned], str(tmp_path), embedder)
    holder = make_holder(tmp_path, embedder, clock)
    holder.load()
    tools = holder.current().tools
    assert tools[0] == demo_tools()[0]
    with pytest.raises(
        IntegrityError, match=r"\(Acme\.LaunchRocket_v2\.1\) is invalid \(1 problem\(s\)\); rebuild"
    ) as caught:
        tools[len(tools) - 1]
    assert "pydantic" not in str(caught.value)


def test_the_configured_threads_reach_the_int8_scorer(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    """TOOLREC_INTRA_OP_THREADS sets onnxruntime's threads for the query embedding and for the int8 scoring alike."""
    publish_tools(demo_tools()[:5], str(tmp_path), embedder)
    for threads in (1, 3):
        holder = IndexHolder(LocalIndexStore(tmp_path), tmp_path / "cache", embedder.fingerprint, 60, threads=threads)
        scorer = holder.current().ranking.dense
        assert scorer._session.get_session_options().intra_op_num_threads == threads
