"""`toolrec model prepare`: put the pinned model directory in place. Offline, idempotent.

The model is all-MiniLM-L6-v2 fine-tuned on ../shared/training to read tasks the way tool catalogs are
written (`toolrec model finetune`, build_index/quality/finetune.py), exported to ONNX and quantized to int8 per
channel. Making it takes ~20 minutes of two cores and torch, which neither CI nor someone setting up the
service should need, so the result is committed in build_index/model/ (22 MB, next to the source model's
tokenizer, LICENSE and NOTICE) and pinned here by sha256. Prepare copies those files and checks them.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from handler.errors import IntegrityError, ModelMissingError
from handler.inference.model_files import SPEC_FILE, ModelSpec, read_spec, sha256_file

MODEL_ID = "all-MiniLM-L6-v2+toolrec-finetune-3@int8-per-channel"
DIMENSIONS = 384
MAX_TOKENS = 128
SHIPPED_DIR = Path(__file__).resolve().parent / "model"
# What `toolrec model finetune` produced (its recipe, its pinned wheel, torch 2.13.0 CPU, onnxruntime 1.32.0).
# A change here moves every vector: rebuild the indexes, re-record the golden vectors and the drift goldens,
# and recalibrate the score and the no match (`toolrec calibrate-score`, handler/ranking/confidence.py).
PINNED_FILES = {
    "model.onnx": "412ece2e50acc98f2eaed69d57e41f8c24958473409331c5ab862b5e64fcf7bc",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}


def verify_files(directory: Path) -> None:
    """Refuse, by name, a pinned file that is missing from ``directory`` or differs from its pin."""
    for name, expected in PINNED_FILES.items():
        path = directory / name
        if not path.is_file():
            raise ModelMissingError(f"{path} is missing: restore it from the repository (git checkout -- {path})")
        actual = sha256_file(path)
        if actual != expected:
            raise IntegrityError(f"{path} has sha256 {actual}, pinned {expected}: restore it from the repository")


def prepare(model_dir: Path, source: Path = SHIPPED_DIR) -> ModelSpec:
    """Create (or verify) the model directory from the shipped files. A verified directory is left untouched."""
    if (model_dir / SPEC_FILE).is_file():
        try:
            spec: ModelSpec | None = read_spec(model_dir)
        except (IntegrityError, ModelMissingError):
            spec = None  # tampered or partial: rebuild it, as the error message told the user to do
        if spec is not None and spec.model_id == MODEL_ID and spec.files == PINNED_FILES:
            return spec
    verify_files(source)
    model_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=model_dir.parent) as tmp:
        staged = Path(tmp) / "model"
        staged.mkdir()
        for name in PINNED_FILES:
            shutil.copyfile(source / name, staged / name)
        verify_files(staged)  # a short copy (disk full) must not become the served model
        spec = ModelSpec(MODEL_ID, DIMENSIONS, MAX_TOKENS, dict(PINNED_FILES))
        (staged / SPEC_FILE).write_text(spec.to_json())
        # Swap in the finished directory only at the end, so an interrupted run leaves nothing half-made.
        if model_dir.exists():
            shutil.rmtree(model_dir)
        staged.rename(model_dir)
    return spec
