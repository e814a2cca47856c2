"""Per-build lookup tables that turn tool patterns into boolean masks over the index's tools.

Built once when a build is loaded. A mask for a set of patterns costs one dictionary lookup per pattern
plus a vectorized OR, so filtering 10k tools by gateway and user stays far below a millisecond.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from handler.catalog.names import ToolNames
from handler.catalog.tool import Tool
from handler.index.records import ToolRecords
from handler.policy.model import ALL_TOOLS
from handler.ranking.arrays import BoolArray, IndexArray


@dataclass(frozen=True)
class ToolTable:
    tools: Sequence[Tool]
    names: ToolNames  # the one resolver of a caller's spelling (handler/catalog/names.py)
    by_app: dict[str, IndexArray]
    needs_authorization: BoolArray  # whether each tool requires the user to authorize its app
    app_names: tuple[str, ...]  # the distinct apps, sorted
    app_codes: IndexArray  # each tool's position in app_names: per-app counts are one bincount

    @classmethod
    def of(cls, tools: ToolRecords, names: ToolNames) -> ToolTable:
        """``names``: the build's resolver, shared with its RankingIndex."""
        keys = tools.keys  # built from the keys alone: no tool record is parsed here
        grouped: dict[str, list[int]] = {}
        for i, app in enumerate(keys.apps):
            grouped.setdefault(app.casefold(), []).append(i)
        app_names, app_codes = np.unique(np.asarray(keys.apps, dtype=str), return_inverse=True)
        return cls(
            tools=tools,
            names=names,
            by_app={app: np.asarray(ids, dtype=np.intp) for app, ids in grouped.items()},
            needs_authorization=keys.needs_authorization,
            app_names=tuple(str(name) for name in app_names),
            app_codes=app_codes.astype(np.intp),
        )

    def __len__(self) -> int:
        return len(self.tools)

    def position(self, name: str) -> int | None:
        """The tool a caller's spelling of a name means, if any."""
        return self.names.position(name)

    def mask(self, patterns: Iterable[str]) -> BoolArray:
        """The tools any of the patterns (``*``, ``App.*`` or an exact name as ``position`` reads it) matches."""
        mask = np.zeros(len(self.tools), dtype=bool)
        for pattern in patterns:
            key = pattern.casefold()
            if key == ALL_TOOLS:
                mask[:] = True
            elif key.endswith(".*"):
                ids = self.by_app.get(key[:-2])
                if ids is not None:
                    mask[ids] = True
            elif (index := self.position(pattern)) is not None:
                mask[index] = True
        return mask
