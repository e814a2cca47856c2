"""What toolrec accepts of JSON it did not write: a caller's input, a tool's output, a catalog's input_schema.

Python parses JSON that it then cannot hand on (issue 15): a lone surrogate (``"\\ud800"``) or ``NaN`` parses but
fails the encode to the worker or into the response; nesting past ~254 levels fails pydantic's serialiser and past
~1,000 Python's recursion limit. So both sides of a call are checked here first, and a schema's references are
confined to the schema itself (resolving any other would fetch a URL at every call). Every walk is iterative: the
check cannot overflow the stack it protects.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

# A tool's arguments: far deeper than any real tool takes, shallow enough that jsonschema's recursive validation
# (measured: ~200 levels of a self-referential schema fit in the default recursion limit) always finishes.
MAX_INPUT_DEPTH = 64
# A tool's output, inside the response: pydantic refuses to serialise past ~254 levels (measured, REST and MCP),
# and the MCP envelope adds three; 128 leaves room for both, and for the client's own parser.
MAX_OUTPUT_DEPTH = 128
# A catalog schema: each property level nests two objects, so this allows inputs as deep as MAX_INPUT_DEPTH.
MAX_SCHEMA_DEPTH = 2 * MAX_INPUT_DEPTH
# A catalog schema's size, as compact UTF-8 JSON. Real catalogs' largest: 8.0 KB of 8,118 arcade tools (p99 2.0 KB),
# 9.6 KB of ToolBench's 2,479 (issue 22 item 7): this is 6× that, and sixteen tasks' best tools still fit one
# answer (answer_budget.py). An upstream's 8.1 MB schema had made one select 7.9 MB, past Lambda's 6 MB.
MAX_SCHEMA_BYTES = 64 * 1024
# Keywords whose values are instances (data), not subschemas: a "$ref" inside them is not a reference.
_DATA_KEYWORDS = frozenset({"const", "default", "enum", "examples"})
_CONTAINERS = (dict, list, tuple)
_REFERENCE_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
# Keywords whose values map names to subschemas: there a key is a name, never a keyword.
_NAME_MAPS = frozenset({"$defs", "definitions", "dependencies", "dependentSchemas", "patternProperties", "properties"})


@dataclass(frozen=True)
class JsonProblem:
    """Why a value cannot be passed on as JSON, and where: ``path`` from the root, printable (escapes kept)."""

    path: tuple[str, ...]
    reason: str


def json_problem(value: Any, max_depth: int) -> JsonProblem | None:
    """What keeps ``value`` from being encoded as strict UTF-8 JSON at most ``max_depth`` levels deep, or None."""
    # Two passes in C-speed loops first (an output may be 5 MB of small items); the walk that names the place
    # runs only when one of them fails.
    if _within_depth(value, max_depth) and _encodes(value):
        return None
    return _locate(value, max_depth) or JsonProblem((), "cannot be encoded as JSON")


def _within_depth(value: Any, max_depth: int) -> bool:
    level = [value] if isinstance(value, _CONTAINERS) else []
    for _ in range(max_depth):
        if not level:
            return True
        level = [c for x in level for c in (x.values() if isinstance(x, dict) else x) if isinstance(c, _CONTAINERS)]
    return not level


def _encodes(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (TypeError, ValueError, RecursionError):  # UnicodeEncodeError is a ValueError
        return False
    return True


def _locate(value: Any, max_depth: int) -> JsonProblem | None:
    if not isinstance(value, _CONTAINERS):
        reason = _scalar_problem(value)
        return JsonProblem((), reason) if reason else None
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if len(path) >= max_depth:
            # Named by its top-level member: the full path would be as long as the nesting.
            return JsonProblem(_printable(path[:1]), f"is nested more than {max_depth} levels deep")
        for key, child in item.items() if isinstance(item, dict) else enumerate(item):
            if isinstance(key, str) and not _encodable(key):
                return JsonProblem(_printable((*path, key)), "is a name with a lone surrogate (not valid Unicode)")
            if isinstance(child, _CONTAINERS):
                stack.append((child, (*path, key)))
            elif reason := _scalar_problem(child):
                return JsonProblem(_printable((*path, key)), reason)
    return None


def _scalar_problem(value: Any) -> str | None:
    if isinstance(value, str):
        return None if _encodable(value) else "holds a lone surrogate (not valid Unicode), which JSON cannot carry"
    if isinstance(value, float):
        return None if math.isfinite(value) else "is not a finite number (NaN and Infinity are not JSON)"
    if value is None or isinstance(value, bool | int):
        return None
    return f"is not a JSON value ({type(value).__name__})"


def _printable(path: tuple[Any, ...]) -> tuple[str, ...]:
    return tuple(printable(str(part)) for part in path)


def printable(text: str) -> str:
    """``text`` with any lone surrogate written as its escape (``\\ud800``), so a message naming it can be sent."""
    return text if _encodable(text) else text.encode("utf-8", "backslashreplace").decode("utf-8")


def json_size(value: Any) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON: what it weighs in an answer."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass"))


def catalog_schema_problems(schema: Any) -> list[str]:
    """What keeps a schema out of a catalog (the build's rule, for files, ``--from-mcp`` and refresh alike): its
    size past MAX_SCHEMA_BYTES, and every ``schema_problems``."""
    size = json_size(schema)
    if size > MAX_SCHEMA_BYTES:
        return [f" is {size:,} bytes of JSON; a tool's input_schema may be at most {MAX_SCHEMA_BYTES:,} bytes"]
    return schema_problems(schema)


def schema_problems(schema: Any) -> list[str]:
    """What keeps a catalog ``input_schema`` from being checked offline: each reference that leaves the schema
    (anything but ``#...``), named by its JSON pointer (RFC 6901), and nesting past MAX_SCHEMA_DEPTH."""
    problems = []
    for pointer, node, depth in _schema_nodes(schema):
        if depth > MAX_SCHEMA_DEPTH:
            return [f"{pointer[:80]}... is nested more than {MAX_SCHEMA_DEPTH} levels deep"]
        for keyword in _REFERENCE_KEYWORDS:
            target = node.get(keyword)
            if isinstance(target, str) and not target.startswith("#"):
                problems.append(
                    f"{pointer}/{keyword} refers outside the schema ({printable(target[:200])}); only local "
                    "references (#/...) are resolved, toolrec never fetches a schema"
                )
    return problems


def _schema_nodes(schema: Any) -> Iterator[tuple[str, dict[str, Any], int]]:
    """Every subschema with its pointer and depth (a list or name map counts as a level, as in the JSON)."""
    stack: list[tuple[Any, str, int, bool]] = [(schema, "", 1, False)]  # (node, pointer, depth, is a name map)
    while stack:
        node, pointer, depth, names = stack.pop()
        if depth > MAX_SCHEMA_DEPTH:
            yield pointer, {}, depth
            return
        if isinstance(node, dict):
            if names:  # property names (which may well be "default" or "$ref"), each naming a subschema
                children = [(v, f"{pointer}/{_escape(k)}", False) for k, v in node.items()]
            else:
                yield pointer, node, depth
                children = [
                    (v, f"{pointer}/{_escape(k)}", k in _NAME_MAPS) for k, v in node.items() if k not in _DATA_KEYWORDS
                ]
        elif isinstance(node, list):
            children = [(v, f"{pointer}/{i}", False) for i, v in enumerate(node)]
        else:
            continue
        stack.extend((child, where, depth + 1, is_map) for child, where, is_map in reversed(children))


def _escape(key: Any) -> str:
    return printable(str(key)).replace("~", "~0").replace("/", "~1")


def _encodable(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
