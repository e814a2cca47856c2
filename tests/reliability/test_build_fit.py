"""A build whose arrays do not fit its tools is refused at load, and the previous build keeps serving (issue 33
item 2). The probe: copy the served build, set every entry of ``bm25_doc_ids.npy`` to 1,000,000, recompute the
manifest's sha256 values and point LATEST at it. The build loaded, /healthz named it, and every select and search
answered 500. Each misfit below passes every checksum, as a build edited by hand or written by a faulty tool would.

Real server on loopback: toolrec's own composition root over a local index directory, checking LATEST on every
request.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest

from handler.composition import build_app
from handler.index.format import BUILDS, LATEST, MANIFEST
from handler.inference.model_files import sha256_file
from handler.ranking.query import Embedder
from tests.reliability.test_error_disclosure import log_messages
from tests.support.servers import serve
from tests.support.serving import API_KEY, demo_tools, file_settings, publish_tools, write_test_policy

Edit = Callable[[Path], None]


def _array(name: str, change: Callable[[np.ndarray[Any, Any]], np.ndarray[Any, Any]]) -> Edit:
    def edit(build: Path) -> None:
        path = build / f"{name}.npy"
        np.save(path, change(np.array(np.load(path, allow_pickle=False))), allow_pickle=False)

    return edit


def _vocabulary(change: Callable[[dict[str, int]], object]) -> Edit:
    def edit(build: Path) -> None:
        path = build / "bm25_vocabulary.json"
        path.write_text(json.dumps(change(json.loads(path.read_text()))))

    return edit


def _filled(value: float) -> Callable[[np.ndarray[Any, Any]], np.ndarray[Any, Any]]:
    def fill(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        array[...] = value
        return array

    return fill


MISFITS: dict[str, tuple[Edit, str]] = {
    "the probe: every document id 1,000,000": (_array("bm25_doc_ids", _filled(1_000_000)), "bm25_doc_ids.npy"),
    "a negative document id": (_array("bm25_doc_ids", lambda a: np.where(a == a.max(), -1, a)), "bm25_doc_ids.npy"),
    "offsets that fall back": (_array("bm25_indptr", lambda a: a[::-1].copy()), "bm25_indptr.npy"),
    "offsets past the postings": (_array("bm25_indptr", lambda a: a + 1), "bm25_indptr.npy"),
    "a weight per posting too few": (_array("bm25_weights", lambda a: a[:-1]), "bm25_weights.npy"),
    "weights of another type": (_array("bm25_weights", lambda a: a.astype(np.float64)), "bm25_weights.npy"),
    "a weight that is no number": (_array("bm25_weights", lambda a: np.where(a == a.max(), np.nan, a)), "weights"),
    "a term id past the postings": (_vocabulary(lambda v: v | {"zzz": len(v) + 5}), "bm25_vocabulary.json"),
    "two terms with one id": (_vocabulary(lambda v: v | {"zzz": 0}), "bm25_vocabulary.json"),
    "a vocabulary that is a list": (_vocabulary(list), "bm25_vocabulary.json"),
    "a vector row too few": (_array("vectors", lambda a: a[:-1]), "vectors.npy"),
    "vectors of floats": (_array("vectors", lambda a: a.astype(np.float32)), "vectors.npy"),
    "a scale that is infinite": (_array("vector_scales", _filled(np.inf)), "vector_scales.npy"),
}


def _republish(index: Path, edit: Edit) -> str:
    """A copy of the served build, edited, its manifest's sha256 values recomputed, and LATEST pointed at it."""
    served = (index / LATEST).read_text().strip()
    edited = f"{served}-edited"
    build = index / BUILDS / edited
    shutil.copytree(index / BUILDS / served, build)
    edit(build)
    manifest = json.loads((build / MANIFEST).read_text())
    manifest["build_id"] = edited
    manifest["files"] = {name: sha256_file(build / name) for name in manifest["files"]}
    (build / MANIFEST).write_text(json.dumps(manifest))
    (index / LATEST).write_text(edited)
    return edited


@pytest.mark.parametrize("misfit", list(MISFITS))
def test_a_build_that_does_not_fit_its_tools_is_refused_and_the_previous_build_keeps_serving(
    embedder: Embedder, tmp_path: Path, misfit: str
) -> None:
    edit, named = MISFITS[misfit]
    index = tmp_path / "index"
    first = publish_tools(demo_tools(), str(index), embedder)
    settings = file_settings(
        str(index), write_test_policy(tmp_path / "policy.json"), tmp_path / "cache", index_refresh_seconds=0
    )
    with serve(build_app(settings, embedder=embedder)) as base, httpx.Client(base_url=base, timeout=30) as client:
        client.headers["Authorization"] = f"Bearer {API_KEY}"
        assert client.get("/healthz").json()["build_id"] == first
        with log_messages() as logged:
            edited = _republish(index, edit)
            for _ in range(2):  # refused on every check, not just once
                select = client.post("/v1/tools/select", json={"tasks": ["send a Slack message"], "user_id": "u"})
                assert select.status_code == 200, select.text[:300]
                assert select.json()["results"][0]["suggestions"][0]["tool_name"] == "Slack.SendMessage"
                search = client.post("/v1/tools/search", json={"query": "slack message", "user_id": "u"})
                assert search.status_code == 200 and search.json()["results"], search.text[:300]
                assert client.get("/healthz").json()["build_id"] == first
    refusals = [m for m in logged if edited in m]
    assert refusals and all(named in m and "does not fit its tools" in m for m in refusals), logged
