"""The code blocks of README.md and docs/*.md, as the tests that run them read them (```sh and ```python fences)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
README = REPO_ROOT / "README.md"
DOC_PAGES = (README, *sorted((REPO_ROOT / "docs").glob("*.md")))
# The languages of blocks that run: commands and scripts. Other fences (toml, json) show a file or a shape.
RUNNABLE = ("sh", "python")
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.M | re.S)


@dataclass(frozen=True)
class Block:
    page: Path
    language: str
    text: str

    @property
    def first_line(self) -> str:
        return self.text.splitlines()[0]

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO_ROOT)}: {self.first_line}"

    def commands(self) -> list[str]:
        """The block's command lines, each with its continuation lines joined and its comment dropped."""
        joined = re.sub(r"\\\n\s*", "", self.text)
        return [re.sub(r"\s+#\s.*$", "", line).strip() for line in joined.splitlines() if line.strip()]


def blocks(page: Path, language: str) -> list[Block]:
    return [Block(page, m.group(1), m.group(2)) for m in _FENCE.finditer(page.read_text()) if m.group(1) == language]


def block_starting(page: Path, first_line: str, language: str = "sh") -> Block:
    """The one block of ``page`` whose first line starts with ``first_line``."""
    found = [b for b in blocks(page, language) if b.first_line.startswith(first_line)]
    assert len(found) == 1, f"{page.name} has {len(found)} {language} blocks starting {first_line!r}"
    return found[0]


def runnable_blocks() -> list[Block]:
    return [block for page in DOC_PAGES for language in RUNNABLE for block in blocks(page, language)]
