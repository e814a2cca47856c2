"""The task's leading verb met with the catalog's verb for the action (handler/ranking/verbs.py, lexical.py)."""

from __future__ import annotations

import pytest

from handler.ranking.analyzer import DEFAULT_ANALYZER
from handler.ranking.lexical import ACTION_TERM_WEIGHT, LexicalAnalysis
from handler.ranking.verbs import action_terms, general_verbs, leading_verb

VOCABULARY = {"send", "messag", "get", "invoic", "delet", "list", "slack", "post"}


@pytest.mark.parametrize(
    ("text", "verb"),
    [
        ("ping #ops on slack", "ping"),
        ("hey, can you please grab the invoice", "grab"),
        ("then nuke it\nthe whole task on its next line", "nuke"),
        ("what's on the invoice?", "what's"),
        ("", None),
    ],
)
def test_the_leading_verb_skips_lead_ins_and_reads_the_first_line(text: str, verb: str | None) -> None:
    assert leading_verb(text) == verb


def test_only_the_catalogs_verbs_that_the_task_does_not_already_say() -> None:
    lexicon = general_verbs()
    assert action_terms("ping #ops on slack", lexicon, VOCABULARY, DEFAULT_ANALYZER) == ("send",)
    # "get" is a stopword of the analyzer (analyzer.STOPWORDS): "list" alone is what BM25 can read of it
    assert action_terms("grab the invoice", lexicon, VOCABULARY, DEFAULT_ANALYZER) == ("list",)
    assert action_terms("send it", lexicon, VOCABULARY, DEFAULT_ANALYZER) == ()  # "share": not in the catalog
    assert action_terms("top posts in r/devops", lexicon, VOCABULARY, DEFAULT_ANALYZER) == ()  # not leading


def test_the_action_term_weighs_less_than_the_tasks_own_words() -> None:
    analysis = LexicalAnalysis(VOCABULARY, ["Slack.SendMessage"], DEFAULT_ANALYZER, {})
    weights = analysis.query("ping #ops on slack").weights
    assert weights["send"] == ACTION_TERM_WEIGHT < weights["slack"] == 1.0
    assert "send" not in analysis.query("ping #ops on slack").terms  # not one of the task's own words
