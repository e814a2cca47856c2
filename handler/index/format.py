"""The index format, shared by the build step (writer) and the service (reader).

A build is a directory ``builds/<build_id>/`` holding ``manifest.json`` (schema version, model
fingerprint, analyzer and BM25 parameters, sha256 of every file) and plain ``.npy`` arrays written with
``allow_pickle=False``, the tool records (``tools.jsonl``, one a line, read lazily: handler/index/records.py)
and the keys every request needs of every tool (``tool_keys.json``: names, apps, authorization flags).
``LATEST`` names the current build and is written last, so no reader ever sees half an index.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, ValidationError

from handler.catalog.tool import Tool
from handler.errors import IntegrityError
from handler.index.records import ToolKeys, ToolRecords, to_jsonl
from handler.inference.int8_scoring import Int8Scorer
from handler.inference.model_files import sha256_file
from handler.ranking.analyzer import Analyzer
from handler.ranking.bm25 import BM25Index, BM25Params
from handler.ranking.dense import QuantizedVectors
from handler.ranking.retriever import RankingIndex
from handler.ranking.usage import UsageEvidence

# 2: tools.json (a list validated whole at load) became tools.jsonl + tool_keys.json (records parsed on demand).
SCHEMA_VERSION = 2
# Version 1 is still read: the first deploy of this code serves the build already published until the new one
# lands (infra/deploy.py updates the stack before it publishes), instead of answering 503 in between.
READABLE_SCHEMAS = (1, 2)
LATEST = "LATEST"
BUILDS = "builds"
MANIFEST = "manifest.json"
TOOLS = "tools.jsonl"
TOOL_KEYS = "tool_keys.json"
TOOLS_V1 = "tools.json"  # schema 1: one JSON list of every record
VOCABULARY = "bm25_vocabulary.json"
ARRAYS = ("vectors", "vector_scales", "bm25_indptr", "bm25_doc_ids", "bm25_weights")
# Only in a build with usage evidence (build_index/usage.py); a build without it is exactly what it was before.
USAGE_ARRAYS = ("usage_vectors", "usage_scales", "usage_tools", "co_usage_indptr", "co_usage_tools", "co_usage_shares")


class ModelRef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model_id: str
    fingerprint: str
    dimensions: int


class AnalyzerRef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    stopwords: list[str]
    stemming: bool


class UsageSummary(BaseModel):
    """What usage a build folded in (its arrays' sha256 are in ``files`` like every other file's)."""

    model_config = ConfigDict(extra="forbid")
    source: str
    # The window the evidence spans (ISO times of its oldest and newest execution; None for a source without
    # times): expired query-log records are never read, so nothing older than the log's expiry is in it.
    oldest: str | None
    newest: str | None
    execution_groups: int
    distinct_tasks: int
    past_task_rows: int
    tools_with_usage: int
    ignored: dict[str, int]  # weaker evidence, by kind: counted, never used
    evidence_sha256: str  # of what was folded (build_index/usage.py), so a refresh can tell whether it changed


class Manifest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    schema_version: int
    build_id: str
    created_at: str
    tool_count: int
    model: ModelRef
    analyzer: AnalyzerRef
    bm25: dict[str, float]
    files: dict[str, str]
    usage: UsageSummary | None = None
    # catalog_digest of the tools built, so `toolrec refresh` can tell whether an upstream's tools changed; None in a
    # build written before it was recorded.
    catalog_sha256: str | None = None


@dataclass(frozen=True)
class UsageArrays:
    past_tasks: QuantizedVectors
    past_task_tools: npt.NDArray[np.int32]
    co_indptr: npt.NDArray[np.int64]
    co_tools: npt.NDArray[np.int32]
    co_shares: npt.NDArray[np.float32]

    def as_files(self) -> dict[str, np.ndarray[Any, Any]]:
        return dict(
            zip(
                USAGE_ARRAYS,
                (
                    np.asfortranarray(self.past_tasks.values),  # column-major, as the tool vectors (write_build)
                    self.past_tasks.scales,
                    self.past_task_tools,
                    self.co_indptr,
                    self.co_tools,
                    self.co_shares,
                ),
                strict=True,
            )
        )


@dataclass(frozen=True)
class BuiltIndex:
    """Everything a build produces, in memory, before it is written."""

    tools: Sequence[Tool]
    vectors: QuantizedVectors
    bm25: BM25Index
    analyzer: Analyzer
    bm25_params: BM25Params
    model: ModelRef
    usage: tuple[UsageArrays, UsageSummary] | None = None


@dataclass(frozen=True)
class LoadedIndex:
    manifest: Manifest
    tools: ToolRecords
    ranking: RankingIndex

    def without_usage(self) -> LoadedIndex:
        """The same build ranked by its text alone (a tenant that turned learning from use off)."""
        return self if self.ranking.usage is None else replace(self, ranking=replace(self.ranking, usage=None))


def catalog_digest(tools: Sequence[Tool]) -> str:
    """sha256 of the tool set: each record normalized as tools.jsonl writes it, the lines sorted, so the same tools
    listed in another order (an upstream's tools/list is not sorted) hash the same."""
    lines = sorted(to_jsonl(tools).splitlines())
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def new_build_id(content_digest: str) -> str:
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ") + "-" + content_digest[:12]


def write_build(built: BuiltIndex, directory: Path) -> Manifest:
    """Write one build's files into ``directory`` (a fresh, build-specific folder) and return its manifest."""
    directory.mkdir(parents=True, exist_ok=True)
    arrays: dict[str, np.ndarray[Any, Any]] = {
        # Column-major on disk: loaded, its transpose is the (d, n) C-contiguous matrix the int8 scorer reads, so
        # no copy is made at load (a 38 MB copy and 0.23 s at 100k tools, measured).
        "vectors": np.asfortranarray(built.vectors.values),
        "vector_scales": built.vectors.scales,
        "bm25_indptr": built.bm25.indptr,
        "bm25_doc_ids": built.bm25.doc_ids,
        "bm25_weights": built.bm25.weights,
    }
    if built.usage is not None:
        arrays.update(built.usage[0].as_files())
    for name, array in arrays.items():
        np.save(directory / f"{name}.npy", array, allow_pickle=False)
    (directory / VOCABULARY).write_text(json.dumps(built.bm25.vocabulary, ensure_ascii=False))
    (directory / TOOLS).write_text(to_jsonl(built.tools), encoding="utf-8")
    (directory / TOOL_KEYS).write_text(ToolKeys.of(built.tools).to_json(), encoding="utf-8")
    files = {path.name: sha256_file(path) for path in sorted(directory.iterdir()) if path.name != MANIFEST}
    digest = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
    manifest = Manifest(
        schema_version=SCHEMA_VERSION,
        build_id=new_build_id(digest),
        created_at=datetime.now(UTC).isoformat(timespec="seconds"),
        tool_count=len(built.tools),
        model=built.model,
        analyzer=AnalyzerRef(stopwords=sorted(built.analyzer.stopwords), stemming=built.analyzer.stemming),
        bm25={"k1": built.bm25_params.k1, "b": built.bm25_params.b},
        files=files,
        usage=None if built.usage is None else built.usage[1],
        catalog_sha256=catalog_digest(built.tools),
    )
    (directory / MANIFEST).write_text(manifest.model_dump_json(indent=2) + "\n")
    return manifest


def read_manifest(text: str | bytes) -> Manifest:
    try:
        raw: Any = json.loads(text)
    except ValueError as exc:
        raise IntegrityError(f"the index manifest is not JSON ({exc})") from exc
    version = raw.get("schema_version") if isinstance(raw, dict) else None
    if type(version) is not int or version not in READABLE_SCHEMAS:
        readable = " and ".join(map(str, READABLE_SCHEMAS))
        raise IntegrityError(f"unknown index schema version {version!r}; this toolrec reads {readable}")
    try:
        manifest = Manifest.model_validate(raw)
    except ValidationError as exc:
        raise IntegrityError(f"the index manifest is invalid: {exc.error_count()} problem(s)") from exc
    expected = expected_files(manifest.schema_version, with_usage=manifest.usage is not None)
    # Checked here, before any reader uses a name: the S3 fetch writes each listed name under its cache directory
    # before the checksums are verified, and a `../` or absolute name wrote outside it (issue 15). Only the
    # format's own plain file names pass, so no name can carry a separator, `..` or a root.
    if set(manifest.files) != expected:
        raise IntegrityError(
            f"index {manifest.build_id} lists files {sorted(manifest.files)}, expected {sorted(expected)}"
        )
    return manifest


def expected_files(schema_version: int, with_usage: bool = False) -> frozenset[str]:
    """The plain file names a build of this schema version holds besides the manifest."""
    record_files = {TOOLS, TOOL_KEYS} if schema_version == SCHEMA_VERSION else {TOOLS_V1}
    arrays = ARRAYS + (USAGE_ARRAYS if with_usage else ())
    return frozenset({f"{name}.npy" for name in arrays} | record_files | {VOCABULARY})


def _manifest_of(directory: Path) -> Manifest:
    manifest_path = directory / MANIFEST
    if not manifest_path.is_file():
        raise IntegrityError(f"no {MANIFEST} in {directory}")
    return read_manifest(manifest_path.read_bytes())


def _verify(directory: Path, manifest: Manifest, names: frozenset[str] | None = None) -> None:
    """Refuse the build unless the files its manifest lists (or ``names`` of them) match their sha256."""
    for name, digest in manifest.files.items():
        if names is not None and name not in names:
            continue
        path = directory / name
        if not path.is_file():
            raise IntegrityError(f"index {manifest.build_id} is missing {name}")
        if sha256_file(path) != digest:
            raise IntegrityError(f"index {manifest.build_id}: {name} does not match its sha256 (corrupt or partial)")


def load_tool_records(directory: Path) -> ToolRecords:
    """Only a build's tool records, verified: what checking names against the catalog needs, without the model."""
    manifest = _manifest_of(directory)
    _verify(directory, manifest, frozenset({TOOLS, TOOL_KEYS, TOOLS_V1}))
    return _tool_records(directory, manifest.schema_version)


def load_build(directory: Path, model_fingerprint: str) -> LoadedIndex:
    """Load a build from a local directory, refusing any file whose sha256 differs or a foreign model."""
    manifest = _manifest_of(directory)
    if manifest.model.fingerprint != model_fingerprint:
        raise IntegrityError(
            f"index {manifest.build_id} was built with model {manifest.model.fingerprint[:12]}, "
            f"but this service runs {model_fingerprint[:12]}: rebuild the index or deploy the matching model"
        )
    _verify(directory, manifest)
    arrays = {name: np.load(directory / f"{name}.npy", allow_pickle=False) for name in ARRAYS}
    tools = _tool_records(directory, manifest.schema_version)
    if len(tools) != manifest.tool_count:
        raise IntegrityError(f"index {manifest.build_id} holds {len(tools)} tools, manifest: {manifest.tool_count}")
    vocabulary = json.loads((directory / VOCABULARY).read_text())
    bm25 = BM25Index(vocabulary, arrays["bm25_indptr"], arrays["bm25_doc_ids"], arrays["bm25_weights"], len(tools))
    analyzer = Analyzer(frozenset(manifest.analyzer.stopwords), manifest.analyzer.stemming)
    vectors = QuantizedVectors(arrays["vectors"], arrays["vector_scales"])
    if vectors.values.shape != (len(tools), manifest.model.dimensions) or vectors.scales.shape != (len(tools),):
        raise IntegrityError(f"index {manifest.build_id}: vectors have shape {vectors.values.shape}")
    dense = Int8Scorer(vectors)
    usage = _usage(directory, manifest) if manifest.usage is not None else None
    ranking = RankingIndex(tools.keys.names, bm25, dense, analyzer, usage)
    return LoadedIndex(manifest, tools, ranking)


def rebuild_of(directory: Path, loaded: LoadedIndex, tools: Sequence[Tool] | None = None) -> BuiltIndex:
    """A build loaded from ``directory`` as the build step's value again (its vectors and BM25 as they are, no
    usage), to publish it with other usage evidence without embedding its tools again. ``tools`` are its records
    (default: parsed from the build)."""
    tools = list(loaded.tools) if tools is None else tools
    if len(tools) != loaded.manifest.tool_count or list(loaded.tools.keys.names) != [t.name for t in tools]:
        raise IntegrityError(f"index {loaded.manifest.build_id} holds other tools than the ones given")
    manifest = loaded.manifest
    vectors = QuantizedVectors(*(np.load(directory / f"{n}.npy", allow_pickle=False) for n in ARRAYS[:2]))
    return BuiltIndex(
        tools=tools,
        vectors=QuantizedVectors(np.ascontiguousarray(vectors.values), vectors.scales),
        bm25=loaded.ranking.bm25,
        analyzer=Analyzer(frozenset(manifest.analyzer.stopwords), manifest.analyzer.stemming),
        bm25_params=BM25Params(**manifest.bm25),
        model=manifest.model,
    )


def _usage(directory: Path, manifest: Manifest) -> UsageEvidence:
    arrays = {name: np.load(directory / f"{name}.npy", allow_pickle=False) for name in USAGE_ARRAYS}
    past = QuantizedVectors(arrays["usage_vectors"], arrays["usage_scales"])
    tools, indptr, companions = arrays["usage_tools"], arrays["co_usage_indptr"], arrays["co_usage_tools"]
    n = manifest.tool_count
    consistent = (
        past.values.shape == (len(tools), manifest.model.dimensions)
        and past.scales.shape == tools.shape
        and indptr.shape == (n + 1,)
        and companions.shape == arrays["co_usage_shares"].shape == (int(indptr[-1]),)
        and bool(((tools >= 0) & (tools < n)).all() and ((companions >= 0) & (companions < n)).all())
    )
    if not consistent:
        raise IntegrityError(f"index {manifest.build_id}: its usage arrays do not fit its {n} tools")
    return UsageEvidence(Int8Scorer(past), tools, indptr, companions, arrays["co_usage_shares"])


def _tool_records(directory: Path, schema_version: int) -> ToolRecords:
    if schema_version == SCHEMA_VERSION:
        return ToolRecords((directory / TOOLS).read_bytes(), _tool_keys(directory / TOOL_KEYS))
    try:  # schema 1: validate the whole list once, as that version's loader did, then serve it the same way
        tools = [Tool.model_validate(row) for row in json.loads((directory / TOOLS_V1).read_bytes())]
    except (ValueError, TypeError) as exc:  # pydantic's ValidationError is a ValueError
        raise IntegrityError(f"{TOOLS_V1} holds invalid tool records ({type(exc).__name__})") from None
    return ToolRecords(to_jsonl(tools).encode("utf-8"), ToolKeys.of(tools))


def _tool_keys(path: Path) -> ToolKeys:
    try:
        return ToolKeys.from_json(path.read_bytes())
    except (ValueError, KeyError, TypeError) as exc:
        raise IntegrityError(f"{path.name} is not a valid tool key file ({exc})") from exc
