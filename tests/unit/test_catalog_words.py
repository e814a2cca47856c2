"""Words agents type meet the catalog's words: joined brands, capital acronyms, abbreviations (PRODUCT.md §1)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from handler.ranking.analyzer import MAX_STEM_STRIP, Analyzer, stem
from handler.ranking.bm25 import build_bm25
from handler.ranking.catalog_words import MIN_JOINED_CHARS, MIN_PART_CHARS, CatalogWords
from handler.ranking.dense import DenseMatrix, quantize
from handler.ranking.retriever import Method, RankingIndex
from handler.ranking.text import index_text

CATALOG = [
    ("GitHub.ListPullRequests", "List pull requests in a repository."),
    ("GitHub.CreateIssue", "Create an issue in a repository."),
    ("GoogleDrive.SearchFiles", "Search files by name or content."),
    ("HubSpot.SearchContacts", "Search CRM contacts by name or email."),
    ("Salesforce.SearchContacts", "Search Salesforce contacts."),
    ("Slack.SendDirectMessage", "Send a direct message to one person."),
    ("Sales.RunReport", "Run a saved report."),
]
analyzer = Analyzer()


def _words() -> CatalogWords:
    bm25 = build_bm25([analyzer(index_text(n, d)) for n, d in CATALOG])
    return CatalogWords(bm25.vocabulary, [n for n, _ in CATALOG], analyzer)


def _index() -> RankingIndex:
    bm25 = build_bm25([analyzer(index_text(n, d)) for n, d in CATALOG])
    dense = DenseMatrix.from_quantized(quantize(np.eye(len(CATALOG), 8, dtype=np.float32)))
    return RankingIndex([n for n, _ in CATALOG], bm25, dense, analyzer)


def _expanded(query: str) -> list[str]:
    terms = analyzer(query)
    return _words().expand(terms, query)[len(terms) :]


def test_joined_brand_names_meet_the_words_of_the_name() -> None:
    assert _expanded("github") == ["git", "hub"]
    assert _expanded("googledrive files") == analyzer("google drive")
    assert _expanded("hubspot contact") == ["hub", "spot"]


def test_capital_acronyms_and_their_plurals_meet_adjacent_name_words() -> None:
    assert _expanded("open PRs") == analyzer("pull request")
    assert _expanded("review the PR") == analyzer("pull request")
    assert _expanded("DM ana") == analyzer("direct message")
    assert _expanded("prs in lowercase are a word, not an acronym") == []


def test_an_abbreviation_meets_the_few_words_it_starts() -> None:
    assert sorted(_expanded("repo")) == sorted(analyzer("repository report"))
    assert _expanded("rep") == []  # three letters start too many words


def test_a_word_the_catalog_holds_is_never_expanded() -> None:
    assert _expanded("search files") == []
    assert _expanded("send a message") == []


def test_keyword_ranking_finds_brands_typed_in_lowercase() -> None:
    index = _index()
    for query, tool in [
        ("github", "GitHub."),
        ("googledrive", "GoogleDrive.SearchFiles"),
        ("hubspot contact", "HubSpot.SearchContacts"),
        ("list open PRs", "GitHub.ListPullRequests"),
    ]:
        hits = index.rank(query, None, 3, method=Method.BM25)
        assert hits, query
        assert index.names[hits[0].index].startswith(tool), (query, [index.names[h.index] for h in hits])


def _joined_by_every_cut(words: CatalogWords, term: str) -> list[str]:
    """The joined-word rule as first written: every cut analyzed (quadratic in the term's length)."""
    if len(term) < MIN_JOINED_CHARS:
        return []
    for cut in range(MIN_PART_CHARS, len(term) - MIN_PART_CHARS + 1):
        head, tail = analyzer(term[:cut]), analyzer(term[cut:])
        if head and tail and all(t in words.vocabulary for t in head + tail):
            return head + tail
    return []


@given(st.text(alphabet="aeinrsgdyt", max_size=14))
def test_a_stem_never_takes_off_more_than_max_stem_strip(word: str) -> None:
    assert len(stem(word)) >= len(word) - MAX_STEM_STRIP


@given(st.lists(st.sampled_from(["git", "hub", "google", "drive", "sending", "files", "reports", "qq", "e", "s"]),
                min_size=1, max_size=5))  # fmt: skip
def test_only_the_cuts_that_can_meet_catalog_words_are_tried_and_they_find_the_same_words(parts: list[str]) -> None:
    words, term = _words(), "".join(parts)
    assert words._joined(term) == _joined_by_every_cut(words, term)
