"""`toolrec lint`: catalog problems that hurt matching, found before a build ships them.

Matching reads only a tool's name and the first line of its description (PRODUCT.md §1), so every rule
here is about those two strings. The rules, in the order they are checked for each tool:

- ``name-form``: the name is not ``App.ToolName`` (handler/catalog/tool.py APP_TOOL_NAME).
- ``listed-name``: MCP clients and the model providers cannot be shown the name with ``_`` for ``.`` (they allow
  ``[A-Za-z0-9_-]``, 64 characters), so it is listed shortened and hashed (handler/catalog/names.py listed_name).
- ``empty``: the description has no non-blank line.
- ``vague``: the first line has fewer than MIN_WORDS words, or every word of it is a function word or a
  generic filler word (GENERIC_WORDS: "Does stuff", "Helper function", "API endpoint").
- ``no-object``: the first line names nothing it acts on. Drop function words and generic words; the first
  remaining word is taken as the verb ("Send", "Returns"); if nothing remains after it, no service or object
  is named ("Send it now", "Creates a new one"). A line that passes ``vague`` but fails this is still a
  sentence an agent's request cannot be matched against.
- ``near-duplicate``: two first lines whose embeddings have cosine >= the threshold (default 0.95); both tools
  compete for the same requests, so at least one of them should say what sets it apart.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from handler.catalog.names import listed_name
from handler.catalog.tool import APP_TOOL_NAME, Tool
from handler.ranking.arrays import FloatArray
from handler.ranking.text import first_line, words

MIN_WORDS = 3
DUPLICATE_THRESHOLD = 0.95
_BLOCK = 1024  # rows per similarity block: bounds memory at 1024 x n floats for large catalogs

# Grammar only (articles, prepositions, pronouns, auxiliaries, adverbs): no verbs or nouns, so dropping
# these never hides what a line acts on.
FUNCTION_WORDS = frozenset(
    """
    a an the and or but nor if then else so of to in on at by for with from into onto about as via per
    is are was were be been being am do does did it its this that these those there here
    i me my we our us you your he she him her his they them their one ones
    what which who whom whose when where why how all any some each every either both other
    can could would should will shall may might must not no just also only very too
    now then again later already still soon always never often quickly easily directly automatically
    """.split()
)
# Words that could describe any tool in any catalog: alone they name nothing an agent could ask for.
GENERIC_WORDS = frozenset(
    """
    api apis endpoint endpoints function functions method methods helper helpers tool tools utility utilities
    util utils service services operation operations action actions call calls request requests wrapper
    stuff thing things something anything everything item items object objects entity entities resource
    resources data info information record records value values result results misc miscellaneous
    parameter parameters param params argument arguments input inputs output outputs option options
    various generic general new given specified specific certain some several many more simple basic custom
    handle handles handling handler process processes processing perform performs performing run runs
    execute executes do does doing make makes work works working use uses using manage manages managing
    """.split()
)


@dataclass(frozen=True)
class Problem:
    tool: str
    kind: str  # name-form | listed-name | empty | vague | no-object | near-duplicate
    message: str


@dataclass(frozen=True)
class Duplicate:
    first: str
    second: str
    cosine: float


@dataclass(frozen=True)
class LintReport:
    tool_count: int
    problems: list[Problem]
    duplicates: list[Duplicate]
    threshold: float

    @property
    def clean(self) -> bool:
        return not self.problems

    def as_json(self) -> dict[str, Any]:
        kinds: dict[str, int] = {}
        for problem in self.problems:
            kinds[problem.kind] = kinds.get(problem.kind, 0) + 1
        return {
            "tools": self.tool_count,
            "tools_with_problems": len({p.tool for p in self.problems}),
            "problem_count": len(self.problems),
            "by_kind": kinds,
            "duplicate_threshold": self.threshold,
            "problems": [asdict(p) for p in self.problems],
            "duplicates": [asdict(d) for d in self.duplicates],
        }

    def lines(self) -> list[str]:
        found = [f"{p.tool}: {p.message}" for p in self.problems]
        if self.clean:
            return [f"no problems in {self.tool_count} tools"]
        summary = self.as_json()
        by_kind = ", ".join(f"{kind} {count}" for kind, count in sorted(summary["by_kind"].items()))
        return [
            *found,
            f"{len(self.problems)} problem(s) in {summary['tools_with_problems']} of {self.tool_count} tools "
            f"({by_kind})",
        ]


def first_line_problem(line: str) -> tuple[str, str] | None:
    """The (kind, message) of what is wrong with one first line, or None: empty, vague or no-object."""
    if not line:
        return "empty", "empty first line (matching reads only the name and the first line)"
    tokens = words(line)
    meaningful = [w for w in tokens if _meaningful(w)]
    if len(tokens) < MIN_WORDS:
        return "vague", f"vague first line {line!r}: {len(tokens)} word(s), say what it does to which service or object"
    if not meaningful:
        return "vague", f"vague first line {line!r}: only generic words, say what it does to which service or object"
    if len(meaningful) < 2:
        return "no-object", f"first line {line!r} names no service or object (only {meaningful[0]!r} is specific)"
    return None


def _meaningful(word: str) -> bool:
    # Lone ASCII letters ("it's" -> it, s) and bare numbers name nothing; single CJK characters do.
    if word.isdigit() or (len(word) == 1 and word.isascii()):
        return False
    return word not in FUNCTION_WORDS and word not in GENERIC_WORDS


def near_duplicates(names: Sequence[str], vectors: FloatArray, threshold: float) -> list[Duplicate]:
    """Every pair of rows (unit vectors) with cosine >= threshold, in catalog order, computed in blocks."""
    pairs: list[Duplicate] = []
    for start in range(0, len(names), _BLOCK):
        block = vectors[start : start + _BLOCK] @ vectors.T
        rows, cols = np.nonzero(block >= threshold)
        for row, col in zip(rows.tolist(), cols.tolist(), strict=True):
            i = start + row
            if i < col:
                pairs.append(Duplicate(names[i], names[col], round(float(block[row, col]), 4)))
    return pairs  # np.nonzero is row-major, so the pairs are already in catalog order


def lint_tools(
    tools: Sequence[Tool],
    embed: Callable[[str], FloatArray],
    threshold: float = DUPLICATE_THRESHOLD,
) -> LintReport:
    """Check every tool; ``embed`` maps a first line to a unit vector (the index's embedder)."""
    problems: dict[str, list[Problem]] = {tool.name: [] for tool in tools}
    lines = {tool.name: first_line(tool.description) for tool in tools}
    for tool in tools:
        if not APP_TOOL_NAME.match(tool.name):
            problems[tool.name].append(Problem(tool.name, "name-form", "name is not in App.ToolName form"))
        if (listed := listed_name(tool.name)) != tool.name.replace(".", "_"):
            message = f"MCP clients and model providers are shown it as {listed} (only A-Z a-z 0-9 _ -, 64 chars)"
            problems[tool.name].append(Problem(tool.name, "listed-name", message))
        found = first_line_problem(lines[tool.name])
        if found:
            problems[tool.name].append(Problem(tool.name, *found))
    named = [tool.name for tool in tools if lines[tool.name]]
    vectors = np.array([embed(lines[name]) for name in named], dtype=np.float32).reshape(len(named), -1)
    duplicates = near_duplicates(named, vectors, threshold)
    for pair in duplicates:
        for this, other in ((pair.first, pair.second), (pair.second, pair.first)):
            message = f"first line nearly duplicates {other}'s (cosine {pair.cosine:.3f} >= {threshold})"
            problems[this].append(Problem(this, "near-duplicate", message))
    flat = [problem for tool in tools for problem in problems[tool.name]]
    return LintReport(len(tools), flat, duplicates, threshold)
