"""A large build (handler/ranking/coarse.py) through the real build, publish and load: it stores coarse codes,
every file of it is checked like the others, and its two-stage ranking answers as the exhaustive scan does. The
size that makes a build large is lowered here so the demo catalog (96 tools) is one."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from build_index.build import index_tools
from build_index.model_prepare import MODEL_ID
from build_index.publish import publish
from handler.errors import IntegrityError
from handler.index import format as index_format
from handler.index.format import BUILDS, COARSE_ARRAYS, COARSE_MOMENT_ARRAYS, MANIFEST
from handler.index.load import load_build
from handler.inference.embedder import OnnxEmbedder
from handler.ranking import coarse, retriever
from handler.ranking.fusion import moments
from handler.ranking.recommend import recommend
from handler.ranking.retriever import RankingIndex
from tests.support.serving import demo_tools

TASKS = Path(__file__).parents[1] / "acceptance" / "demo_tasks.jsonl"


def built_at(tmp_path: Path, embedder: OnnxEmbedder, name: str) -> Path:
    manifest = publish(index_tools(demo_tools(), embedder, MODEL_ID, progress=False), str(tmp_path / name))
    return tmp_path / name / BUILDS / manifest.build_id


@pytest.fixture
def large_build(tmp_path: Path, embedder: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(index_format, "COARSE_MIN_TOOLS", 50)
    monkeypatch.setattr(coarse, "MIN_CANDIDATES", 24)  # a quarter of the catalog rescored, the rest estimated
    return built_at(tmp_path, embedder, "large")


def test_a_large_build_stores_coarse_codes_and_ranks_as_the_exhaustive_scan(
    large_build: Path, embedder: OnnxEmbedder
) -> None:
    manifest = json.loads((large_build / MANIFEST).read_text())
    assert manifest["coarse_dimensions"] == coarse.COARSE_DIMENSIONS and manifest["coarse_moments"]
    assert {f"{name}.npy" for name in COARSE_ARRAYS + COARSE_MOMENT_ARRAYS} <= set(manifest["files"])
    assert np.load(large_build / "vectors.npy").flags.c_contiguous  # rows are gathered, not scanned
    ranking = load_build(large_build, embedder.fingerprint).ranking
    assert ranking.coarse is not None and ranking.coarse.second_moment is not None
    assert answered_as_exhaustive(ranking, embedder) == len(demo_tasks())


def test_the_semantic_mean_and_spread_are_the_closed_forms_where_every_tool_is_allowed(
    large_build: Path, embedder: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    ranking = load_build(large_build, embedder.fingerprint).ranking
    given: list[tuple[float, float] | None] = []
    read: list[tuple[float, float] | None] = []
    real_fusion = retriever.shortlist_fusion

    def fusion_spy(*args: Any, **kwargs: Any) -> Any:
        given.append(kwargs["semantic_moments"])
        semantic, allowed = args[2], args[3]  # every cosine exact here: the demo's tools are all candidates
        read.append(moments(semantic[allowed], int(allowed.sum())))
        return real_fusion(*args, **kwargs)

    monkeypatch.setattr(retriever, "shortlist_fusion", fusion_spy)
    task = "send a message to the #eng channel on slack"
    recommend(ranking, embedder, task, None, 5)
    assert given[0] is not None and read[0] is not None
    np.testing.assert_allclose(given[0], read[0], rtol=1e-6)  # the whole catalog's, without reading its scores
    allowed = np.ones(len(ranking), dtype=bool)
    allowed[::2] = False
    recommend(ranking, embedder, task, None, 5, allowed)
    assert given[-1] is None  # a caller's allowed tools: the fusion reads them from their scores


def test_a_coarse_build_written_before_its_moments_loads_and_ranks(large_build: Path, embedder: OnnxEmbedder) -> None:
    manifest = json.loads((large_build / MANIFEST).read_text())
    del manifest["coarse_moments"], manifest["files"]["coarse_second_moment.npy"]
    (large_build / "coarse_second_moment.npy").unlink()
    (large_build / MANIFEST).write_text(json.dumps(manifest))
    ranking = load_build(large_build, embedder.fingerprint).ranking
    assert ranking.coarse is not None and ranking.coarse.second_moment is None
    # The mean and spread read from the scores, as before: the estimates enter them, and may move a near tie.
    assert answered_as_exhaustive(ranking, embedder) >= 0.95 * len(demo_tasks())


def demo_tasks() -> list[str]:
    return [json.loads(line)["task"] for line in TASKS.read_text().splitlines()]


def answered_as_exhaustive(ranking: RankingIndex, embedder: OnnxEmbedder) -> int:
    """How many demo tasks the two-stage ranking answers with the exhaustive scan's tools, in its order."""
    exhaustive = replace(ranking, coarse=None)
    same = 0
    for task in demo_tasks():
        two_stage = recommend(ranking, embedder, task, None, 5)
        full = recommend(exhaustive, embedder, task, None, 5)
        same += [h.index for h in two_stage.hits] == [h.index for h in full.hits]
    return same


@pytest.mark.parametrize("name", [f"{name}.npy" for name in COARSE_ARRAYS + COARSE_MOMENT_ARRAYS])
def test_a_corrupted_coarse_file_is_refused(large_build: Path, embedder: OnnxEmbedder, name: str) -> None:
    data = bytearray((large_build / name).read_bytes())
    data[-8] ^= 0xFF
    (large_build / name).write_bytes(bytes(data))
    with pytest.raises(IntegrityError, match=rf"{name} does not match its sha256"):
        load_build(large_build, embedder.fingerprint)


def test_a_small_build_is_what_it_was_before(tmp_path: Path, embedder: OnnxEmbedder) -> None:
    build = built_at(tmp_path, embedder, "small")
    manifest = json.loads((build / MANIFEST).read_text())
    assert "coarse_dimensions" not in manifest  # readable by a toolrec from before coarse builds
    assert "coarse_moments" not in manifest
    assert not any((build / f"{name}.npy").exists() for name in COARSE_ARRAYS + COARSE_MOMENT_ARRAYS)
    assert np.load(build / "vectors.npy").flags.f_contiguous
    assert load_build(build, embedder.fingerprint).ranking.coarse is None
