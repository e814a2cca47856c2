"""A loader refuses any build it cannot trust (corrupt or missing file, unknown schema, another model) with
IntegrityError and a message that says what is wrong; a corrupt cached S3 copy is dropped and refetched."""

from __future__ import annotations

import json
import mmap
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import numpy as np
import pytest
from moto import mock_aws

from build_index.build import index_tools
from build_index.model_prepare import MODEL_ID
from build_index.publish import publish
from handler.errors import IndexUnavailableError, IntegrityError
from handler.index import load as load_module
from handler.index.format import BUILDS, MANIFEST, BuiltIndex, catalog_digest
from handler.index.load import load_build
from handler.index.records import FileSpans
from handler.index.store import LocalIndexStore, S3IndexStore, load_latest
from handler.inference.embedder import OnnxEmbedder
from handler.inference.model_files import sha256_file
from tests.support.serving import demo_tools

BUCKET = "toolrec-integrity"


@pytest.fixture(scope="module")
def built(embedder: OnnxEmbedder) -> BuiltIndex:
    return index_tools(demo_tools()[:12], embedder, MODEL_ID, progress=False)  # the project's own catalog


@pytest.fixture
def build_dir(built: BuiltIndex, tmp_path: Path) -> Path:
    manifest = publish(built, str(tmp_path / "index"))
    return tmp_path / "index" / BUILDS / manifest.build_id


def flip_bytes(path: Path, offset: int = -16, count: int = 4) -> None:
    data = bytearray(path.read_bytes())
    for i in range(count):
        data[offset + i] ^= 0xFF
    path.write_bytes(bytes(data))


def test_an_intact_build_loads(build_dir: Path, embedder: OnnxEmbedder) -> None:
    assert load_build(build_dir, embedder.fingerprint).manifest.tool_count == 12


def mapping_of(array: np.ndarray[Any, Any]) -> object:
    base: object = array
    while isinstance(base, np.ndarray):
        base = base.base
    return base


def test_a_loaded_build_is_mapped_read_only_not_copied(build_dir: Path, embedder: OnnxEmbedder) -> None:
    """Issue 27: the arrays are the files themselves, shared with the page cache, and no code can write into them;
    the records are read from their file where they lie, never mapped (issue 35: mapped, each record read mapped the
    pages around it); the checksums are verified before anything is mapped or read."""
    index = load_build(build_dir, embedder.fingerprint)
    bm25 = index.ranking.bm25
    for array in (bm25.indptr, bm25.doc_ids, bm25.weights):
        assert not array.flags.writeable
        assert isinstance(mapping_of(array), mmap.mmap)
        with pytest.raises(ValueError, match="read-only"):
            array[:1] = 0
    assert isinstance(index.tools._jsonl, FileSpans)
    assert list(index.tools) == list(load_build(build_dir, embedder.fingerprint).tools)
    assert str(build_dir / "tools.jsonl") not in Path("/proc/self/maps").read_text()
    del index  # unmapped before its file changes: a build is never changed in place while it is served
    flip_bytes(build_dir / "vectors.npy")  # a copy changed after it was served is refused at its next load
    with pytest.raises(IntegrityError, match=r"vectors\.npy does not match its sha256"):
        load_build(build_dir, embedder.fingerprint)


def resident_kb(path: Path) -> int:
    """How much of a mapped file this process holds in memory (Rss of its mappings in /proc/self/smaps)."""
    total, current = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if re.match(r"[0-9a-f]+-[0-9a-f]+ ", line):  # a mapping's first line: its addresses, ..., its file
            current = line.rstrip().endswith(str(path))
        elif current and line.startswith("Rss:"):
            total += int(line.split()[1])
    return total


def test_the_scans_mapped_matrix_leaves_the_process_once_packed(build_dir: Path, embedder: OnnxEmbedder) -> None:
    """Issue 35: onnxruntime scans the copy it packed, so the mapped vectors' pages are dropped from the process once
    it has, and a ranking does not bring them back."""
    index = load_build(build_dir, embedder.fingerprint)
    vectors = build_dir / "vectors.npy"
    assert str(vectors) in Path("/proc/self/maps").read_text()  # still mapped ...
    assert resident_kb(vectors) == 0  # ... but not resident
    hits = index.ranking.rank("create a calendar event", embedder.embed("create a calendar event"), 3)
    assert hits and resident_kb(vectors) == 0


@pytest.mark.parametrize(
    "name", ["vectors.npy", "vector_scales.npy", "bm25_weights.npy", "tools.jsonl", "tool_keys.json"]
)
def test_a_corrupted_file_is_refused(build_dir: Path, embedder: OnnxEmbedder, name: str) -> None:
    flip_bytes(build_dir / name)
    with pytest.raises(IntegrityError, match=rf"{name} does not match its sha256 \(corrupt or partial\)"):
        load_build(build_dir, embedder.fingerprint)


def test_a_truncated_array_is_refused(build_dir: Path, embedder: OnnxEmbedder) -> None:
    path = build_dir / "vectors.npy"
    path.write_bytes(path.read_bytes()[:-384])
    with pytest.raises(IntegrityError, match=r"vectors\.npy does not match its sha256"):
        load_build(build_dir, embedder.fingerprint)


def test_a_missing_file_is_refused(build_dir: Path, embedder: OnnxEmbedder) -> None:
    (build_dir / "bm25_doc_ids.npy").unlink()
    with pytest.raises(IntegrityError, match=r"is missing bm25_doc_ids\.npy"):
        load_build(build_dir, embedder.fingerprint)


def test_a_missing_manifest_is_refused(build_dir: Path, embedder: OnnxEmbedder) -> None:
    (build_dir / MANIFEST).unlink()
    with pytest.raises(IntegrityError, match=f"no {MANIFEST}"):
        load_build(build_dir, embedder.fingerprint)


def edit_manifest(build_dir: Path, change: dict[str, Any]) -> None:
    path = build_dir / MANIFEST
    path.write_text(json.dumps({**json.loads(path.read_text()), **change}))


@pytest.mark.parametrize("version", [3, 0, "2", None, True])
def test_an_unknown_schema_version_is_refused(build_dir: Path, embedder: OnnxEmbedder, version: object) -> None:
    edit_manifest(build_dir, {"schema_version": version})
    with pytest.raises(IntegrityError, match=rf"unknown index schema version {version!r}; this toolrec reads 1 and 2"):
        load_build(build_dir, embedder.fingerprint)


def rehash(build_dir: Path, **change: Any) -> None:
    """Point the manifest at the files as they are now (a writer's output, not a corruption)."""
    files = {p.name: sha256_file(p) for p in sorted(build_dir.iterdir()) if p.name != MANIFEST}
    edit_manifest(build_dir, {"files": files, **change})


def as_schema_1(build_dir: Path) -> None:
    """Rewrite a build as the previous toolrec wrote it: every record in one JSON list, no tool keys."""
    rows = [json.loads(line) for line in (build_dir / "tools.jsonl").read_text().splitlines()]
    (build_dir / "tools.json").write_text(json.dumps(rows, ensure_ascii=False, sort_keys=True))
    (build_dir / "tools.jsonl").unlink()
    (build_dir / "tool_keys.json").unlink()
    rehash(build_dir, schema_version=1)


def test_a_build_without_a_catalog_digest_still_serves(
    built: BuiltIndex, build_dir: Path, embedder: OnnxEmbedder
) -> None:
    manifest = json.loads((build_dir / MANIFEST).read_text())
    assert manifest["catalog_sha256"] == catalog_digest(built.tools)
    del manifest["catalog_sha256"]  # as a build written before the digest was recorded
    (build_dir / MANIFEST).write_text(json.dumps(manifest))
    previous = load_build(build_dir, embedder.fingerprint)
    assert previous.manifest.catalog_sha256 is None
    assert list(previous.tools) == list(built.tools)


def test_the_catalog_digest_ignores_order_and_sees_any_change(built: BuiltIndex) -> None:
    tools = list(built.tools)
    assert catalog_digest(tools[::-1]) == catalog_digest(tools)
    changed = [tools[0].model_copy(update={"description": tools[0].description + " now"}), *tools[1:]]
    assert catalog_digest(changed) != catalog_digest(tools)
    assert catalog_digest(tools[1:]) != catalog_digest(tools)


def test_a_schema_1_build_still_serves(built: BuiltIndex, build_dir: Path, embedder: OnnxEmbedder) -> None:
    # The first deploy of schema 2 updates the stack before it publishes: the build already there must keep serving.
    current = load_build(build_dir, embedder.fingerprint)
    as_schema_1(build_dir)
    previous = load_build(build_dir, embedder.fingerprint)
    assert previous.manifest.schema_version == 1
    assert list(previous.tools) == list(built.tools) == list(current.tools)
    assert (previous.tools.keys.names, previous.tools.keys.apps) == (current.tools.keys.names, current.tools.keys.apps)
    assert previous.tools.keys.needs_authorization.tolist() == current.tools.keys.needs_authorization.tolist()
    task = "send a message to a channel"
    query = embedder.embed(task)
    assert previous.ranking.rank(task, query, 5) == current.ranking.rank(task, query, 5)


def test_a_schema_1_build_with_an_invalid_record_is_refused(build_dir: Path, embedder: OnnxEmbedder) -> None:
    as_schema_1(build_dir)
    rows = json.loads((build_dir / "tools.json").read_text())
    rows[0]["name"] = "Acme.Launch_v2"  # a versioned name: refused by the catalog model
    (build_dir / "tools.json").write_text(json.dumps(rows))
    rehash(build_dir)
    with pytest.raises(IntegrityError, match=r"tools\.json holds invalid tool records \(ValidationError\)"):
        load_build(build_dir, embedder.fingerprint)


def test_a_manifest_that_drops_a_file_is_refused(build_dir: Path, embedder: OnnxEmbedder) -> None:
    manifest = json.loads((build_dir / MANIFEST).read_text())
    del manifest["files"]["bm25_weights.npy"]
    edit_manifest(build_dir, {"files": manifest["files"]})
    with pytest.raises(IntegrityError, match="lists files"):
        load_build(build_dir, embedder.fingerprint)


@pytest.mark.parametrize("escape", ["../../../secret.npy", "/etc/hostname", "sub/vectors.npy"])
def test_a_local_manifest_naming_a_path_outside_its_build_is_refused(
    build_dir: Path, embedder: OnnxEmbedder, escape: str
) -> None:
    """The directory store reads names where the manifest says: a name that is not the format's own is refused
    when the manifest is read, before any file is opened (issue 15 item 10)."""
    manifest = json.loads((build_dir / MANIFEST).read_text())
    manifest["files"][escape] = manifest["files"].pop("vectors.npy")
    edit_manifest(build_dir, {"files": manifest["files"]})
    with pytest.raises(IntegrityError, match="lists files"):
        load_latest(LocalIndexStore(build_dir.parents[1]), build_dir.parents[1] / "cache", embedder.fingerprint)


def test_an_index_built_with_another_model_is_refused(build_dir: Path, embedder: OnnxEmbedder) -> None:
    other = "0" * 64
    with pytest.raises(IntegrityError) as refused:
        load_build(build_dir, other)
    message = str(refused.value)
    assert embedder.fingerprint[:12] in message and other[:12] in message
    assert "rebuild the index or deploy the matching model" in message


def test_a_garbled_latest_pointer_is_unavailable_not_a_crash(built: BuiltIndex, tmp_path: Path) -> None:
    publish(built, str(tmp_path / "index"))
    (tmp_path / "index" / "LATEST").write_text("../../etc\n")
    with pytest.raises(IndexUnavailableError, match="invalid build id"):
        load_latest(LocalIndexStore(tmp_path / "index"), tmp_path / "cache", "x")
    with pytest.raises(IndexUnavailableError, match="run `toolrec build`"):
        load_latest(LocalIndexStore(tmp_path / "nothing-here"), tmp_path / "cache", "x")


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


def test_a_corrupt_cached_copy_is_dropped_and_refetched(
    built: BuiltIndex, embedder: OnnxEmbedder, s3: Any, tmp_path: Path
) -> None:
    manifest = publish(built, f"s3://{BUCKET}/idx", s3_client=s3)
    store, cache = S3IndexStore(s3, BUCKET, "idx"), tmp_path / "cache"
    load_latest(store, cache, embedder.fingerprint)
    cached = cache / manifest.build_id
    flip_bytes(cached / "vectors.npy")  # e.g. a bad write on the Lambda's /tmp
    with pytest.raises(IntegrityError, match=r"vectors\.npy does not match"):
        load_latest(store, cache, embedder.fingerprint)
    assert not cached.exists()
    assert load_latest(store, cache, embedder.fingerprint).manifest.build_id == manifest.build_id


def test_a_corrupt_object_in_s3_is_refused_and_not_kept(
    built: BuiltIndex, embedder: OnnxEmbedder, s3: Any, tmp_path: Path
) -> None:
    manifest = publish(built, f"s3://{BUCKET}/idx", s3_client=s3)
    key = f"idx/{BUILDS}/{manifest.build_id}/vectors.npy"
    original = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    s3.put_object(Bucket=BUCKET, Key=key, Body=original[:-8] + bytes(8))
    store, cache = S3IndexStore(s3, BUCKET, "idx"), tmp_path / "cache"
    with pytest.raises(IntegrityError, match=r"vectors\.npy does not match its sha256"):
        load_latest(store, cache, embedder.fingerprint)
    assert not (cache / manifest.build_id).exists()
    s3.put_object(Bucket=BUCKET, Key=key, Body=original)  # the operator re-publishes the object
    assert load_latest(store, cache, embedder.fingerprint).manifest.tool_count == 12


def test_a_download_is_hashed_as_it_arrives_and_a_cached_copy_when_loaded(
    built: BuiltIndex, embedder: OnnxEmbedder, s3: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 27: a file streamed from S3 is hashed on the way and not read again to verify it; a copy found in the
    cache (written by an earlier process, or changed since) is verified in full."""
    manifest = publish(built, f"s3://{BUCKET}/idx", s3_client=s3)
    hashed: list[str] = []

    def counted(path: Path) -> str:
        hashed.append(path.name)
        return sha256_file(path)

    monkeypatch.setattr(load_module, "sha256_file", counted)
    store, cache = S3IndexStore(s3, BUCKET, "idx"), tmp_path / "cache"
    assert load_latest(store, cache, embedder.fingerprint).manifest.build_id == manifest.build_id
    assert hashed == []
    assert load_latest(store, cache, embedder.fingerprint).manifest.build_id == manifest.build_id
    assert sorted(hashed) == sorted(manifest.files)


def test_a_model_mismatch_on_s3_drops_the_cached_copy(
    built: BuiltIndex, embedder: OnnxEmbedder, s3: Any, tmp_path: Path
) -> None:
    manifest = publish(built, f"s3://{BUCKET}/idx", s3_client=s3)
    cache = tmp_path / "cache"
    with pytest.raises(IntegrityError, match="rebuild the index"):
        load_latest(S3IndexStore(s3, BUCKET, "idx"), cache, "f" * 64)
    assert not (cache / manifest.build_id).exists()
