"""Hypothesis strategies for policies, and the pattern rule as an oracle, shared by the policy property tests
(ranking-level and over HTTP/MCP)."""

from __future__ import annotations

from collections.abc import Sequence

from hypothesis import strategies as st


def case_variants(text: str) -> st.SearchStrategy[str]:
    return st.sampled_from([text, text.lower(), text.upper()])


def tool_patterns(apps: Sequence[str], tool_names: Sequence[str], misses: Sequence[str]) -> st.SearchStrategy[str]:
    """``*``, ``App.*`` and exact names in any case, and ``misses``: patterns that match no tool of the catalog."""
    return st.one_of(
        st.just("*"),
        st.sampled_from(apps).flatmap(lambda app: case_variants(f"{app}.*")),
        st.sampled_from(tool_names).flatmap(case_variants),
        st.sampled_from(misses),
    )


def spellings(name: str) -> st.SearchStrategy[str]:
    """A tool name as a caller may spell it: any case, or listed with ``_``."""
    return case_variants(name) | st.just(name.replace(".", "_"))


def matches(pattern: str, name: str) -> bool:
    """The pattern rule, written independently of handler/index/table.py: the oracle the properties check against."""
    if pattern == "*":
        return True
    if pattern.endswith(".*"):
        return name.split(".", maxsplit=1)[0].lower() == pattern[:-2].lower()
    return pattern.lower() == name.lower()
