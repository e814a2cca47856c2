"""What a tool name means: the one rule every lookup by name uses (REST execute, MCP calls, access rules, ranking).

Callers spell a name several ways: ``Slack.SendMessage`` as REST lists it, ``Slack_SendMessage`` as MCP and the
model providers list it (they refuse dots), in another case. All mean one tool, so a lookup folds case and
``_``/``.``. Two catalog names that fold alike would make that ambiguous (a deny of one spelling missed the tool
that another ran, issue 15 item 3), so the build refuses them and an index that holds them is refused when loaded.
For the same reason no catalog tool may take a spelling of one of toolrec's own tools (``Toolrec_UseTool``, issue 22
item 4), and every name is one an access rule can name exactly (``name_problem``).
"""

from __future__ import annotations

import difflib
import hashlib
import itertools
import re
from collections.abc import Iterable, Sequence
from typing import overload

import numpy as np

from handler.errors import IntegrityError

# Anthropic's tool names and OpenAI's function names: ^[a-zA-Z0-9_-]{1,64}$ (both APIs refuse anything else).
_LISTABLE = re.compile(r"[A-Za-z0-9_-]{1,64}")
_UNLISTABLE_CHAR = re.compile(r"[^A-Za-z0-9_-]")
_HASH_CHARS = 8
# A pattern's wildcard, and what separates words on a command line: a name holding either builds, but no rule or
# pin could name it exactly (issue 22).
_UNNAMEABLE = re.compile(r"[\s*]")

# A name is compared with each candidate in time that grows with the product of their lengths (difflib): a name
# longer than any a person types gets no suggestion rather than costing a request seconds (PRODUCT.md §2).
MAX_SUGGESTED_CHARS = 200
NEAR_ENOUGH = 0.6  # difflib's default cutoff: a mistyped letter or two in a name of a few words

# toolrec's own tools, listed under the deployment's namespace: the MCP meta-tools and the providers' search.
DEFAULT_NAMESPACE = "Toolrec"
SELECT_TOOLS, USE_TOOL, LIST_APPS, FIND_TOOLS = "SelectTools", "UseTool", "ListApps", "FindTools"
OWN_TOOLS = (SELECT_TOOLS, USE_TOOL, LIST_APPS, FIND_TOOLS)


def name_key(name: str) -> str:
    """Tool names match whatever the case or separator a caller used: "Slack.SendMessage" == "slack_sendmessage"."""
    return name.strip().casefold().replace("_", ".")


def lookalike_key(name: str) -> str:
    """Names a person or an agent reads as one: the same but for case, ``_`` and ``-`` (``Garage.CloseDoor``,
    ``Garage.Close_Door``). A catalog file may not hold two (build_index/ingest/catalog_files.py); the resolver
    (name_key) still tells them apart, so an index that holds both keeps serving."""
    return name.strip().casefold().replace("_", "").replace("-", "")


def listed_name(name: str) -> str:
    """The name MCP clients and the model providers are shown: ``Slack.SendMessage`` → ``Slack_SendMessage``.

    That spelling folds back to the tool under name_key. A name the providers' rule cannot hold even so (another
    character, over 64) keeps a readable prefix and ends in a hash of the whole name: ToolNames resolves that too.
    """
    underscored = name.replace(".", "_")
    if _listable(name):
        return underscored
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_CHARS]
    prefix = _UNLISTABLE_CHAR.sub("_", underscored)[: 64 - _HASH_CHARS - 1]
    return f"{prefix}_{digest}"


def _listable(name: str) -> bool:
    """Whether the providers' rule holds the name as it is, its dots as underscores (listed_name)."""
    return _LISTABLE.fullmatch(name.replace(".", "_")) is not None


def nearest_name(name: str, known: Iterable[str]) -> str | None:
    """The known name nearest a mistyped one, or None when none is near: the one did-you-mean rule of the CLI and
    the API. Case is ignored and ``_`` reads as ``.`` (``slack_sendmesage`` is near ``Slack.SendMessage``); among
    one app's tools only the part after the app is compared, or the shared app name alone would make any tool of
    it near (``Weather.Teleport`` is not a mistyped ``Weather.GetForecast``). ``known`` must hold only names the
    asker may be told of: a denied tool's name is never suggested."""
    if len(name) > MAX_SUGGESTED_CHARS:
        return None
    key = name_key(name)
    app, _, rest = key.partition(".")
    matcher = difflib.SequenceMatcher()
    nearest, best = None, NEAR_ENOUGH
    for candidate in known:
        if len(candidate) > MAX_SUGGESTED_CHARS:
            continue
        other = name_key(candidate)
        other_app, _, other_rest = other.partition(".")
        mine, theirs = (rest, other_rest) if rest and other_rest and app == other_app else (key, other)
        matcher.set_seqs(mine, theirs)
        if matcher.real_quick_ratio() < best or matcher.quick_ratio() < best:
            continue  # difflib's cheap upper bounds first, as get_close_matches does
        ratio = matcher.ratio()
        if ratio > best or (nearest is None and ratio >= best):
            nearest, best = candidate, ratio
    return nearest


def did_you_mean(near: str | None) -> str:
    """`` — did you mean 'X'?`` after an API message about a mistyped name, or nothing when no name is near."""
    return f" — did you mean {near!r}?" if near is not None else ""


def name_problem(name: str) -> str | None:
    """Why an access rule or a pin could not name this tool exactly, or None: the one rule ``toolrec build`` holds
    catalog names to and ``toolrec policy`` holds exact names to."""
    if not name.strip():
        return "is empty"
    if _UNNAMEABLE.search(name):
        return "holds whitespace or '*', so no access rule or pin could name it"
    return None


def own_tool_name(namespace: str, tool: str) -> str:
    """The listed name of one of toolrec's own tools (the MCP meta-tools, the providers' search):
    ``Toolrec_SelectTools``, as clients reject dots in tool names."""
    return f"{namespace}_{tool}"


def own_tool_of(namespace: str, name: str) -> str | None:
    """Which of toolrec's own tools ``name`` means, in any spelling a lookup folds (``Toolrec.SelectTools``,
    ``toolrec_selecttools``), if any."""
    key = name_key(name)
    return next((tool for tool in OWN_TOOLS if name_key(own_tool_name(namespace, tool)) == key), None)


def reserved_names(names: Iterable[str], namespace: str) -> list[str]:
    """The names a caller could not tell from one of toolrec's own tools (any spelling, the listed one included):
    listed beside them they would be listed twice, and a call by that name would run toolrec's tool."""
    own = {name_key(own_tool_name(namespace, tool)) for tool in OWN_TOOLS}
    return [name for name in names if spelling_keys(name) & own]


def describe_reserved(names: Iterable[str], namespace: str) -> str | None:
    """The reserved names as one sentence, or None when no name is one of toolrec's own."""
    taken = reserved_names(names, namespace)
    if not taken:
        return None
    own = ", ".join(own_tool_name(namespace, tool) for tool in OWN_TOOLS)
    return f"{', '.join(map(repr, taken))}: the names of toolrec's own tools ({own}) are reserved"


def spelling_keys(name: str) -> set[str]:
    """Every folded spelling that means this tool: its name's, and its listed name's when that is a hashed one."""
    return {name_key(name), name_key(listed_name(name))}


def name_collisions(names: Iterable[str]) -> list[tuple[int, int]]:
    """(earlier, later) positions of every name with a spelling (name_key, or its listed name) of an earlier one."""
    first: dict[str, int] = {}
    clashes = []
    for position, name in enumerate(names):
        earlier = min(first.setdefault(key, position) for key in spelling_keys(name))
        if earlier != position:
            clashes.append((earlier, position))
    return clashes


def describe_collisions(names: Sequence[str]) -> str | None:
    """The colliding names as one sentence, or None when every name means one tool to every caller."""
    clashes = name_collisions(names)
    if not clashes:
        return None
    pairs = ", ".join(f"{names[a]!r} and {names[b]!r}" for a, b in clashes)
    return f"tool names that differ only in case or '.'/'_' (or that list alike) are one name to callers: {pairs}"


class ToolNames(Sequence[str]):
    """A build's tool names in index order, and which tool a caller's spelling means (``position``): the one
    resolver REST, MCP, the providers, policy patterns and the ranking's exact-name match all read.

    Every spelling (spelling_keys) is kept as its hash beside the name it means, sorted, not as a dict of the spellings:
    at a million tools the dict and its strings held ~200 MB and took most of the names' load (docs/performance.md).
    A lookup reads the names whose spelling hashes alike and keeps the first that is spelled so. The hashes are the
    process's own (``hash``), never stored."""

    def __init__(self, names: Sequence[str], namespace: str | None = None) -> None:
        """``namespace``: the deployment's, whose own tool names the build may not hold (None: not checked, for a
        build read only as the source of a new one)."""
        self._names = tuple(names)
        # Each name's own spelling, then the listed ones that differ from it (hashed, listed_name), by owner.
        hashed = np.asarray([i for i, name in enumerate(self._names) if not _listable(name)], dtype=np.intp)
        owners = np.concatenate((np.arange(len(self._names)), hashed))
        hashes = np.concatenate(
            (
                np.fromiter((hash(name_key(name)) for name in self._names), np.int64, count=len(self._names)),
                np.fromiter((hash(name_key(listed_name(self._names[i]))) for i in hashed), np.int64, len(hashed)),
            )
        )
        order = np.argsort(hashes, kind="stable")
        self._hashes, self._owners = hashes[order], owners[order]
        problem = describe_collisions(self._names) if self._shared_spelling() else None
        if problem is None and namespace is not None:
            # Without a clash each spelling means one name: toolrec's own spellings are looked up, not searched for.
            taken = sorted(
                {i for tool in OWN_TOOLS if (i := self.position(own_tool_name(namespace, tool))) is not None}
            )
            problem = describe_reserved([self._names[i] for i in taken], namespace)
        if problem is not None:
            raise IntegrityError(f"the index cannot be served: {problem}; rebuild it from a corrected catalog")

    def _shared_spelling(self) -> bool:
        """Whether two names share a spelling: only names whose spellings hash alike can."""
        alike: dict[int, set[int]] = {}  # a hash held more than once -> the names holding it
        for i in np.flatnonzero(self._hashes[1:] == self._hashes[:-1]).tolist():
            alike.setdefault(int(self._hashes[i]), set()).update((int(self._owners[i]), int(self._owners[i + 1])))
        return any(
            spelling_keys(self._names[a]) & spelling_keys(self._names[b])
            for owners in alike.values()
            for a, b in itertools.combinations(sorted(owners), 2)
        )

    def __len__(self) -> int:
        return len(self._names)

    @overload
    def __getitem__(self, position: int) -> str: ...

    @overload
    def __getitem__(self, position: slice) -> Sequence[str]: ...

    def __getitem__(self, position: int | slice) -> str | Sequence[str]:
        return self._names[position]

    def position(self, name: str) -> int | None:
        key = name_key(name)
        wanted = hash(key)
        at = int(np.searchsorted(self._hashes, wanted))
        found = None
        while at < len(self._hashes) and self._hashes[at] == wanted:
            owner = int(self._owners[at])
            if (found is None or owner < found) and key in spelling_keys(self._names[owner]):
                found = owner
            at += 1
        return found
