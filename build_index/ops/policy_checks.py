"""What ``toolrec policy`` makes sure of before it changes anything: which policy file it edits (said on every
command; a file is created only where it was asked for), that each tool pattern names a tool of the catalog the
policy is for, and that what a delete names exists.

Where the file is: ``--file``/``--policy``, else ``$TOOLREC_POLICY_FILE`` (the service's own setting), else
``.toolrec/policy.json`` under the current folder, the one ``toolrec serve`` writes. A named file that does not
exist yet is created; the default one only with ``--create``, since run from another folder it would be a new,
empty policy no server reads.

Which catalog: ``--index`` (a directory or s3://...), else the ``index`` folder beside the policy file (the
layout of ``toolrec serve``), else ``$TOOLREC_INDEX_LOCATION``. Patterns match exactly as the service matches
them (handler/index/table.py); with no index to check against, a warning says so.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from handler.catalog.names import nearest_name
from handler.errors import ToolrecError
from handler.policy.model import ALL_TOOLS
from handler.settings import ENV_PREFIX

if TYPE_CHECKING:
    from handler.index.table import ToolTable

DEFAULT_POLICY_FILE = Path(".toolrec") / "policy.json"
NOT_FOUND_EXIT = 1
REFUSED_EXIT = 2


class PolicyCommandError(ToolrecError):
    def __init__(self, message: str, exit_code: int = REFUSED_EXIT) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def say(line: str) -> None:
    print(f"toolrec policy: {line}", file=sys.stderr, flush=True)


def chosen_policy_file(given: Path | None) -> tuple[Path, bool]:
    """The policy file a command means, and whether it was named (an option or the variable) or defaulted."""
    if given is not None:
        return given, True
    configured = os.environ.get(f"{ENV_PREFIX}POLICY_FILE")
    return (Path(configured), True) if configured else (DEFAULT_POLICY_FILE, False)


def default_policy_file() -> Path:
    return chosen_policy_file(None)[0]


def open_policy_file(given: Path | None, create: bool, writes: bool) -> Path:
    """The policy file to use, said on stderr; refuses to create one nobody asked for."""
    path, named = chosen_policy_file(given)
    shown = path.resolve()
    if path.is_file():
        say(f"{'editing' if writes else 'reading'} {shown}")
    elif not writes:
        raise PolicyCommandError(f"no policy file at {shown}", NOT_FOUND_EXIT)
    elif named or create:
        say(f"no policy file at {shown} yet: this change creates it")
    else:
        raise PolicyCommandError(
            f"no policy file at {shown}: run this where `toolrec serve` ran, name the file (--file PATH or"
            f" ${ENV_PREFIX}POLICY_FILE), or give --create to start a new one there",
            NOT_FOUND_EXIT,
        )
    return path


def index_for(given: str | None, policy_file: Path | None) -> str | None:
    if given:
        return given
    from handler.index.format import LATEST

    beside = None if policy_file is None else policy_file.parent / "index"
    if beside is not None and (beside / LATEST).is_file():
        return str(beside)
    return os.environ.get(f"{ENV_PREFIX}INDEX_LOCATION")


class Catalog:
    """The index a policy command checks names against (``index_for``), read at most once per command: a gateway's
    patterns and its pins are checked against one read of it (an S3 index is downloaded to be verified)."""

    def __init__(self, location: str | None) -> None:
        self.location = location

    @functools.cached_property
    def table(self) -> ToolTable:
        from handler.index.store import latest_table, open_store

        assert self.location is not None  # callers say what a command does without a catalog
        with tempfile.TemporaryDirectory() as cache:
            return latest_table(open_store(self.location), Path(cache))


def check_patterns(patterns: tuple[str, ...], catalog: Catalog) -> None:
    """Refuse patterns that match no tool of the index (a typo would silently allow or deny nothing)."""
    to_check = [p for p in patterns if p != ALL_TOOLS]
    if not to_check:
        return
    if catalog.location is None:
        say("the tool patterns are not checked against a catalog: give --index (the index this policy is for)")
        return
    index_location, table = catalog.location, catalog.table
    unmatched = [p for p in to_check if not table.mask([p]).any()]
    if unmatched:
        known = [f"{app}.*" for app in table.app_names] + list(table.names)
        hints = [f"{pattern!r}{did_you_mean(pattern, known)}" for pattern in unmatched]
        raise PolicyCommandError(
            f"{', '.join(hints)} {'matches' if len(hints) == 1 else 'match'} no tool of the index at"
            f" {index_location} ({len(table.names)} tools): nothing written"
        )


def did_you_mean(name: str, known: Sequence[str]) -> str:
    """`` (did you mean 'X'?)`` for the known name nearest a mistyped one, or nothing when none is near."""
    near = nearest_name(name, known)  # the API's rule too (handler/catalog/names.py)
    return f" (did you mean {near!r}?)" if near is not None else ""
