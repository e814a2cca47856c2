"""The pinned embedding model: golden vectors, build/query agreement, idempotent prepare, and refusals
(tampered or missing model) that tell the user exactly what to run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from build_index.build import index_tools
from build_index.model_prepare import MODEL_ID, SHIPPED_DIR, prepare
from handler.catalog.tool import Tool
from handler.errors import IntegrityError, ModelMissingError
from handler.inference.embedder import OnnxEmbedder
from handler.inference.model_files import MODEL_DIR_ENV, default_model_dir
from handler.ranking.dense import quantize
from handler.ranking.text import index_text

# Recorded from the prepared model (fingerprint 96075f13d9ea..., finetune-3) on 2026-12-01, on a CPU without
# AVX-512 VNNI. If these move, the model or its runtime changed and every published index is stale: rebuild
# them, then re-record deliberately.
# Tolerance: onnxruntime's int8 kernels round differently on CPUs with and without AVX-512 VNNI (measured:
# up to 0.011 per component, 0.014 in a cosine, cosine 0.992+ with the recorded vector); another model or a
# changed text formatting moves them by far more.
KERNEL_TOLERANCE = 0.02
GOLDEN = {
    "Slack Send Message: Send a message to a Slack channel or user.": [
        0.024975,
        -0.047814,
        -0.024582,
        0.026031,
        -0.04011,
        -0.054068,
        0.075884,
        0.077414,
    ],
    "let the team know the deploy finished": [
        0.027644,
        0.00238,
        -0.015692,
        -0.003995,
        -0.00902,
        -0.087436,
        -0.037773,
        -0.006768,
    ],
    "Weather Get Forecast: Get the weather forecast for a city.": [
        0.02283,
        0.002816,
        0.129462,
        0.129782,
        -0.081585,
        -0.032835,
        -0.034159,
        -0.015489,
    ],
}
GOLDEN_COSINES = {(0, 1): 0.249012, (0, 2): 0.036592, (1, 2): 0.039547}
HINT = "toolrec model prepare"
REPO_ROOT = Path(__file__).resolve().parents[2]


def test_golden_vectors(embedder: OnnxEmbedder) -> None:
    vectors = [embedder.embed(text) for text in GOLDEN]
    for vector, expected in zip(vectors, GOLDEN.values(), strict=True):
        assert vector.dtype == np.float32 and vector.shape == (384,)
        assert float(np.linalg.norm(vector)) == pytest.approx(1.0, abs=1e-5)
        np.testing.assert_allclose(vector[:8], expected, atol=KERNEL_TOLERANCE)
    for (i, j), cosine in GOLDEN_COSINES.items():
        assert float(vectors[i] @ vectors[j]) == pytest.approx(cosine, abs=KERNEL_TOLERANCE)


class Recording:
    """The build's embedder, recording each text it embeds and the float vector it returned."""

    def __init__(self, inner: OnnxEmbedder) -> None:
        self.inner = inner
        self.seen: dict[str, np.ndarray] = {}
        self.fingerprint, self.dimensions = inner.fingerprint, inner.dimensions

    def embed(self, text: str) -> np.ndarray:
        self.seen[text] = vector = self.inner.embed(text)
        return vector


def test_build_time_and_query_time_embeddings_agree_exactly(embedder: OnnxEmbedder) -> None:
    tools = [_tool(name, line) for name, line in _CATALOG]
    # The build runs in its own process with its own model session (here: another instance, more threads).
    recording = Recording(OnnxEmbedder(default_model_dir(), threads=2))
    built = index_tools(tools, recording, MODEL_ID, progress=False)
    texts = [index_text(t.name, t.description) for t in tools]
    assert list(recording.seen) == texts  # one shared formatter: the build embedded exactly these texts
    at_query_time = np.stack([embedder.embed(text) for text in texts])
    np.testing.assert_array_equal(np.stack([recording.seen[text] for text in texts]), at_query_time)
    expected = quantize(at_query_time)
    np.testing.assert_array_equal(built.vectors.values, expected.values)
    np.testing.assert_array_equal(built.vectors.scales, expected.scales)
    assert built.model.fingerprint == embedder.fingerprint


def test_parallel_build_embeds_exactly_like_the_query_path(
    embedder: OnnxEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = [_tool(name, line) for name, line in _CATALOG]
    monkeypatch.setattr("build_index.build.PARALLEL_MIN_TOOLS", 1)  # large catalogs go to worker processes
    built = index_tools(tools, embedder, MODEL_ID, progress=False, model_dir=default_model_dir(), workers=2)
    expected = quantize(np.stack([embedder.embed(index_text(t.name, t.description)) for t in tools]))
    np.testing.assert_array_equal(built.vectors.values, expected.values)
    np.testing.assert_array_equal(built.vectors.scales, expected.scales)


def test_prepare_is_idempotent(embedder: OnnxEmbedder, tmp_path: Path) -> None:
    model_dir = tmp_path / "model"
    shutil.copytree(default_model_dir(), model_dir)
    before = {p.name: p.stat().st_mtime_ns for p in model_dir.iterdir()}
    for _ in range(2):
        started = time.perf_counter()
        spec = prepare(model_dir)
        assert time.perf_counter() - started < 5.0
        assert spec.fingerprint == embedder.fingerprint
    assert {p.name: p.stat().st_mtime_ns for p in model_dir.iterdir()} == before


def test_prepare_refuses_an_altered_or_missing_shipped_file_by_name(embedder: OnnxEmbedder, tmp_path: Path) -> None:
    shipped = tmp_path / "shipped"
    shutil.copytree(SHIPPED_DIR, shipped)
    with (shipped / "model.onnx").open("r+b") as stream:
        stream.seek(2_000_000)
        byte = stream.read(1)
        stream.seek(2_000_000)
        stream.write(bytes([byte[0] ^ 0x01]))
    model_dir = tmp_path / "model"
    with pytest.raises(IntegrityError, match=r"model\.onnx has sha256 .* restore it from the repository"):
        prepare(model_dir, source=shipped)
    assert not model_dir.exists()
    shutil.copyfile(SHIPPED_DIR / "model.onnx", shipped / "model.onnx")
    (shipped / "tokenizer.json").unlink()
    with pytest.raises(ModelMissingError, match=r"tokenizer\.json is missing"):
        prepare(model_dir, source=shipped)


def test_a_tampered_model_is_refused_and_prepare_repairs_it(embedder: OnnxEmbedder, tmp_path: Path) -> None:
    model_dir = tmp_path / "model"
    shutil.copytree(default_model_dir(), model_dir)
    with (model_dir / "model.onnx").open("r+b") as stream:
        stream.seek(1_000_000)
        byte = stream.read(1)
        stream.seek(1_000_000)
        stream.write(bytes([byte[0] ^ 0xFF]))
    with pytest.raises(IntegrityError) as refused:
        OnnxEmbedder(model_dir)
    assert "model.onnx" in str(refused.value) and HINT in str(refused.value)
    # The fix the message names works: prepare rebuilds the directory from the shipped files.
    assert prepare(model_dir).fingerprint == embedder.fingerprint
    assert OnnxEmbedder(model_dir).embed("ping").tolist() == embedder.embed("ping").tolist()


def test_a_missing_model_names_the_command_to_run(tmp_path: Path) -> None:
    with pytest.raises(ModelMissingError, match=HINT):
        OnnxEmbedder(tmp_path / "absent")
    partial = tmp_path / "partial"
    shutil.copytree(default_model_dir(), partial)
    (partial / "tokenizer.json").unlink()
    with pytest.raises(ModelMissingError, match=HINT):
        OnnxEmbedder(partial)


@pytest.mark.parametrize("via", ["flag", "environment"])
def test_cli_without_a_model_prints_the_hint_and_fails(tmp_path: Path, via: str) -> None:
    empty = tmp_path / "empty-model-dir"
    empty.mkdir()
    catalog = tmp_path / "tools.jsonl"
    catalog.write_text(
        '{"name": "Slack.SendMessage", "description": "Send a message.", "input_schema": {}, "app": "Slack"}\n'
    )
    out = tmp_path / "index"
    argv = [sys.executable, "-m", "build_index.cli", "build", "--catalog", str(catalog), "--out", str(out), "--quiet"]
    env = {**os.environ}
    if via == "flag":
        argv += ["--model-dir", str(empty)]
    else:
        env[MODEL_DIR_ENV] = str(empty)
    result = subprocess.run(argv, capture_output=True, text=True, cwd=REPO_ROOT, env=env, timeout=60, check=False)
    assert result.returncode != 0
    assert HINT in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()


_CATALOG = [
    ("Slack.SendMessage", "Send a message to a Slack channel or user.\nMessages over 4000 characters are split."),
    ("Github.CreateIssue", "Create an issue in a GitHub repository."),
    ("Weather.GetForecast", "Get the weather forecast for a city."),
    ("Gmail.SendEmail", "Send an email from the user's Gmail account."),
    ("Jira.SearchIssues", "Search Jira issues with JQL."),
    ("查询.天气", "查询城市天气"),
]


def _tool(name: str, description: str) -> Tool:
    return Tool(name=name, description=description, input_schema={"type": "object"}, app=name.split(".", maxsplit=1)[0])
