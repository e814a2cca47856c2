"""The lint rules on their own: first-line checks, name form, and near-duplicate pairs from given vectors."""

from __future__ import annotations

import numpy as np
import pytest

from build_index.ingest.lint import first_line_problem, lint_tools, near_duplicates
from handler.catalog.names import listed_name
from handler.catalog.tool import Tool


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("", "empty"),
        ("Does stuff", "vague"),
        ("Helper function", "vague"),
        ("API endpoint", "vague"),
        ("Helper function for the API.", "vague"),
        ("Performs the requested operation on the given data.", "no-object"),
        ("List schedules.", "vague"),  # two words: too short to match a request against
        ("Send it now.", "no-object"),
        ("Creates a new one for you.", "no-object"),
        ("Updates the specified record with new values.", "no-object"),
        ("Send a message to a Slack channel or user.", None),
        ("Returns the weather forecast for a city.", None),
        ("List open pull requests in a repository.", None),
        ("查询城市天气", None),
    ],
)
def test_first_line_rules(line: str, kind: str | None) -> None:
    found = first_line_problem(line)
    assert (found[0] if found else None) == kind
    if found:
        assert line in found[1] or kind == "empty"


def test_near_duplicates_lists_each_pair_once_in_catalog_order() -> None:
    vectors = np.array([[1, 0, 0], [0, 1, 0], [0.99, 0.141, 0], [0, 0, 1], [1, 0, 0]], dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    pairs = near_duplicates(["a", "b", "c", "d", "e"], vectors, 0.95)
    assert [(p.first, p.second) for p in pairs] == [("a", "c"), ("a", "e"), ("c", "e")]
    assert pairs[1].cosine == pytest.approx(1.0)
    assert near_duplicates(["a", "b"], vectors[:2], 0.95) == []


def bag_of_words(text: str) -> np.ndarray:
    """A fake embedder: hashed word counts, unit length. Equal word bags give cosine 1."""
    vector = np.zeros(64, dtype=np.float32)
    for word in text.lower().split():
        vector[sum(map(ord, word.strip(".,"))) % 64] += 1
    return vector / max(float(np.linalg.norm(vector)), 1e-9)


def tool(name: str, description: str) -> Tool:
    return Tool(name=name, description=description, input_schema={"type": "object"}, app=name.split(".", maxsplit=1)[0])


def test_lint_tools_reports_every_kind_once_per_tool() -> None:
    tools = [
        tool("Slack.SendMessage", "Send a message to a Slack channel.\nDetails follow."),
        tool("Slack.PostMessage", "Send a message to a Slack channel"),
        tool("send_email", "Send an email to a recipient."),
        tool("Util.DoIt", "Does stuff"),
        tool("Util.Blank", "   \n"),
    ]
    report = lint_tools(tools, bag_of_words, 0.95)
    found = {(p.tool, p.kind) for p in report.problems}
    assert found == {
        ("Slack.SendMessage", "near-duplicate"),
        ("Slack.PostMessage", "near-duplicate"),
        ("send_email", "name-form"),
        ("Util.DoIt", "vague"),
        ("Util.Blank", "empty"),
    }
    assert [(d.first, d.second) for d in report.duplicates] == [("Slack.SendMessage", "Slack.PostMessage")]
    assert not report.clean
    assert report.lines()[-1] == "5 problem(s) in 5 of 5 tools (empty 1, name-form 1, near-duplicate 2, vague 1)"
    assert report.as_json()["by_kind"] == {"near-duplicate": 2, "name-form": 1, "vague": 1, "empty": 1}


def test_a_name_the_providers_cannot_show_as_is_is_reported() -> None:
    long_name = "Salesforce." + "Create" * 10
    report = lint_tools([tool(long_name, "Create a Salesforce opportunity line item.")], bag_of_words)
    (problem,) = report.problems
    assert (problem.tool, problem.kind) == (long_name, "listed-name")
    assert listed_name(long_name) in problem.message


def test_a_clean_catalog_is_clean() -> None:
    report = lint_tools([tool("Slack.SendMessage", "Send a message to a Slack channel.")], bag_of_words)
    assert report.clean
    assert report.lines() == ["no problems in 1 tools"]
