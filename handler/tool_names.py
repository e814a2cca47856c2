"""What a tool name means: the one rule every lookup by name uses (REST execute, MCP calls, access rules, ranking).

Callers spell a name several ways: ``Slack.SendMessage`` as REST lists it, ``Slack_SendMessage`` as MCP lists it
(many clients refuse dots), in another case. All mean one tool, so a lookup folds case and ``_``/``.``. Two catalog
names that fold alike would make that ambiguous (a deny of one spelling missed the tool that another ran, issue 15
item 3), so the build refuses them and an index that holds them is refused when loaded.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from handler.errors import IntegrityError


def name_key(name: str) -> str:
    """Tool names match whatever the case or separator a caller used: "Slack.SendMessage" == "slack_sendmessage"."""
    return name.strip().casefold().replace("_", ".")


def name_collisions(names: Iterable[str]) -> list[tuple[int, int]]:
    """(earlier, later) positions of every name that folds to the key of an earlier one, in order."""
    first: dict[str, int] = {}
    clashes = []
    for position, name in enumerate(names):
        earlier = first.setdefault(name_key(name), position)
        if earlier != position:
            clashes.append((earlier, position))
    return clashes


def describe_collisions(names: Sequence[str]) -> str | None:
    """The colliding names as one sentence, or None when every name is distinct under name_key."""
    clashes = name_collisions(names)
    if not clashes:
        return None
    pairs = ", ".join(f"{names[a]!r} and {names[b]!r}" for a, b in clashes)
    return f"tool names that differ only in case or '.'/'_' are one name to callers: {pairs}"


class ToolNames:
    """The catalog's names by their folded key: which tool a caller's spelling means, if any."""

    def __init__(self, names: Sequence[str]) -> None:
        problem = describe_collisions(names)
        if problem is not None:
            raise IntegrityError(f"the index cannot be served: {problem}; rebuild it from a corrected catalog")
        self._positions = {name_key(name): i for i, name in enumerate(names)}

    def position(self, name: str) -> int | None:
        return self._positions.get(name_key(name))
