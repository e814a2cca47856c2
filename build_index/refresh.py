"""``toolrec refresh``: re-read a tenant's upstream MCP servers and publish a new build only when the tools changed.

The published build is the source of everything that did not come from those servers (catalog files, other
upstreams): its tools whose ``mcp`` executor targets one of the servers are replaced by what the server lists now,
the others are kept as they are. The new tool set's ``catalog_digest`` is compared with the one the current
manifest records; equal, and built with the model this toolrec runs, nothing is built or published.
The same function runs locally (``toolrec refresh``) and on the schedule (build_index/refresh_entry.py).
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from build_index.build import build_index
from build_index.mcp_ingest import ingest, merge
from build_index.publish import publish
from build_index.upstream_headers import SecretReader, Upstream, resolve_headers
from handler.catalog import Tool
from handler.embedder import Embedder
from handler.index_format import MANIFEST, catalog_digest, load_build, read_manifest
from handler.index_store import open_store


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
) -> list[Tool]:
    urls = {upstream.url for upstream in upstreams}
    kept = [t for t in current if not (t.executor and t.executor.kind == "mcp" and t.executor.target in urls)]
    fresh = [
        tool
        for upstream in upstreams
        for tool in ingest(upstream.url, upstream.app, headers=resolve_headers(upstream.headers, environ, read_secret))
    ]
    return merge(kept, fresh)


def refresh(
    location: str,
    upstreams: Sequence[Upstream],
    embedder: Embedder,
    model_id: str,
    environ: Mapping[str, str],
    *,
    s3_client: Any = None,
    read_secret: SecretReader | None = None,
) -> RefreshResult:
    """Rebuild and publish ``location`` if its upstream tools changed; the current build must exist."""
    store = open_store(location, s3_client)
    with tempfile.TemporaryDirectory(prefix="toolrec-refresh-") as scratch:
        build_id = store.latest_build_id()  # none published: IndexNotPublishedError says to run `toolrec build`
        directory = store.fetch(build_id, Path(scratch))
        manifest = read_manifest((directory / MANIFEST).read_bytes())
        # Verified against its own model: a build from another model is still a valid source of tool records.
        current = list(load_build(directory, manifest.model.fingerprint).tools)
    tools = refreshed_tools(current, upstreams, environ, read_secret)
    digest = catalog_digest(tools)
    if digest == manifest.catalog_sha256 and manifest.model.fingerprint == embedder.fingerprint:
        return RefreshResult(False, build_id, len(tools), digest)
    built = build_index(tools, embedder, model_id, progress=False)
    published = publish(built, location, s3_client)
    return RefreshResult(True, published.build_id, published.tool_count, digest)
