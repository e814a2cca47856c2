"""A large build (handler/ranking/coarse.py) through the real build, publish and load: it stores coarse codes,
every file of it is checked like the others, and its two-stage ranking answers as the exhaustive scan does. The
size that makes a build large is lowered here so the demo catalog (96 tools) is one."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from build_index.build import index_tools
from build_index.model_prepare import MODEL_ID
from build_index.publish import publish
from handler.errors import IntegrityError
from handler.index import format as index_format
from handler.index.format import BUILDS, COARSE_ARRAYS, MANIFEST
from handler.index.load import load_build
from handler.inference.embedder import OnnxEmbedder
from handler.ranking import coarse
from handler.ranking.recommend import recommend
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
    assert manifest["coarse_dimensions"] == 128
    assert {f"{name}.npy" for name in COARSE_ARRAYS} <= set(manifest["files"])
    assert np.load(large_build / "vectors.npy").flags.c_contiguous  # rows are gathered, not scanned
    ranking = load_build(large_build, embedder.fingerprint).ranking
    assert ranking.coarse is not None
    exhaustive = replace(ranking, coarse=None)
    tasks = [json.loads(line)["task"] for line in TASKS.read_text().splitlines()]
    same = 0
    for task in tasks:
        two_stage = recommend(ranking, embedder, task, None, 5)
        full = recommend(exhaustive, embedder, task, None, 5)
        # The same tools in the same order; scores may differ in their last digits, since the tools left with an
        # estimate enter the mean and spread the fusion standardizes by.
        same += [h.index for h in two_stage.hits] == [h.index for h in full.hits]
    assert same >= 0.95 * len(tasks), f"{same} of {len(tasks)} tasks answered as the exhaustive scan"


@pytest.mark.parametrize("name", [f"{name}.npy" for name in COARSE_ARRAYS])
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
    assert not any((build / f"{name}.npy").exists() for name in COARSE_ARRAYS)
    assert np.load(build / "vectors.npy").flags.f_contiguous
    assert load_build(build, embedder.fingerprint).ranking.coarse is None
