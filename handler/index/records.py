"""A build's tool records, kept as the bytes of ``tools.jsonl`` and parsed one record at a time when asked for.

A request touches a handful of tools (the few it returns, the one it runs), but validating every record into a
pydantic object at load cost most of the index load and of the memory at scale (measured at 10k tools: 0.3 s and
~40 MB; at 100k ten times that). What every request needs of all tools — name, app, whether authorization is
required — is loaded eagerly from ``tool_keys.json``; the rest waits in the raw lines. The build validated every
record and the manifest's sha256 vouches for the bytes, so a record read later is the record that was built; one that
still fails validation (a build written by other means) raises IntegrityError, which a request answers with a 503.

The parsed records are a bounded cache (``PARSED_RECORDS``, the most recently read), not every record ever read.

A loaded build's records stay in their file (``open_records``), each read where it lies when first asked for: the file
is ~570 MB at 1M tools and costs the process nothing at rest. It is read, not memory-mapped: mapped, every record read
also mapped the pages around it (the kernel's fault-around), and at a million tools the records grew to 436 MB of the
process's RSS over 200 selects (docs/performance.md). Its newlines are found by reading it in blocks too.
"""

from __future__ import annotations

import functools
import io
import json
import os
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, overload

import numpy as np
import numpy.typing as npt
from pydantic import ValidationError

from handler.catalog.tool import Tool
from handler.errors import IntegrityError
from handler.policy.authorization import authorization_app

NEWLINE = ord("\n")
# Records kept parsed, the most recently read (~2.7 KB each at 10k tools: 11 MB). Every record read once stayed
# parsed before: 27 MB at 10k tools once each was, and at a million ~2.7 GB, past a function's memory, on an instance
# that lives long enough; a miss costs ~12 µs (docs/performance.md).
PARSED_RECORDS = 4_096
SCAN_BLOCK = 1 << 20  # bytes read at a time when looking for newlines: with its mask, the scan's whole memory


def app_of(tool: Tool) -> str:
    """The app a tool belongs to: the ``App`` of ``App.ToolName`` (what ``App.*`` patterns name)."""
    prefix, dot, _ = tool.name.partition(".")
    return prefix if dot else tool.app


@dataclass(frozen=True)
class ToolKeys:
    """What is needed of every tool on every request, one entry per tool in index order."""

    names: tuple[str, ...]
    apps: tuple[str, ...]
    needs_authorization: npt.NDArray[np.bool_]

    @classmethod
    def of(cls, tools: Sequence[Tool]) -> ToolKeys:
        return cls(
            names=tuple(t.name for t in tools),
            apps=tuple(app_of(t) for t in tools),
            # The rule execute applies (a named app or any scope), so /v1/apps can look only at flagged tools.
            needs_authorization=np.asarray([authorization_app(t) is not None for t in tools], dtype=bool),
        )

    def to_json(self) -> str:
        return json.dumps(
            {"names": self.names, "apps": self.apps, "needs_authorization": self.needs_authorization.tolist()},
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> ToolKeys:
        raw: Any = json.loads(text)
        names, apps, flags = raw["names"], raw["apps"], raw["needs_authorization"]
        if not len(names) == len(apps) == len(flags):
            raise IntegrityError(f"tool keys disagree: {len(names)} names, {len(apps)} apps, {len(flags)} flags")
        # One string object per distinct app (a catalog has few apps): json.loads makes one per tool (~60 MB at 1M).
        distinct: dict[str, str] = {}
        return cls(tuple(names), tuple(distinct.setdefault(app, app) for app in apps), np.asarray(flags, dtype=bool))


def to_jsonl(tools: Sequence[Tool]) -> str:
    """One record a line, in index order (json.dumps escapes newlines inside strings)."""
    rows = (t.model_dump(mode="json", exclude_none=True) for t in tools)
    return "".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows)


def line_ends(stream: io.BufferedIOBase) -> npt.NDArray[np.intp]:
    """The offset of every newline in ``stream``, read SCAN_BLOCK bytes at a time (no copy of the whole)."""
    found = []
    block = bytearray(SCAN_BLOCK)
    offset = 0
    while count := stream.readinto(block):
        found.append(np.flatnonzero(np.frombuffer(block, dtype=np.uint8, count=count) == NEWLINE) + offset)
        offset += count
    return np.concatenate(found) if found else np.empty(0, dtype=np.intp)


class FileSpans:
    """An open file read a span at a time (``file[start:end]``), as bytes: a record where it lies, without mapping the
    file (the module's docstring says why). The file is closed when this is collected, with the build it serves."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_RDONLY)
        weakref.finalize(self, os.close, self._fd)

    def __getitem__(self, span: slice) -> bytes:
        return os.pread(self._fd, span.stop - span.start, span.start)


def open_records(path: Path, keys: ToolKeys) -> ToolRecords:
    """The records of a ``tools.jsonl`` file, left in the file and read one at a time (the module's docstring)."""
    with path.open("rb") as stream:
        ends = line_ends(stream)
    return ToolRecords(FileSpans(path), keys, ends)


class ToolRecords(Sequence[Tool]):
    """The tools of a build in index order; ``records[i]`` parses and validates line ``i`` when read, and the
    ``PARSED_RECORDS`` most recently read stay parsed.
    ``jsonl``: the bytes of tools.jsonl, or the file (FileSpans); ``ends``: its newlines' offsets (found in the bytes
    when not given)."""

    def __init__(self, jsonl: bytes | FileSpans, keys: ToolKeys, ends: npt.NDArray[np.intp] | None = None) -> None:
        if ends is None:
            if not isinstance(jsonl, bytes):
                raise TypeError("a file's records need their newlines' offsets (open_records finds them)")
            ends = np.flatnonzero(np.frombuffer(jsonl, dtype=np.uint8) == NEWLINE)
        if len(ends) != len(keys.names):
            raise IntegrityError(f"tools.jsonl holds {len(ends)} records for {len(keys.names)} tool keys")
        self.keys = keys
        self._jsonl = jsonl
        self._starts = np.concatenate(([0], ends[:-1] + 1)) if len(ends) else ends
        self._ends = ends
        starts = self._starts

        def parse(i: int) -> Tool:  # a closure over the parts, not self: the cache holds no cycle back to it
            return _parsed_record(jsonl, keys, int(starts[i]), int(ends[i]), i)

        self._parsed = functools.lru_cache(maxsize=PARSED_RECORDS)(parse)

    def __len__(self) -> int:
        return len(self.keys.names)

    def record_bytes(self, positions: Sequence[int]) -> list[int]:
        """Each tool's record size, read without parsing: what answer_budget.py weighs a listed tool by (the
        record holds everything a listing shows of the tool, and its executor beside)."""
        at = np.asarray(positions, dtype=np.intp)
        sizes: list[int] = (self._ends[at] - self._starts[at]).tolist()
        return sizes

    @overload
    def __getitem__(self, position: int) -> Tool: ...

    @overload
    def __getitem__(self, position: slice) -> Sequence[Tool]: ...

    def __getitem__(self, position: int | slice) -> Tool | Sequence[Tool]:
        if isinstance(position, slice):
            return [self[i] for i in range(len(self))[position]]
        return self._parsed(range(len(self))[position])  # IndexError and negative positions as for a list


def _parsed_record(jsonl: bytes | FileSpans, keys: ToolKeys, start: int, end: int, i: int) -> Tool:
    try:
        tool = Tool.model_validate_json(jsonl[start:end])
    except ValidationError as exc:  # only a build written by something else than this toolrec's build step
        raise IntegrityError(
            f"tool record {i} ({keys.names[i]}) is invalid ({exc.error_count()} problem(s)); "
            "rebuild the index with this toolrec version"
        ) from None
    if tool.name != keys.names[i]:
        raise IntegrityError(f"tool record {i} is {tool.name!r}, its key says {keys.names[i]!r}")
    return tool
