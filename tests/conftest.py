"""Fixtures shared by every test package: the real embedding model, loaded once, and the shared data folder."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from build_index.quality.shared_data import SHARED_DIR_VARIABLE, shared_dir
from handler.catalog.tool import Tool
from handler.inference.embedder import OnnxEmbedder
from handler.inference.model_files import default_model_dir

REPO_ROOT = Path(__file__).resolve().parent.parent
# Benchmarks and catalogs are read in place, never copied into the repository (build_index/quality/shared_data.py).
SHARED = shared_dir()
# .ci/run sets it: there ../shared is present, and a test skipped for want of it would hide a failure.
REQUIRE_SHARED_VARIABLE = "TOOLREC_REQUIRE_SHARED"

# backends, prepared, gateway: the gateway app on real loopback back ends, for the modules that test through it.
pytest_plugins = ["tests.support.gateway_fixtures"]


@pytest.fixture(scope="session")
def embedder() -> OnnxEmbedder:
    """The prepared model. Not skipped when missing: OnnxEmbedder raises ModelMissingError naming
    `toolrec model prepare`, and that failure is the message a developer needs."""
    return OnnxEmbedder(default_model_dir())


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The one way a test says it needs the shared benchmark data: a clone without ../shared skips it (the
    rest run on the demo catalog); with TOOLREC_REQUIRE_SHARED=1 (CI) a missing folder fails it instead."""
    if not SHARED.is_dir():
        reason = f"{SHARED} is missing: this test reads the shared benchmarks and catalogs (${SHARED_DIR_VARIABLE})"
        if os.environ.get(REQUIRE_SHARED_VARIABLE) == "1":
            pytest.fail(f"{reason}, and ${REQUIRE_SHARED_VARIABLE}=1 says it must be there")
        pytest.skip(reason)
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
