"""Reading a build back: verify it (manifest, model, every file's sha256), then assemble the one ``Index`` value
the service answers from and the build step rebuilds from.

Verification and assembly are separate steps so each says what it guarantees: ``verify_build`` reads no array,
``assemble`` trusts a verified directory and only checks that the pieces fit one another.

The arrays and the tool records are memory-mapped read-only, not read: nothing is copied at load, a page is resident
only once a query reads it (and is the page cache's, not the heap's), and no code can write into a loaded build. A
mapped file must therefore never change in place (a read past its new end is SIGBUS): a publish writes a new
``builds/<id>/``, a server maps its own copy of a build (store.py: downloaded from S3, or copied from a local folder
that anyone may overwrite), written once under its own name, and a refresh drops older copies by unlinking them,
which leaves a mapping intact.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from handler.catalog.names import DEFAULT_NAMESPACE, ToolNames
from handler.catalog.tool import Tool
from handler.errors import IntegrityError
from handler.index.fit import Misfit, check_bm25, check_coarse, check_usage, check_vectors
from handler.index.format import (
    ARRAYS,
    CLASSIFIER_ARRAYS,
    COARSE_ARRAYS,
    COARSE_MOMENT_ARRAYS,
    MANIFEST,
    SCHEMA_VERSION,
    TOOL_KEYS,
    TOOLS,
    TOOLS_V1,
    USAGE_ARRAYS,
    VOCABULARY,
    BuiltIndex,
    Manifest,
    read_manifest,
)
from handler.index.records import ToolKeys, ToolRecords, open_records, to_jsonl
from handler.index.table import ToolTable
from handler.inference.int8_scoring import Int8Rows, Int8Scorer
from handler.inference.model_files import sha256_file
from handler.ranking.abbreviations import general_lexicon
from handler.ranking.analyzer import Analyzer
from handler.ranking.bm25 import BM25Index, BM25Params
from handler.ranking.coarse import CoarseSemantic
from handler.ranking.dense import QuantizedVectors
from handler.ranking.retriever import RankingIndex
from handler.ranking.usage import UsageEvidence


@dataclass(frozen=True)
class Index:
    """One loaded build: its manifest, its tool records, the ranking core's arrays, and the lookup table that
    turns policy patterns into masks. The names in ``table`` and ``ranking`` are one resolver (ToolNames)."""

    manifest: Manifest
    tools: ToolRecords
    ranking: RankingIndex
    table: ToolTable

    @property
    def build_id(self) -> str:
        return self.manifest.build_id

    def without_usage(self) -> Index:
        """The same build ranked by its text alone (a tenant that turned learning from use off)."""
        return self if self.ranking.usage is None else replace(self, ranking=replace(self.ranking, usage=None))


def verify_build(directory: Path, model_fingerprint: str, checked: Mapping[str, str] | None = None) -> Manifest:
    """The build's manifest, once its model is the one given and every file it lists matches its sha256.
    ``checked``: the sha256 of files this process hashed as it wrote them (an S3 download): such a file is not read
    again when the manifest lists that same sha256."""
    manifest = _manifest_of(directory)
    if manifest.model.fingerprint != model_fingerprint:
        raise IntegrityError(
            f"index {manifest.build_id} was built with model {manifest.model.fingerprint[:12]}, "
            f"but this service runs {model_fingerprint[:12]}: rebuild the index or deploy the matching model"
        )
    _verify_files(directory, manifest, checked=checked or {})
    return manifest


def assemble(directory: Path, manifest: Manifest, threads: int = 1, namespace: str | None = DEFAULT_NAMESPACE) -> Index:
    """The Index of a verified build directory; IntegrityError when its pieces do not fit one another.
    ``threads``: onnxruntime's intra-op threads for the int8 scoring, as for the query embedding (Settings).
    ``namespace``: the deployment's (Settings.mcp_namespace): a build holding one of its own tools' names is refused;
    None reads the build only as the source of another one."""
    arrays = {name: _mapped_array(directory, name) for name in ARRAYS}
    tools = _tool_records(directory, manifest.schema_version)
    if len(tools) != manifest.tool_count:
        raise IntegrityError(f"index {manifest.build_id} holds {len(tools)} tools, manifest: {manifest.tool_count}")
    misfit = Misfit(manifest.build_id, len(tools))
    check_vectors(misfit, arrays, manifest.model.dimensions)
    vocabulary = check_bm25(misfit, arrays, _vocabulary(directory, misfit))
    bm25 = BM25Index(vocabulary, arrays["bm25_indptr"], arrays["bm25_doc_ids"], arrays["bm25_weights"], len(tools))
    vectors = QuantizedVectors(arrays["vectors"], arrays["vector_scales"])
    usage = _usage(directory, manifest, misfit) if manifest.usage is not None else None
    names = ToolNames(tools.keys.names, namespace)  # refuses names that fold together or are toolrec's own
    coarse = _coarse(directory, manifest, vectors, threads, misfit)
    scorer = Int8Scorer(vectors, threads) if coarse is None else coarse.exact  # exact: every row, a chunk at a time
    ranking = RankingIndex(
        names, bm25, scorer, _analyzer(manifest), usage, general_lexicon(), coarse, lambda i: tools[i].input_schema
    )
    return Index(manifest, tools, ranking, ToolTable.of(tools, names))


def load_build(
    directory: Path, model_fingerprint: str, threads: int = 1, namespace: str | None = DEFAULT_NAMESPACE
) -> Index:
    """Load a build from a local directory, refusing any file whose sha256 differs or a foreign model."""
    return assemble(directory, verify_build(directory, model_fingerprint), threads, namespace)


def load_tool_records(directory: Path) -> ToolRecords:
    """Only a build's tool records, verified: what checking names against the catalog needs, without the model."""
    manifest = _manifest_of(directory)
    _verify_files(directory, manifest, frozenset({TOOLS, TOOL_KEYS, TOOLS_V1}))
    return _tool_records(directory, manifest.schema_version)


def rebuild_of(directory: Path, index: Index, tools: Sequence[Tool] | None = None) -> BuiltIndex:
    """A build loaded from ``directory`` as the build step's value again (its vectors and BM25 as they are, no
    usage), to publish it with other usage evidence without embedding its tools again. ``tools`` are its records
    (default: parsed from the build)."""
    tools = list(index.tools) if tools is None else tools
    if len(tools) != index.manifest.tool_count or list(index.tools.keys.names) != [t.name for t in tools]:
        raise IntegrityError(f"index {index.build_id} holds other tools than the ones given")
    manifest = index.manifest
    vectors = QuantizedVectors(*(np.load(directory / f"{n}.npy", allow_pickle=False) for n in ARRAYS[:2]))
    return BuiltIndex(
        tools=tools,
        vectors=QuantizedVectors(np.ascontiguousarray(vectors.values), vectors.scales),
        bm25=index.ranking.bm25,
        analyzer=_analyzer(manifest),
        bm25_params=BM25Params(**manifest.bm25),
        model=manifest.model,
    )


def _analyzer(manifest: Manifest) -> Analyzer:
    return Analyzer(frozenset(manifest.analyzer.stopwords), manifest.analyzer.stemming)


def _manifest_of(directory: Path) -> Manifest:
    manifest_path = directory / MANIFEST
    if not manifest_path.is_file():
        raise IntegrityError(f"no {MANIFEST} in {directory}")
    return read_manifest(manifest_path.read_bytes())


def _verify_files(
    directory: Path, manifest: Manifest, names: frozenset[str] | None = None, checked: Mapping[str, str] | None = None
) -> None:
    """Refuse the build unless the files its manifest lists (or ``names`` of them) match their sha256 (``checked``:
    as verify_build)."""
    for name, digest in manifest.files.items():
        if (names is not None and name not in names) or (checked and checked.get(name) == digest):
            continue
        path = directory / name
        if not path.is_file():
            raise IntegrityError(f"index {manifest.build_id} is missing {name}")
        if sha256_file(path) != digest:
            raise IntegrityError(f"index {manifest.build_id}: {name} does not match its sha256 (corrupt or partial)")


def _coarse(
    directory: Path, manifest: Manifest, vectors: QuantizedVectors, threads: int, misfit: Misfit
) -> CoarseSemantic | None:
    """A large build's two-stage dense signal (handler/ranking/coarse.py); None for a build that scans every vector."""
    if manifest.coarse_dimensions is None:
        return None
    names = COARSE_ARRAYS + (COARSE_MOMENT_ARRAYS if manifest.coarse_moments else ())
    arrays = {name: _mapped_array(directory, name) for name in names}
    check_coarse(misfit, arrays, manifest.model.dimensions, manifest.coarse_dimensions)
    codes, scales, projection, mean = (arrays[name] for name in COARSE_ARRAYS)
    scan = Int8Scorer(QuantizedVectors(codes, scales), threads)
    exact = Int8Rows(vectors, threads)  # a coarse build stores its vectors row-major: no copy
    return CoarseSemantic(projection, mean, scan, exact, arrays.get("coarse_second_moment"))


def _mapped_array(directory: Path, name: str) -> np.ndarray[Any, Any]:
    """A build's array, memory-mapped read-only (the module's docstring says why), as a plain ndarray."""
    return np.asarray(np.load(directory / f"{name}.npy", mmap_mode="r", allow_pickle=False))


def _usage(directory: Path, manifest: Manifest, misfit: Misfit) -> UsageEvidence:
    with_classifier = manifest.usage is not None and manifest.usage.classifier
    names = USAGE_ARRAYS + (CLASSIFIER_ARRAYS if with_classifier else ())
    arrays = {name: _mapped_array(directory, name) for name in names}
    check_usage(misfit, arrays, manifest.model.dimensions, with_classifier)
    past = QuantizedVectors(arrays["usage_vectors"], arrays["usage_scales"])
    classifier = None
    if with_classifier:
        classifier = Int8Scorer(QuantizedVectors(arrays["usage_classifier"], arrays["usage_classifier_scales"]))
    return UsageEvidence(
        Int8Scorer(past),
        arrays["usage_tools"],
        arrays["co_usage_indptr"],
        arrays["co_usage_tools"],
        arrays["co_usage_shares"],
        classifier,
    )


def _vocabulary(directory: Path, misfit: Misfit) -> object:
    try:
        vocabulary: object = json.loads((directory / VOCABULARY).read_bytes())
    except ValueError as exc:
        raise misfit.fail(VOCABULARY, f"is not JSON ({exc})") from None
    return vocabulary


def _tool_records(directory: Path, schema_version: int) -> ToolRecords:
    if schema_version == SCHEMA_VERSION:
        return open_records(directory / TOOLS, _tool_keys(directory / TOOL_KEYS))
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
