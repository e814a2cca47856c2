"""`toolrec serve --index` with a folder that holds no published index stops at once and says what it expected
(issue 33 item 9): a mistyped folder started a server that said where it listened and answered 503 to everything.

The real CLI, as a user runs it, on a free loopback port.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from build_index.ops.loopback import free_port
from build_index.ops.serve import ensure_demo_index
from handler.index.format import BUILDS, LATEST
from handler.ranking.query import Embedder


def _serve(index: Path, root: Path) -> subprocess.CompletedProcess[str]:
    """``toolrec serve`` (this checkout's, as build_index/ops/loopback.py runs it); a server that starts times out."""
    cli = [sys.executable, "-m", "build_index.cli", "serve", "--port", str(free_port()), "--root", str(root)]
    return subprocess.run([*cli, "--index", str(index)], capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory, embedder: Embedder) -> Path:
    index = tmp_path_factory.mktemp("serve-index") / "index"
    ensure_demo_index(index, embedder)
    return index


@pytest.mark.parametrize(
    ("mistake", "said"),
    [
        ("a folder that does not exist", "no such folder"),
        ("a folder with no index in it", f"it holds no {LATEST}"),
    ],
)
def test_a_folder_without_an_index_stops_serve_naming_it(tmp_path: Path, mistake: str, said: str) -> None:
    index = tmp_path / "mine" / "indx"  # the user meant mine/index
    if mistake == "a folder with no index in it":
        index.mkdir(parents=True)
    ran = _serve(index, tmp_path / "root")
    output = ran.stdout + ran.stderr
    assert ran.returncode == 2, output
    assert f"toolrec: no index at {index}: {said}" in ran.stderr, output
    assert f"toolrec build --out {index}" in ran.stderr and f"{LATEST} and {BUILDS}/" in ran.stderr, output
    assert "toolrec on" not in output and "Traceback" not in output, output
    assert not (tmp_path / "root").exists()  # no policy file or key written for a server that never ran


def test_one_build_of_an_index_is_said_with_the_folder_to_serve(published: Path, tmp_path: Path) -> None:
    build = published / BUILDS / (published / LATEST).read_text().strip()
    ran = _serve(build, tmp_path / "root")
    assert ran.returncode == 2, ran.stdout + ran.stderr
    assert f"toolrec: {build} is one build; serve the folder that holds {LATEST}: --index {published}" in ran.stderr
