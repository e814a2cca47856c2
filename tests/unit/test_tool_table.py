"""The per-build lookup tables and the name resolver, built in one pass at load, mean what their plain definitions
say: every tool of an app under its casefolded name in index order, sorted app names with each tool's code, and every
spelling of every name (issue 27: at 1M tools these are built vectorized, or with one pass over the names)."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from handler.catalog import names as names_module
from handler.catalog.names import ToolNames, describe_collisions, describe_reserved, spelling_keys
from handler.errors import IntegrityError
from handler.index.records import ToolKeys, ToolRecords
from handler.index.table import ToolTable

APPS = st.lists(st.sampled_from(["Slack", "slack", "SLACK", "Gmail", "ß", "SS", "ss", "Éclair", "éclair", "Z"]))


def table_of(apps: list[str]) -> ToolTable:
    names = [f"{app}.Tool{i}" for i, app in enumerate(apps)]
    keys = ToolKeys(tuple(names), tuple(apps), np.zeros(len(apps), dtype=bool))
    return ToolTable.of(ToolRecords(b"\n" * len(apps), keys), ToolNames([f"T{i}" for i in range(len(apps))]))


@given(APPS)
def test_the_table_groups_and_codes_apps_as_their_plain_definition(apps: list[str]) -> None:
    table = table_of(apps)
    grouped: dict[str, list[int]] = {}
    for i, app in enumerate(apps):
        grouped.setdefault(app.casefold(), []).append(i)
    assert list(table.by_app) == list(grouped)
    assert {app: ids.tolist() for app, ids in table.by_app.items()} == grouped
    assert table.app_names == tuple(sorted(set(apps)))
    assert [table.app_names[code] for code in table.app_codes] == apps
    assert table.app_codes.dtype == np.intp


NAMES = st.lists(st.sampled_from(["A.b", "a_B", "a.c", "Toolrec.UseTool", "toolrec_findtools", "x/y.z", "X/Y.Z", "q"]))


@given(NAMES)
def test_the_resolver_refuses_and_resolves_as_its_plain_definition(names: list[str]) -> None:
    resolves_as_its_plain_definition(names)


@given(NAMES)
def test_the_resolver_means_the_same_when_every_spelling_hashes_alike(names: list[str]) -> None:
    # The resolver keeps each spelling as its hash: names whose spellings hash alike are told apart by the spelling.
    with mock.patch.object(names_module, "hash", lambda _: 7, create=True):
        resolves_as_its_plain_definition(names)


def resolves_as_its_plain_definition(names: list[str]) -> None:
    problem = describe_collisions(names) or describe_reserved(names, "Toolrec")
    if problem is not None:
        with pytest.raises(IntegrityError) as refused:
            ToolNames(names, "Toolrec")
        assert problem in str(refused.value)
        return
    resolver = ToolNames(names, "Toolrec")
    for i, name in enumerate(names):
        assert all(resolver.position(key) == i for key in spelling_keys(name))
    assert resolver.position("no.such.tool") is None
