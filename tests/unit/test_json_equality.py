"""uniqueItems in O(n log n) keeps JSON Schema's equality (issue 22 item 3): numbers by value, booleans apart from
numbers, arrays item by item, objects by content. Checked against jsonschema's own pairwise ``equal``."""

from __future__ import annotations

from itertools import combinations
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema._utils import equal

from handler.execute.json_equality import first_duplicate

# Few distinct leaves, so that equal values (and 1 beside 1.0 or true) come up often.
LEAVES = st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from([0.0, 1.0, 2.5]) | st.sampled_from("ab")
JSON = st.recursive(
    LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from("xy"), inner, max_size=2)
)


@pytest.mark.parametrize(
    ("items", "duplicate"),
    [
        ([1, 1.0], (0, 1)),
        ([True, 1], None),
        ([False, 0, None, "0", [], {}], None),
        (["a", 3, {"b": [1, 2], "a": True}, {"a": True, "b": [1.0, 2]}], (2, 3)),
        ([[1], [True]], None),
        ([[0], [False], [0]], (0, 2)),  # jsonschema's own uniq misses this one: it sorts [0] and [False] as equal
    ],
)
def test_json_equality_cases(items: list[Any], duplicate: tuple[int, int] | None) -> None:
    assert first_duplicate(items) == duplicate


@given(st.lists(JSON, max_size=8))
def test_a_duplicate_is_found_exactly_when_two_items_are_equal_in_json_schema(items: list[Any]) -> None:
    found = first_duplicate(items)
    assert (found is not None) == any(equal(one, other) for one, other in combinations(items, 2))
    if found is not None:
        assert found[0] < found[1] and equal(items[found[0]], items[found[1]])
