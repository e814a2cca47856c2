"""The layout's one rule (README "Code map"): each package imports only packages below it, never one above.

Every import counts, lazy and TYPE_CHECKING ones included: a lazy import upward is the same dependency, paid later.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Bottom to top. Modules of one rank may import each other; a module never imports a higher rank.
HANDLER_LAYERS = [
    {"handler", "handler.errors", "handler.observability"},
    {"handler.catalog"},
    {"handler.ranking"},
    {"handler.inference", "handler.settings"},
    {"handler.policy"},
    {"handler.index"},
    {"handler.execute"},
    {"handler.services"},
    {"handler.api"},
    {"handler.mcp", "handler.providers"},
    {"handler.app", "handler.composition", "handler.snapstart", "handler.lambda_entry"},
]
BUILD_LAYERS = [
    {"build_index", "build_index.build", "build_index.ingest", "build_index.model_prepare", "build_index.publish",
     "build_index.usage", "build_index.drift", "build_index.refresh", "build_index.cli_options"},
    {"build_index.quality", "build_index.ops"},
    {"build_index.bench"},
    {"build_index.cli"},
]  # fmt: skip


def _unit(module: str, layers: list[set[str]]) -> str | None:
    """The longest layer entry that names ``module`` or a package holding it."""
    names = [name for layer in layers for name in layer if module == name or module.startswith(name + ".")]
    return max(names, key=len, default=None)


def _rank(module: str, layers: list[set[str]]) -> int | None:
    unit = _unit(module, layers)
    return None if unit is None else next(i for i, layer in enumerate(layers) if unit in layer)


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found |= {node.module, *(f"{node.module}.{alias.name}" for alias in node.names)}
    return found


def _module_of(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.mark.parametrize(("package", "layers"), [("handler", HANDLER_LAYERS), ("build_index", BUILD_LAYERS)])
def test_no_module_imports_a_package_above_its_own(package: str, layers: list[set[str]]) -> None:
    upward = []
    for path in sorted((ROOT / package).rglob("*.py")):
        module = _module_of(path)
        own = _rank(module, layers)
        assert own is not None, f"{module} is in no layer: add it to this test's map and README's Code map"
        for imported in _imports(path):
            rank = _rank(imported, layers)
            same_unit = _unit(imported, layers) == _unit(module, layers)
            if rank is not None and rank > own and not same_unit:
                upward.append(f"{module} imports {imported}")
    assert not upward, upward


def test_the_serving_side_never_imports_the_build_side() -> None:
    offending = [
        f"{_module_of(path)} imports {name}"
        for path in sorted((ROOT / "handler").rglob("*.py"))
        for name in _imports(path)
        if name == "build_index" or name.startswith("build_index.")
    ]
    assert not offending, offending
