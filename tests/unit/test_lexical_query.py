"""A task as BM25 reads it: values weigh little, abbreviations meet the catalog's words (handler/ranking/lexical.py)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from handler.ranking.abbreviations import general_lexicon
from handler.ranking.analyzer import Analyzer
from handler.ranking.bm25 import build_bm25
from handler.ranking.dense import DenseMatrix, quantize
from handler.ranking.lexical import VALUE_TERM_WEIGHT, LexicalAnalysis
from handler.ranking.retriever import Method, RankingIndex
from handler.ranking.text import index_text
from handler.ranking.values import split_values

CATALOG = [
    ("Github.MergePullRequest", "Merge a pull request in a repository."),
    ("Github.ListPullRequests", "List pull requests in a repository."),
    ("Billing.CreateInvoice", "Create an invoice for a customer."),
    ("Slack.SendDirectMessage", "Send a direct message to one person."),
    ("GoogleDocs.CreateDocument", "Create a Google document."),
    ("Kubernetes.ListPods", "List the pods of a Kubernetes cluster."),
]
analyzer = Analyzer()


def _analysis(catalog: list[tuple[str, str]] = CATALOG) -> LexicalAnalysis:
    bm25 = build_bm25([analyzer(index_text(n, d)) for n, d in catalog])
    return LexicalAnalysis(bm25.vocabulary, [n for n, _ in catalog], analyzer, general_lexicon())


def test_a_tasks_values_are_told_from_its_words() -> None:
    plain, values = split_values('merge PR 12 in octo/billing, ping #ops and ana@globex.com "ship it" by next Tuesday')
    assert values.split() == ["12", "octo/billing", "#ops", "ana@globex.com", '"ship', 'it"', "next", "Tuesday"]
    assert plain.split() == ["merge", "PR", "in", ",", "ping", "and", "by"]
    plain, values = split_values("refund $25 on order 7781 from https://x.io/a?b=1")
    assert (plain.split(), values.split()) == (["refund", "on", "order", "from"], ["$25", "7781", "https://x.io/a?b=1"])


@given(st.text(max_size=80))
def test_every_character_of_a_task_lands_in_its_words_or_its_values(task: str) -> None:
    plain, values = split_values(task)
    assert sorted((plain + values).replace(" ", "")) == sorted(task.replace(" ", ""))


def test_words_inside_a_value_weigh_little_and_never_outweigh_the_tasks_own() -> None:
    weights = _analysis().query("merge PR 12 in octo/billing").weights
    assert weights["merg"] == 1.0 and weights["bill"] == VALUE_TERM_WEIGHT
    assert _analysis().query("bill the customer for octo/billing").weights["bill"] == 1.0


def test_an_abbreviation_counts_where_the_catalog_holds_the_words_of_one_of_its_meanings() -> None:
    weights = _analysis().query("open a PR").weights
    assert {"pull", "request"} <= set(weights)  # "pr": pull request (not press release: no "press" here)
    assert {"direct", "messag"} <= set(_analysis().query("DM jake").weights)
    assert {"kubernet"} <= set(_analysis().query("restart the k8s pods").weights)  # digits in a short form
    assert {"googl", "doc"} <= set(_analysis().query("new gdoc for the notes").weights)
    without = [(n, d) for n, d in CATALOG if "Pull" not in n]
    assert "pull" not in _analysis(without).query("open a PR").weights  # a meaning the catalog lacks adds nothing


def test_search_finds_a_tool_by_an_abbreviation_of_its_words() -> None:
    bm25 = build_bm25([analyzer(index_text(n, d)) for n, d in CATALOG])
    dense = DenseMatrix.from_quantized(quantize(np.eye(len(CATALOG), 8, dtype=np.float32)))
    index = RankingIndex([n for n, _ in CATALOG], bm25, dense, analyzer, lexicon=general_lexicon())
    found = [CATALOG[h.index][0] for h in index.rank("gdoc", None, 3, method=Method.BM25)]
    assert found[:1] == ["GoogleDocs.CreateDocument"]
    found = [CATALOG[h.index][0] for h in index.rank("my open PRs", None, 3, method=Method.BM25)]
    assert set(found[:2]) == {"Github.ListPullRequests", "Github.MergePullRequest"}


def test_the_embedder_reads_a_short_form_spelled_out_as_the_catalog_says_it() -> None:
    analysis = _analysis()
    assert analysis.with_meanings("open a PR for the fix") == "open a PR for the fix (pull request)"
    assert analysis.with_meanings("I'm on it, DM me") == "I'm on it, DM me (direct message)"  # "m" is no million
    assert analysis.with_meanings("send the report") == "send the report"  # nothing to spell out
