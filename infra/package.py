"""Build the Lambda code directory that template.yaml's ``CodeUri`` names (``build/lambda``).

It holds ``handler/`` (all the serving function imports), the build_index modules the scheduled refresh runs
(REFRESH_MODULES), the runtime wheels for the Lambda platform, installed exactly as pinned in
``infra/lambda-requirements.txt`` with ``--no-deps``, and the prepared model directory (``model/``,
``TOOLREC_MODEL_DIR=/var/task/model``). No torch, no build or test dependencies.

Bytecode is compiled in, by a python3.12 (``TOOLREC_LAMBDA_PYTHON``, else ``python3.12`` on PATH or pyenv's): the
function's code directory is read-only, so without it every cold start recompiles every module (measured here:
4.7 s of CPU to import the entry module's dependencies without .pyc files, 2.2 s with them). Hash-based pycs
(``unchecked-hash``) with ``/var/task`` paths keep the build reproducible: no timestamps, no build-machine paths.

Platform: the python3.12 runtime on x86_64. Not python3.11: that runtime runs on Amazon Linux 2 (glibc 2.26), and
onnxruntime 1.32 (pinned for the model's sha256) publishes only ``manylinux_2_28`` wheels for Linux, which need
glibc >= 2.28; python3.12 runs on Amazon Linux 2023 (glibc 2.34).

    python -m infra.package --out build/lambda     # build (what `make package` runs)
    python -m infra.package --lock                 # re-resolve infra/lambda-requirements.txt
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from handler.inference.model_files import default_model_dir, read_spec
from infra.tenant import load_tenant, tenant_names
from infra.tools import ToolFailedError, exit_code_of, run_tool

REPO_ROOT = Path(__file__).resolve().parents[1]
LOCK_FILE = REPO_ROOT / "infra" / "lambda-requirements.txt"
PYTHON_VERSION = "3.12"
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux2014_x86_64")
# Pulled in by a dependency but never imported on the request path; leaving them out keeps the unzipped package
# under Lambda's 250 MB. uvicorn and swagger-ui-bundle (/docs' assets, unrouted in template.yaml): the local
# server only. huggingface-hub and its own dependencies: tokenizers
# needs it only for from_pretrained (downloads), and the service loads tokenizer.json from the model directory.
EXCLUDED = frozenset(
    {
        "uvicorn",
        "swagger-ui-bundle",
        "huggingface-hub",
        "hf-xet",
        "fsspec",
        "filelock",
        "tqdm",
        "pyyaml",
        "typer",
        "shellingham",
    }
)
# Inside installed packages: tests and offline tooling the service never imports.
PRUNED = ("numpy/*/tests", "numpy/tests", "onnxruntime/transformers", "onnxruntime/quantization", "onnxruntime/tools")
# The scheduled refresh (template.yaml RefreshFunction) runs the build step in the function: these modules of
# build_index and nothing else of it (not its copy of the model, the demo, benchmarks, evaluation or training).
REFRESH_MODULES = ("__init__", "build", "model_prepare", "publish", "drift",
                   "ingest/__init__", "ingest/catalog_files", "ingest/mcp_tools", "ingest/upstream_headers",
                   "usage/__init__", "usage/evidence", "usage/fold", "usage/query_log",
                   "refresh/__init__", "refresh/run", "refresh/lambda_entry")  # fmt: skip
MAX_UNZIPPED_BYTES = 250 * 1024 * 1024
LAMBDA_TASK_ROOT = "/var/task"
PROGRAM = "python -m infra.package"


def lambda_python() -> str:
    """An interpreter of the Lambda runtime's version, to compile bytecode and to test the package with."""
    pyenv = Path(os.environ.get("PYENV_ROOT") or Path.home() / ".pyenv") / "versions"
    candidates = [os.environ.get("TOOLREC_LAMBDA_PYTHON", ""), shutil.which(f"python{PYTHON_VERSION}") or ""]
    candidates += sorted(str(p) for p in pyenv.glob(f"{PYTHON_VERSION}*/bin/python{PYTHON_VERSION}"))
    for candidate in filter(None, candidates):
        probe = subprocess.run(  # noqa: S603 (a local interpreter path, no shell)
            [candidate, "-I", "-S", "-c", "import sys; print(sys.version_info[:2])"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if probe.returncode == 0 and probe.stdout.strip() == str(tuple(map(int, PYTHON_VERSION.split(".")))):
            return candidate
    raise ToolFailedError(
        [f"python{PYTHON_VERSION}"], None, f"install python{PYTHON_VERSION} or set TOOLREC_LAMBDA_PYTHON to its path"
    )


def runtime_requirements(pyproject: Path = REPO_ROOT / "pyproject.toml") -> list[Requirement]:
    dependencies = tomllib.loads(pyproject.read_text())["project"]["dependencies"]
    requirements = [Requirement(text) for text in dependencies]
    return [r for r in requirements if canonicalize_name(r.name) not in EXCLUDED]


def _pip_platform_args() -> list[str]:
    args = ["--only-binary=:all:", "--python-version", PYTHON_VERSION, "--implementation", "cp"]
    for platform in PLATFORMS:
        args += ["--platform", platform]
    return args


def _pip(*args: str) -> None:
    command = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet", *args]
    fix = (
        "pip says why above: a pin of infra/lambda-requirements.txt it cannot find for the Lambda platform"
        f" (`{PROGRAM} --lock` re-resolves them), or no index to download from"
    )
    run_tool(command, fix)


def lock(out: Path = LOCK_FILE) -> list[str]:
    """Resolve the runtime dependencies for the Lambda platform and write them pinned, minus EXCLUDED."""
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "report.json"
        requirements = [str(r) for r in runtime_requirements()]
        _pip("install", "--dry-run", "--ignore-installed", "--target", tmp, "--report", str(report),
             *_pip_platform_args(), *requirements)  # fmt: skip
        resolved = json.loads(report.read_text())["install"]
    pins = sorted(
        f"{item['metadata']['name']}=={item['metadata']['version']}"
        for item in resolved
        if canonicalize_name(item["metadata"]["name"]) not in EXCLUDED
    )
    header = (
        f"# Lambda runtime wheels (python{PYTHON_VERSION}, {', '.join(PLATFORMS)}), installed with --no-deps.\n"
        "# Regenerate: python -m infra.package --lock\n"
    )
    out.write_text(header + "\n".join(pins) + "\n")
    return pins


def locked(lock_file: Path = LOCK_FILE) -> list[str]:
    lines = (line.strip() for line in lock_file.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def build(out: Path, model_dir: Path | None = None) -> Path:
    """Rebuild ``out`` from scratch: the same inputs give the same files."""
    model_dir = model_dir or default_model_dir()
    spec = read_spec(model_dir)  # refuses a missing or altered model before anything is built
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    _pip("install", "--no-deps", "--no-compile", "--target", str(out), *_pip_platform_args(), *locked())
    for pattern in PRUNED:
        for path in out.glob(pattern):
            shutil.rmtree(path)
    shutil.rmtree(out / "bin", ignore_errors=True)  # console scripts, useless in Lambda
    shutil.copytree(REPO_ROOT / "handler", out / "handler", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for module in REFRESH_MODULES:
        (out / "build_index" / module).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / "build_index" / f"{module}.py", out / "build_index" / f"{module}.py")
    (out / "model").mkdir()
    for name in ["model_spec.json", *spec.files]:
        shutil.copy2(model_dir / name, out / "model" / name)
    # Each tenant's drift golden, which its scheduled refresh checks every new build against (template.yaml
    # TOOLREC_REFRESH_GOLDEN): one package serves every tenant.
    (out / "goldens").mkdir()
    for name in tenant_names():
        shutil.copy2(REPO_ROOT / load_tenant(name).drift.golden, out / "goldens" / f"{name}.golden.json")
    _compile_bytecode(out)
    return out


def _compile_bytecode(out: Path) -> None:
    command = [lambda_python(), "-I", "-m", "compileall", "-q", "-j", "0", "--invalidation-mode", "unchecked-hash",
               "-s", str(out), "-p", LAMBDA_TASK_ROOT, str(out)]  # fmt: skip
    run_tool(
        command, f"a module above does not compile under python{PYTHON_VERSION}: fix it", stdout=subprocess.DEVNULL
    )


def unzipped_size(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file() and not path.is_symlink())


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=PROGRAM, description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT / "build" / "lambda")
    parser.add_argument("--model-dir", type=Path, default=None)
    parser.add_argument("--lock", action="store_true", help="re-resolve infra/lambda-requirements.txt and stop")
    args = parser.parse_args(argv)
    return exit_code_of(PROGRAM, lambda: _lock() if args.lock else _package(args.out, args.model_dir))


def _lock() -> int:
    print(f"{len(lock())} pins written to {LOCK_FILE}")
    return 0


def _package(out: Path, model_dir: Path | None) -> int:
    size = unzipped_size(build(out, model_dir))
    print(f"{out}: {size / 2**20:.1f} MB unzipped (limit {MAX_UNZIPPED_BYTES / 2**20:.0f} MB)")
    return 0 if size < MAX_UNZIPPED_BYTES else 1


if __name__ == "__main__":
    sys.exit(main())
