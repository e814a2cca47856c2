"""The embedded default's demo index: built once, and rebuilt when the shipped model changes under it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from build_index.serve import ensure_demo_index
from handler.embedder import OnnxEmbedder
from handler.index_store import LocalIndexStore, load_latest


@dataclass
class AnotherModel:
    """Other vectors under another fingerprint: what an upgrade that ships a new model looks like."""

    inner: OnnxEmbedder
    fingerprint: str = "f" * 64

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions

    def embed(self, text: str) -> np.ndarray:
        return -self.inner.embed(text)


def test_the_demo_is_built_once_per_model(embedder: OnnxEmbedder, tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    assert ensure_demo_index(index_dir, embedder) is True
    first = LocalIndexStore(index_dir).latest_build_id()
    assert ensure_demo_index(index_dir, embedder) is False
    assert LocalIndexStore(index_dir).latest_build_id() == first

    upgraded = AnotherModel(embedder)
    assert ensure_demo_index(index_dir, upgraded) is True  # the old demo would be refused: rebuilt
    second = LocalIndexStore(index_dir).latest_build_id()
    assert second != first
    assert len(load_latest(LocalIndexStore(index_dir), index_dir, upgraded.fingerprint).ranking) == 96
    assert ensure_demo_index(index_dir, upgraded) is False


def test_a_damaged_demo_is_rebuilt(embedder: OnnxEmbedder, tmp_path: Path) -> None:
    index_dir = tmp_path / "index"
    index_dir.mkdir()
    (index_dir / "LATEST").write_text("not-a-build")
    assert ensure_demo_index(index_dir, embedder) is True
    assert len(load_latest(LocalIndexStore(index_dir), index_dir, embedder.fingerprint).ranking) == 96
