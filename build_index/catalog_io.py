"""Reading catalog JSONL files: every row validated, every problem reported with its file and line."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import ValidationError

from handler.catalog.json_limits import catalog_schema_problems
from handler.catalog.names import name_key, name_problem
from handler.catalog.tool import Tool
from handler.errors import CatalogError

MAX_REPORTED = 20


def _describe(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "row"
        parts.append(f"{where}: {error['msg']}")
    return "; ".join(parts)


def read_catalogs(paths: Sequence[Path]) -> list[Tool]:
    """All tools of the given JSONL files, in order. Any bad row fails the whole read (nothing is dropped)."""
    tools: list[Tool] = []
    problems: list[str] = []
    seen: dict[str, tuple[str, str]] = {}  # name_key -> (name, file:line): the lookup's folding decides
    for path in paths:
        for line_no, line in _lines(path):
            where = f"{path}:{line_no}"
            try:
                tool = Tool.model_validate(json.loads(line))
            except ValueError as exc:  # json.JSONDecodeError and ValidationError are both ValueErrors
                problems.append(
                    f"{where}: {_describe(exc) if isinstance(exc, ValidationError) else f'not JSON ({exc})'}"
                )
                continue
            unnameable = name_problem(tool.name)
            if unnameable is not None:  # it would build, and `toolrec policy` could not name it
                problems.append(f"{where}: tool name {tool.name!r} {unnameable}")
                continue
            # Here as well as in the build's check, so that the file and line are named.
            problems.extend(
                f"{where}: {tool.name}: input_schema{p}" for p in catalog_schema_problems(tool.input_schema)
            )
            key = name_key(tool.name)
            if key in seen:
                first_name, first_where = seen[key]
                if first_name == tool.name:
                    problems.append(f"{where}: duplicate tool name {tool.name!r} (first at {first_where})")
                else:
                    problems.append(
                        f"{where}: duplicate tool name {tool.name!r}: callers cannot tell it from {first_name!r} "
                        f"(at {first_where}); names may not differ only in case or '.'/'_'"
                    )
                continue
            seen[key] = (tool.name, where)
            tools.append(tool)
    if problems:
        shown = "\n  ".join(problems[:MAX_REPORTED])
        more = f"\n  ... and {len(problems) - MAX_REPORTED} more" if len(problems) > MAX_REPORTED else ""
        raise CatalogError(f"{len(problems)} invalid catalog row(s); nothing was built:\n  {shown}{more}")
    if not tools:
        raise CatalogError(f"no tools in {', '.join(map(str, paths))}")
    return tools


def _lines(path: Path) -> Iterable[tuple[int, str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(f"cannot read catalog {path}: {exc}") from exc
    for line_no, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield line_no, line
