"""Fixtures shared by every test package: the real embedding model, loaded once, and the shared data folder."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from handler.catalog import Tool
from handler.embedder import OnnxEmbedder
from handler.model_files import default_model_dir

REPO_ROOT = Path(__file__).resolve().parent.parent
# Benchmarks and catalogs are read in place, never copied into the repository (CI has them at ../shared too).
SHARED = REPO_ROOT.parent / "shared"

# backends, prepared, gateway: the gateway app on real loopback back ends, for the modules that test through it.
pytest_plugins = ["tests.support.gateway_fixtures"]


@pytest.fixture(scope="session")
def embedder() -> OnnxEmbedder:
    """The prepared model. Not skipped when missing: OnnxEmbedder raises ModelMissingError naming
    `toolrec model prepare`, and that failure is the message a developer needs."""
    return OnnxEmbedder(default_model_dir())


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    assert SHARED.is_dir(), f"{SHARED} is missing: the tests read benchmarks and catalogs from ../shared"
    return SHARED


@pytest.fixture(scope="session")
def arcade_tools(shared_dir: Path) -> list[Tool]:
    """A 40-tool slice of the real arcade catalog (every 27th row: one or two tools from each app), as catalog
    entries. The shared file carries extra fields (id, full_description, ...) that a toolrec catalog does not."""
    rows = [json.loads(line) for line in (shared_dir / "catalogs" / "arcade" / "tools.jsonl").read_text().splitlines()]
    return [
        Tool(name=r["name"], description=r["description"], input_schema=r["input_schema"], app=r["app"])
        for r in rows[::27]
    ]


@pytest.fixture
def write_catalog(tmp_path: Path) -> Callable[..., Path]:
    """Write tools as a catalog JSONL file under tmp_path."""

    def write(tools: list[Tool], name: str = "tools.jsonl") -> Path:
        path = tmp_path / name
        path.write_text("".join(t.model_dump_json(exclude_none=True) + "\n" for t in tools), encoding="utf-8")
        return path

    return write
