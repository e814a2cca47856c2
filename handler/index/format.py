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
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, ValidationError

from handler.catalog.tool import Tool
from handler.errors import IntegrityError
from handler.index.records import ToolKeys, to_jsonl
from handler.inference.model_files import sha256_file
from handler.ranking.analyzer import Analyzer
from handler.ranking.bm25 import BM25Index, BM25Params
from handler.ranking.coarse import COARSE_MIN_TOOLS, CoarseCodes, fit_coarse
from handler.ranking.dense import QuantizedVectors

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
# Only in a build with usage evidence (build_index/usage/fold.py); a build without it is exactly what it was before.
USAGE_ARRAYS = ("usage_vectors", "usage_scales", "usage_tools", "co_usage_indptr", "co_usage_tools", "co_usage_shares")
# Only in a build of COARSE_MIN_TOOLS or more tools (handler/ranking/coarse.py); a smaller build is what it was before.
COARSE_ARRAYS = ("coarse_codes", "coarse_scales", "coarse_projection", "coarse_mean")
# In a coarse build whose manifest says ``coarse_moments``; a coarse build written before it loads as it was.
COARSE_MOMENT_ARRAYS = ("coarse_second_moment",)
# Only in a usage build whose summary says ``classifier`` (issue 25); a warm build written before it loads as it was.
CLASSIFIER_ARRAYS = ("usage_classifier", "usage_classifier_scales")


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
    evidence_sha256: str  # of what was folded (build_index/usage/fold.py), so a refresh can tell whether it changed
    classifier: bool = False  # the build holds the task classifier (CLASSIFIER_ARRAYS), one row per tool with usage


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
    # The coarse codes' dimensions in a large build (COARSE_ARRAYS); None: every query scans every vector.
    coarse_dimensions: int | None = None
    # The coarse build holds its vectors' second moment (COARSE_MOMENT_ARRAYS); False in one written before it.
    coarse_moments: bool = False


@dataclass(frozen=True)
class UsageArrays:
    past_tasks: QuantizedVectors
    past_task_tools: npt.NDArray[np.int32]
    co_indptr: npt.NDArray[np.int64]
    co_tools: npt.NDArray[np.int32]
    co_shares: npt.NDArray[np.float32]
    classifier: QuantizedVectors | None = None  # one row per past_tasks row

    def as_files(self) -> dict[str, np.ndarray[Any, Any]]:
        files: dict[str, np.ndarray[Any, Any]] = dict(
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
        if self.classifier is not None:
            rows = np.asfortranarray(self.classifier.values)  # column-major, as past_tasks
            files.update(zip(CLASSIFIER_ARRAYS, (rows, self.classifier.scales), strict=True))
        return files


def coarse_files(coarse: CoarseCodes) -> dict[str, np.ndarray[Any, Any]]:
    # The codes column-major, as the tool vectors of a small build: the int8 scan reads their transpose in place.
    values = (np.asfortranarray(coarse.codes.values), coarse.codes.scales, coarse.projection, coarse.mean)
    return dict(zip(COARSE_ARRAYS + COARSE_MOMENT_ARRAYS, (*values, coarse.second_moment), strict=True))


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
    coarse = fit_coarse(built.vectors) if len(built.tools) >= COARSE_MIN_TOOLS else None
    arrays: dict[str, np.ndarray[Any, Any]] = {
        # Column-major on disk: loaded, its transpose is the (d, n) C-contiguous matrix the int8 scorer reads, so
        # no copy is made at load (a 38 MB copy and 0.23 s at 100k tools, measured). A coarse build's rows are
        # gathered a few thousand at a time instead, which a row-major matrix serves in one read each.
        "vectors": np.asfortranarray(built.vectors.values) if coarse is None else built.vectors.values,
        "vector_scales": built.vectors.scales,
        "bm25_indptr": built.bm25.indptr,
        "bm25_doc_ids": built.bm25.doc_ids,
        "bm25_weights": built.bm25.weights,
    }
    if built.usage is not None:
        arrays.update(built.usage[0].as_files())
    if coarse is not None:
        arrays.update(coarse_files(coarse))
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
        coarse_dimensions=None if coarse is None else coarse.projection.shape[1],
        coarse_moments=coarse is not None,
    )
    # A small build's manifest stays byte for byte what it was, readable by the toolrec before coarse builds.
    unset = {"coarse_dimensions", "coarse_moments"} if manifest.coarse_dimensions is None else None
    (directory / MANIFEST).write_text(manifest.model_dump_json(indent=2, exclude=unset) + "\n")
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
    usage = manifest.usage
    expected = expected_files(
        manifest.schema_version,
        with_usage=usage is not None,
        with_classifier=usage is not None and usage.classifier,
        with_coarse=manifest.coarse_dimensions is not None,
        with_coarse_moments=manifest.coarse_moments,
    )
    # Checked here, before any reader uses a name: the S3 fetch writes each listed name under its cache directory
    # before the checksums are verified, and a `../` or absolute name wrote outside it (issue 15). Only the
    # format's own plain file names pass, so no name can carry a separator, `..` or a root.
    if set(manifest.files) != expected:
        raise IntegrityError(
            f"index {manifest.build_id} lists files {sorted(manifest.files)}, expected {sorted(expected)}"
        )
    return manifest


def expected_files(
    schema_version: int,
    with_usage: bool = False,
    with_classifier: bool = False,
    with_coarse: bool = False,
    with_coarse_moments: bool = False,
) -> frozenset[str]:
    """The plain file names a build of this schema version holds besides the manifest."""
    record_files = {TOOLS, TOOL_KEYS} if schema_version == SCHEMA_VERSION else {TOOLS_V1}
    arrays = ARRAYS + (USAGE_ARRAYS if with_usage else ()) + (CLASSIFIER_ARRAYS if with_classifier else ())
    arrays += COARSE_ARRAYS if with_coarse else ()
    arrays += COARSE_MOMENT_ARRAYS if with_coarse and with_coarse_moments else ()
    return frozenset({f"{name}.npy" for name in arrays} | record_files | {VOCABULARY})
