"""Per-build lookup tables that turn tool patterns into boolean masks over the index's tools.

Built once when a build is loaded. A mask for a set of patterns costs one dictionary lookup per pattern
plus a vectorized OR, so filtering 10k tools by gateway and user stays far below a millisecond.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from handler.catalog import Tool
from handler.policy.model import ALL_TOOLS

BoolArray = npt.NDArray[np.bool_]
IndexArray = npt.NDArray[np.intp]


def app_of(tool: Tool) -> str:
    """The app a tool belongs to: the ``App`` of ``App.ToolName`` (what ``App.*`` patterns name)."""
    prefix, dot, _ = tool.name.partition(".")
    return prefix if dot else tool.app


@dataclass(frozen=True)
class ToolTable:
    tools: Sequence[Tool]
    by_name: dict[str, int]
    by_app: dict[str, IndexArray]
    apps: tuple[str, ...]  # the app of each tool, by index

    @classmethod
    def of(cls, tools: Sequence[Tool]) -> ToolTable:
        apps = tuple(app_of(t) for t in tools)
        grouped: dict[str, list[int]] = {}
        for i, app in enumerate(apps):
            grouped.setdefault(app.casefold(), []).append(i)
        return cls(
            tools=tools,
            by_name={t.name.casefold(): i for i, t in enumerate(tools)},
            by_app={app: np.asarray(ids, dtype=np.intp) for app, ids in grouped.items()},
            apps=apps,
        )

    def __len__(self) -> int:
        return len(self.tools)

    def mask(self, patterns: Iterable[str]) -> BoolArray:
        """The tools any of the patterns (``*``, ``App.*`` or an exact name, case-insensitive) matches."""
        mask = np.zeros(len(self.tools), dtype=bool)
        for pattern in patterns:
            key = pattern.casefold()
            if key == ALL_TOOLS:
                mask[:] = True
            elif key.endswith(".*"):
                ids = self.by_app.get(key[:-2])
                if ids is not None:
                    mask[ids] = True
            elif (index := self.by_name.get(key)) is not None:
                mask[index] = True
        return mask
