"""The embedded default's demo index: built once, and rebuilt when the shipped model changes under it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from build_index.ops.serve import ensure_demo_index, prepare_embedded_default
from handler.index.store import LocalIndexStore, load_latest
from handler.inference.embedder import OnnxEmbedder
from handler.policy.file_store import read_document


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


def test_the_build_says_what_it_does(embedder: OnnxEmbedder, tmp_path: Path) -> None:
    said: list[str] = []
    assert ensure_demo_index(tmp_path / "index", embedder, said.append) is True
    assert said[0] == f"building the demo index (96 tools) in {tmp_path / 'index'} (first run, a few seconds)..."
    assert said[1].startswith("built the demo index in ")
    assert ensure_demo_index(tmp_path / "index", embedder, said.append) is False and len(said) == 2
    assert ensure_demo_index(tmp_path / "index", AnotherModel(embedder), said.append) is True
    assert "(the model changed, a few seconds)" in said[2]


def test_a_new_policy_for_ones_own_index_starts_empty(embedder: OnnxEmbedder, tmp_path: Path) -> None:
    """The demo's gateway, rules, apps and connections are the demo's: serving one's own catalog starts with
    nothing but the bootstrap key, and serve says what to add."""
    said: list[str] = []
    policy = tmp_path / "mine.json"
    ensure_demo_index(tmp_path / "idx", embedder)  # one's own catalog, published
    prepare_embedded_default(tmp_path / "root", embedder, "k-1", str(tmp_path / "idx"), policy, said.append)
    document = read_document(policy)
    assert (document.gateways, document.access_rules, document.apps, document.connections) == ([], [], [], [])
    assert len(document.api_keys) == 1
    assert any(f"created {policy} with no gateways or rules" in line for line in said)
    demo = tmp_path / "demo-policy.json"
    prepare_embedded_default(tmp_path / "root", embedder, "k-1", None, demo)
    assert len(read_document(demo).apps) == 13 and read_document(demo).connections  # the demo keeps its own
