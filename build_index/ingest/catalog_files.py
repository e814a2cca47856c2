"""Reading catalog JSONL files: every row validated, every problem reported with its file and line.

A field the format does not know is refused with the known field it most likely meant (``executer`` — did you mean
``executor``?), as the Tool model forbids it: dropped, the tool would lose its executor or authorization.
Beyond the Tool model, a catalog file's row is refused when (issue 26 item 4):
- its name holds whitespace or ``*`` (no access rule or pin could name it: names.name_problem);
- the ``App`` of ``App.ToolName`` is not its ``app`` (case aside): ``App.*`` rules read the name, authorization and
  ``/v1/apps`` read ``app``, so one tool would answer to two apps;
- its description has no first line: matching reads the name and that line, and an agent chooses by it;
- its name means, or reads as, an earlier row's: the same but for case and ``.``/``_`` (one name to every caller,
  names.name_key), or but for case, ``_`` and ``-`` (``Garage.CloseDoor`` beside ``Garage.Close_Door``: one name to
  a person or an agent choosing, names.lookalike_key).
A catalog file is the operator's to fix; an upstream MCP server's tools (ingest/mcp_tools.py) are named and described by
their server, so only what would break serving is refused there.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import ValidationError

from handler.catalog.json_limits import catalog_schema_problems
from handler.catalog.names import did_you_mean, lookalike_key, name_key, name_problem, nearest_name
from handler.catalog.tool import ROW_FIELDS, Tool
from handler.errors import CatalogError
from handler.ranking.text import first_line

MAX_REPORTED = 20


def _describe(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "row"
        parts.append(_unknown_field(error["loc"]) if error["type"] == "extra_forbidden" else f"{where}: {error['msg']}")
    return "; ".join(parts)


def _unknown_field(loc: tuple[int | str, ...]) -> str:
    """A field the format does not know, with the known one it most likely meant (issue 33 item 6)."""
    parent, name = tuple(str(p) for p in loc[:-1]), str(loc[-1])
    inside = f"{'.'.join(parent)}: " if parent else ""
    return f"{inside}unknown field {name!r}{did_you_mean(nearest_name(name, ROW_FIELDS.get(parent, ())))}"


def read_catalogs(paths: Sequence[Path]) -> list[Tool]:
    """All tools of the given JSONL files, in order. Any bad row fails the whole read (nothing is dropped)."""
    tools: list[Tool] = []
    problems: list[str] = []
    names = NamesSeen()
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
            problem = row_problem(tool) or names.clash(tool.name, where)
            if problem is not None:
                problems.append(f"{where}: {problem}")
                continue
            # Here as well as in the build's check, so that the file and line are named.
            unusable = catalog_schema_problems(tool.input_schema)
            if unusable:
                problems.extend(f"{where}: {tool.name}: input_schema{p}" for p in unusable)
                continue
            tools.append(tool)
    if problems:
        shown = "\n  ".join(problems[:MAX_REPORTED])
        more = f"\n  ... and {len(problems) - MAX_REPORTED} more" if len(problems) > MAX_REPORTED else ""
        raise CatalogError(f"{len(problems)} invalid catalog row(s); nothing was built:\n  {shown}{more}")
    if not tools:
        raise CatalogError(f"no tools in {', '.join(map(str, paths))}")
    return tools


def row_problem(tool: Tool) -> str | None:
    """Why a valid Tool still cannot be a catalog file's row on its own, or None."""
    unnameable = name_problem(tool.name)
    if unnameable is not None:  # it would build, and `toolrec policy` could not name it
        return f"tool name {tool.name!r} {unnameable}"
    named_app, dot, _ = tool.name.partition(".")
    if dot and named_app.casefold() != tool.app.casefold():  # app ids match ignoring case, as patterns do
        return (
            f"tool name {tool.name!r} is of app {named_app!r} but its row says app {tool.app!r}: App.* rules read the"
            " name, authorization and /v1/apps the app, so make them the same"
        )
    if not first_line(tool.description):
        return (
            f"tool {tool.name!r} has an empty description: matching reads the name and the description's first"
            " line, and an agent chooses by it, so say what the tool does"
        )
    return None


class NamesSeen:
    """The names read so far, under the two foldings a later name may not share with one of them."""

    def __init__(self) -> None:
        self._by_key: dict[str, tuple[str, str]] = {}  # name_key -> (name, file:line): the lookup's folding
        self._by_look: dict[str, tuple[str, str]] = {}  # lookalike_key -> (name, file:line)

    def clash(self, name: str, where: str) -> str | None:
        """Why ``name`` (at ``where``) cannot join the names seen, or None, and then it is seen."""
        if (same := self._by_key.get(name_key(name))) is not None:
            first_name, first_where = same
            if first_name == name:
                return f"duplicate tool name {name!r} (first at {first_where})"
            return (
                f"duplicate tool name {name!r}: callers cannot tell it from {first_name!r} (at {first_where}); names"
                " may not differ only in case or '.'/'_'"
            )
        if (alike := self._by_look.get(lookalike_key(name))) is not None:
            first_name, first_where = alike
            return (
                f"tool name {name!r} reads as {first_name!r} (at {first_where}): an agent cannot tell which to call;"
                " names may not differ only in case, '_' or '-'"
            )
        self._by_key[name_key(name)] = self._by_look[lookalike_key(name)] = (name, where)
        return None


def _lines(path: Path) -> Iterable[tuple[int, str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(f"cannot read catalog {path}: {exc}") from exc
    for line_no, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            yield line_no, line
