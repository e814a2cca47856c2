"""The local model directory: its spec file, its pinned sha256s, and how to find it.

Written by ``toolrec model prepare`` (build_index/model_prepare.py) and read by the embedder. The
fingerprint of the spec is recorded in every index manifest, so an index built with one model is
never served with another.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from handler.errors import IntegrityError, ModelMissingError

SPEC_FILE = "model_spec.json"
MODEL_DIR_ENV = "TOOLREC_MODEL_DIR"
DEFAULT_MODEL_DIR = Path.home() / ".cache" / "toolrec" / "models" / "all-MiniLM-L6-v2-int8"
PREPARE_HINT = "run `toolrec model prepare` (it copies the shipped, sha256-pinned model into place)"


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        for block in iter(lambda: stream.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def default_model_dir() -> Path:
    configured = os.environ.get(MODEL_DIR_ENV)
    return Path(configured) if configured else DEFAULT_MODEL_DIR


@dataclass(frozen=True)
class ModelSpec:
    model_id: str
    dimensions: int
    max_tokens: int
    files: dict[str, str]  # file name -> sha256

    @property
    def fingerprint(self) -> str:
        """One hash that changes when any model file changes: what an index manifest pins."""
        canonical = json.dumps({"model_id": self.model_id, "files": self.files}, sort_keys=True)
        return hashlib.sha256(canonical.encode()).hexdigest()

    def to_json(self) -> str:
        body = {
            "model_id": self.model_id,
            "dimensions": self.dimensions,
            "max_tokens": self.max_tokens,
            "files": self.files,
        }
        return json.dumps(body, indent=2, sort_keys=True) + "\n"


def read_spec(model_dir: Path, verify: bool = True) -> ModelSpec:
    """Read the spec of a prepared model directory; with ``verify``, check every file's sha256."""
    spec_path = model_dir / SPEC_FILE
    if not spec_path.is_file():
        raise ModelMissingError(f"no model at {model_dir}: {PREPARE_HINT}")
    try:
        raw = json.loads(spec_path.read_text())
        spec = ModelSpec(
            str(raw["model_id"]),
            int(raw["dimensions"]),
            int(raw["max_tokens"]),
            {str(k): str(v) for k, v in raw["files"].items()},
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise IntegrityError(f"model spec {spec_path} is unreadable ({exc}): {PREPARE_HINT}") from exc
    if verify:
        for name, expected in spec.files.items():
            path = model_dir / name
            if not path.is_file():
                raise ModelMissingError(f"model file {path} is missing: {PREPARE_HINT}")
            if sha256_file(path) != expected:
                raise IntegrityError(f"model file {path} does not match its sha256 in {SPEC_FILE}: {PREPARE_HINT}")
    return spec
