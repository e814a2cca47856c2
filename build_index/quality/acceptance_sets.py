"""`toolrec acceptance-set`: the demo's or the Arcade catalog's acceptance tasks (tests/acceptance/) as a set in the
benchmark format, so `toolrec eval` reads them as it reads the others (README's cold and warm figures come from the
demo's). Report only: no weight or threshold is chosen on them, and their impossible tasks, which have no tool, are
left out (the acceptance tests count those)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ACCEPTANCE_DIR = Path(__file__).resolve().parents[2] / "tests" / "acceptance"
DEMO_CATALOG = Path(__file__).resolve().parents[1] / "demo" / "tools.jsonl"
ARCADE_CATALOG = Path("catalogs") / "arcade" / "tools.jsonl"
SETS = ("demo", "arcade")


def write_acceptance_set(which: str, out_dir: Path, shared_root: Path) -> Path:
    """``which``: demo or arcade. Writes tools.jsonl (the catalog, each tool's id its name) and queries.jsonl."""
    if which not in SETS:
        raise ValueError(f"no acceptance set {which!r}: choose one of {', '.join(SETS)}")
    catalog = DEMO_CATALOG if which == "demo" else shared_root / ARCADE_CATALOG
    rows = _rows(ACCEPTANCE_DIR / f"{which}_tasks.jsonl")
    if which == "demo":  # each task lists the tools that would each do it: one group of alternatives
        groups = [[list(row["relevant"])] if row["relevant"] else [] for row in rows]
    else:
        groups = [[list(group) for group in row["relevant_groups"]] for row in rows]
    out_dir.mkdir(parents=True, exist_ok=True)
    tools = [{"id": tool["name"], **tool} for tool in _rows(catalog)]  # a set names its tools by id
    (out_dir / "tools.jsonl").write_text("".join(json.dumps(t) + "\n" for t in tools), encoding="utf-8")
    queries = [
        {"id": str(row.get("id") or f"{which}-{number:03d}"), "query": row["task"], "relevant_groups": wanted,
         "relevant": sorted({tool for group in wanted for tool in group})}
        for number, (row, wanted) in enumerate(zip(rows, groups, strict=True)) if wanted
    ]  # fmt: skip
    (out_dir / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries), encoding="utf-8")
    return out_dir


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
