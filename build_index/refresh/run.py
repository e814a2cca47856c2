"""``toolrec refresh``: re-read a tenant's upstream MCP servers and its query log, and publish a new build only when
the tools or the usage evidence changed.

The published build is the source of everything that did not come from those servers (catalog files, other
upstreams): its tools whose ``mcp`` executor targets one of the servers are replaced by what the server lists now,
the others are kept as they are, and every name keeps the tool it named (``Precedent``; a refresh that would still
move one is refused). The new tool set's ``catalog_digest`` is compared with the one the current
manifest records, and what the query log would fold (``usage.evidence_digest``) with the manifest's; both equal,
and built with the model this toolrec runs, nothing is built or published. Unchanged tools keep their vectors.
A golden (build_index/drift.py) is checked on the new build before LATEST moves.
The same function runs locally (``toolrec refresh``) and on the schedule (build_index/refresh/lambda_entry.py).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from build_index.build import embed_texts, index_tools
from build_index.drift import Golden, IndexEndpoint, check
from build_index.ingest.mcp_tools import Precedent, ingest, merge
from build_index.ingest.upstream_headers import SecretReader, Upstream, resolve_headers
from build_index.publish import publish
from build_index.usage.fold import evidence_digest, fold_usage, read_usage
from handler.catalog.names import DEFAULT_NAMESPACE, name_key
from handler.catalog.tool import Tool
from handler.errors import CatalogError, ToolrecError
from handler.index.format import MANIFEST, BuiltIndex, catalog_digest, read_manifest
from handler.index.load import load_build, rebuild_of
from handler.index.store import LocalIndexStore, load_latest, open_store
from handler.ranking.query import Embedder


@dataclass(frozen=True)
class RefreshResult:
    published: bool
    build_id: str
    tool_count: int
    catalog_sha256: str


def refreshed_tools(
    current: Sequence[Tool],
    upstreams: Sequence[Upstream],
    environ: Mapping[str, str],
    read_secret: SecretReader | None = None,
    namespace: str = DEFAULT_NAMESPACE,
) -> list[Tool]:
    urls = {upstream.url for upstream in upstreams}
    kept = [t for t in current if not (t.executor and t.executor.kind == "mcp" and t.executor.target in urls)]
    fresh = [
        tool
        for upstream in upstreams
        for tool in ingest(
            upstream.url,
            upstream.app,
            headers=resolve_headers(upstream.headers, environ, read_secret),
            namespace=namespace,
            precedent=Precedent.of(current, upstream.url),
        )
    ]
    tools = merge(kept, fresh)
    moved = moved_names(current, tools)
    if moved:  # Precedent keeps names; this holds whatever a later change to the naming does
        raise CatalogError(
            f"not published: the refresh would give a name to another tool ({'; '.join(moved)}), and the access "
            "rules, pins and usage that name it would move with it"
        )
    return tools


def moved_names(before: Sequence[Tool], after: Sequence[Tool]) -> list[str]:
    """Each name (any spelling) that ``after`` gives another tool than ``before`` did, as "NAME: X, now Y"."""
    ran_by = {name_key(t.name): t for t in before}
    moved = []
    for tool in after:
        was = ran_by.get(name_key(tool.name))
        if was is not None and _runs(was) != _runs(tool):
            moved.append(f"{tool.name}: {_runs(was)}, now {_runs(tool)}")
    return moved


def _runs(tool: Tool) -> str:
    """What a call by the tool's name reaches: its executor's kind, target and upstream name."""
    spec = tool.executor
    return "no executor" if spec is None else f"{spec.kind} {spec.target} {spec.tool or ''}".rstrip()


def refresh(
    location: str,
    upstreams: Sequence[Upstream],
    embedder: Embedder,
    model_id: str,
    environ: Mapping[str, str],
    *,
    usage: str | None = None,
    golden: Golden | None = None,
    s3_client: Any = None,
    dynamodb_client: Any = None,
    read_secret: SecretReader | None = None,
    namespace: str = DEFAULT_NAMESPACE,
) -> RefreshResult:
    """Rebuild and publish ``location`` if its upstream tools or, with ``usage`` (a ``--usage`` source), the usage
    evidence changed; the current build must exist. With ``golden``, the new build must pass the drift check
    before LATEST moves (DriftError: nothing is published). ``namespace``: the serving function's, whose own tools'
    names the new build may not hold."""
    store = open_store(location, s3_client)
    with tempfile.TemporaryDirectory(prefix="toolrec-refresh-") as scratch:
        build_id = store.latest_build_id()  # none published: IndexNotPublishedError says to run `toolrec build`
        directory = store.fetch(build_id, Path(scratch))
        manifest = read_manifest((directory / MANIFEST).read_bytes())
        # Verified against its own model and not for serving: a build from another model, or holding names now
        # reserved (its upstream tools are renamed as they are read again), is still a valid source of tool records.
        loaded = load_build(directory, manifest.model.fingerprint, namespace=None)
        current = list(loaded.tools)
        tools = refreshed_tools(current, upstreams, environ, read_secret, namespace) if upstreams else current
        digest = catalog_digest(tools)
        same_tools = digest == manifest.catalog_sha256 and manifest.model.fingerprint == embedder.fingerprint
        log = read_usage(usage, time.time(), dynamodb_client) if usage else None
        evidence = None if log is None else evidence_digest(log, [t.name for t in tools])
        if same_tools and evidence == (manifest.usage.evidence_sha256 if manifest.usage else None):
            return RefreshResult(False, build_id, len(tools), digest)
        # Unchanged tools keep their vectors: only new usage is embedded.
        built = rebuild_of(directory, loaded, current) if same_tools else None
    if built is None:
        built = index_tools(tools, embedder, model_id, progress=False, namespace=namespace)
    if log is not None and usage is not None:
        names = [t.name for t in tools]
        built = replace(built, usage=fold_usage(log, names, lambda texts: embed_texts(texts, embedder), usage))
    if golden is not None:
        drift_checked(built, golden, embedder)
    published = publish(built, location, s3_client)
    return RefreshResult(True, published.build_id, published.tool_count, digest)


class DriftError(ToolrecError):
    """The new build answers the drift check's golden queries differently: it is not published."""


def drift_checked(built: BuiltIndex, golden: Golden, embedder: Embedder) -> None:
    """The drift check (build_index/drift.py) on a build before it is published, over its whole catalog."""
    with tempfile.TemporaryDirectory(prefix="toolrec-drift-") as scratch:
        publish(built, scratch)
        loaded = load_latest(LocalIndexStore(Path(scratch)), Path(scratch), embedder.fingerprint)
        report = check(IndexEndpoint(loaded, embedder), golden)
    if report.moved:
        raise DriftError(f"not published: the drift check failed\n{report.format()}")
