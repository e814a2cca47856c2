"""Golden test of the exact text toolrec indexes and the terms BM25 sees.

Build and query share these functions; a change here silently moves every embedding and every BM25 score,
so any change must be deliberate: update the expected values here and rebuild the indexes.
"""

from __future__ import annotations

import pytest

from handler.ranking.analyzer import Analyzer
from handler.ranking.text import first_line, index_text, normalize, split_identifier, words


@pytest.mark.parametrize(
    ("name", "parts"),
    [
        ("Slack.SendMessage", ["Slack", "Send", "Message"]),
        ("get_user_token", ["get", "user", "token"]),
        ("HTTPServerError", ["HTTP", "Server", "Error"]),
        ("Github.CreateIssue_v2Beta", ["Github", "Create", "Issue", "v2", "Beta"]),
        ("api/v1:listItems", ["api", "v1", "list", "Items"]),
        ("Google-Calendar.list_events", ["Google", "Calendar", "list", "events"]),
        ("XMLHttpRequest.getJSONData", ["XML", "Http", "Request", "get", "JSON", "Data"]),
        ("S3.PutObjectACL", ["S3", "Put", "Object", "ACL"]),
    ],
)
def test_split_identifier(name: str, parts: list[str]) -> None:
    assert split_identifier(name) == parts


@pytest.mark.parametrize(
    ("description", "line"),
    [
        (
            "Send a message to a Slack channel or user.\nSecond line ignored.",
            "Send a message to a Slack channel or user.",
        ),
        ("\n\n   Get   the token\tfor a user.  \nmore", "Get the token for a user."),
        ("Line one\r\nline two", "Line one"),
        ("", ""),
        ("   \n  \t\n", ""),
        ("x" * 600, "x" * 500),
    ],
)
def test_first_line(description: str, line: str) -> None:
    assert first_line(description) == line


@pytest.mark.parametrize(
    ("name", "description", "text"),
    [
        (
            "Slack.SendMessage",
            "Send a message to a Slack channel or user.\nThe channel must exist.",
            "Slack Send Message: Send a message to a Slack channel or user.",
        ),
        ("get_user_token", "", "get user token"),
        ("HTTPServerError", "  Raised when\nthe server fails", "HTTP Server Error: Raised when"),
        (
            "Jira.list_issuesByProject",
            "List  issues\tin a project.",
            "Jira list issues By Project: List issues in a project.",
        ),
    ],
)
def test_index_text(name: str, description: str, text: str) -> None:
    assert index_text(name, description) == text


def test_normalize_folds_width_and_drops_control_characters() -> None:
    assert normalize("Ｓｌａｃｋ\x00msg\u200b") == "Slack msg "


@pytest.mark.parametrize(
    ("sentence", "tokens", "terms"),
    [
        (
            "Could you please send the deployment notes to the #eng channel?",
            ["could", "you", "please", "send", "the", "deployment", "notes", "to", "the", "eng", "channel"],
            ["send", "deployment", "note", "eng", "channel"],
        ),
        (
            "Let the team know the deploy finished",
            ["let", "the", "team", "know", "the", "deploy", "finished"],
            ["team", "know", "deploy", "finish"],
        ),
        (
            "Create Jira issues for failing builds and assign them to me",
            ["create", "jira", "issues", "for", "failing", "builds", "and", "assign", "them", "to", "me"],
            ["creat", "jira", "issu", "fail", "build", "assign"],
        ),
        (
            "List all open PullRequests in the GitHub repo",
            ["list", "all", "open", "pull", "requests", "in", "the", "git", "hub", "repo"],
            ["list", "open", "pull", "request", "git", "hub", "repo"],
        ),
        ("查询天气 in Tokyo", ["查", "询", "天", "气", "in", "tokyo"], ["查", "询", "天", "气", "tokyo"]),
    ],
)
def test_words_and_default_analyzer(sentence: str, tokens: list[str], terms: list[str]) -> None:
    assert words(sentence) == tokens
    assert Analyzer()(sentence) == terms
