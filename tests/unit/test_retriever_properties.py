"""Properties of RankingIndex.rank: input order does not matter, the allowed mask is applied before top-k,
and a query that is a tool's exact name ranks that tool first."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from handler.ranking.analyzer import Analyzer
from handler.ranking.bm25 import build_bm25
from handler.ranking.dense import DenseMatrix, quantize
from handler.ranking.retriever import Hit, Method, RankingIndex
from handler.ranking.text import index_text

CATALOG = [
    ("Slack.SendMessage", "Send a message to a Slack channel or user."),
    ("Slack.ListChannels", "List the channels in a Slack workspace."),
    ("Slack.GetUserProfile", "Get a Slack user's profile by user id."),
    ("Github.CreateIssue", "Create an issue in a GitHub repository."),
    ("Github.ListPullRequests", "List pull requests in a GitHub repository."),
    ("Github.MergePullRequest", "Merge an open pull request."),
    ("Jira.CreateIssue", "Create a Jira issue in a project."),
    ("Jira.SearchIssues", "Search Jira issues with a text query."),
    ("Gmail.SendEmail", "Send an email from the user's Gmail account."),
    ("Gmail.ListThreads", "List email threads in the Gmail inbox."),
    ("GoogleCalendar.CreateEvent", "Create a calendar event with attendees."),
    ("GoogleCalendar.ListEvents", "List upcoming events in a Google calendar."),
    ("Notion.CreatePage", "Create a page in a Notion workspace."),
    ("Notion.SearchPages", "Search Notion pages by title."),
    ("Stripe.CreateRefund", "Refund a Stripe charge in full or in part."),
    ("Stripe.ListInvoices", "List invoices for a Stripe customer."),
    ("Zendesk.CreateTicket", "Open a support ticket in Zendesk."),
    ("Zendesk.AddComment", "Add a comment to a Zendesk ticket."),
    ("Weather.GetForecast", "Get the weather forecast for a city."),
    ("Math.Add", "Add two numbers."),
    ("Spotify.PlayTrack", "Play a track on the user's Spotify device."),
    ("Linear.CreateIssue", "Create an issue in a Linear team."),
]
NAMES = [name for name, _ in CATALOG]
QUERIES = [
    "send a message to the team channel",
    "create an issue",
    "refund the customer's last charge",
    "what's the weather in Paris",
    "open pull requests",
    "play some music",
    "quantum chromodynamics",  # shares no word with any tool
]
ANALYZER = Analyzer()
_rng = np.random.default_rng(11)
VECTORS = _rng.normal(size=(len(CATALOG), 32)).astype(np.float32)
VECTORS /= np.linalg.norm(VECTORS, axis=1, keepdims=True)


def make_index(order: Sequence[int]) -> RankingIndex:
    texts = [index_text(*CATALOG[i]) for i in order]
    bm25 = build_bm25([ANALYZER(t) for t in texts])
    dense = DenseMatrix.from_quantized(quantize(VECTORS[list(order)]))
    return RankingIndex([NAMES[i] for i in order], bm25, dense, ANALYZER)


def query_vector(seed: int) -> np.ndarray:
    """A query near one tool's vector, so dense scores are informative."""
    rng = np.random.default_rng(seed)
    vector = VECTORS[seed % len(VECTORS)] + 0.5 * rng.normal(size=VECTORS.shape[1]).astype(np.float32)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def named(index: RankingIndex, hits: list[Hit]) -> list[tuple[str, float]]:
    return [(index.names[h.index], h.score) for h in hits]


def assert_same_ranking(got: list[tuple[str, float]], expected: list[tuple[str, float]]) -> None:
    """The same tools with the same scores (float sums may differ in the last bit), and ``got`` in an order
    that is descending by the expected scores: only exact ties, broken by catalog order, may swap places."""
    want = dict(expected)
    assert dict(got).keys() == want.keys()
    assert [s for _, s in got] == pytest.approx([want[n] for n, _ in got], abs=1e-6)
    assert all(want[a] >= want[b] - 1e-6 for (a, _), (b, _) in itertools.pairwise(got))


methods = st.sampled_from(list(Method))


@settings(max_examples=60, deadline=None)
@given(st.permutations(range(len(CATALOG))), st.sampled_from(QUERIES), st.integers(0, 100), methods)
def test_ranking_does_not_depend_on_catalog_order(order: list[int], query: str, seed: int, method: Method) -> None:
    base, permuted = make_index(range(len(CATALOG))), make_index(order)
    vector = query_vector(seed)
    k = len(CATALOG)
    expected = named(base, base.rank(query, vector, k, method=method))
    got = named(permuted, permuted.rank(query, vector, k, method=method))
    assert_same_ranking(got, expected)
    scores = [s for _, s in expected]
    if method is not Method.BM25 and all(x - y > 1e-6 for x, y in itertools.pairwise(scores)):
        assert [n for n, _ in got[:5]] == [n for n, _ in expected[:5]]


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.booleans(), min_size=len(CATALOG), max_size=len(CATALOG)),
    st.sampled_from([*QUERIES, "Slack.SendMessage", "github_createissue"]),
    st.integers(0, 100),
    st.integers(1, 8),
    methods,
)
def test_disallowed_tools_never_appear_nor_take_a_slot(
    mask: list[bool], query: str, seed: int, k: int, method: Method
) -> None:
    index = make_index(range(len(CATALOG)))
    allowed = np.array(mask)
    vector = query_vector(seed)
    hits = index.rank(query, vector, k, allowed=allowed, method=method)
    assert all(allowed[h.index] for h in hits)
    full = [h.index for h in index.rank(query, vector, len(CATALOG), method=method)]
    if method is Method.HYBRID:
        # Hybrid normalizes each signal over the allowed tools, so only the slot count can be compared.
        assert len(hits) == min(k, int(allowed.sum()))
    else:
        assert [h.index for h in hits] == [i for i in full if allowed[i]][:k]


@pytest.mark.parametrize("method", list(Method))
@pytest.mark.parametrize(
    "query", ["Slack.SendMessage", "Slack_SendMessage", "slack.sendmessage", " SLACK_SENDMESSAGE "]
)
def test_exact_name_ranks_first(query: str, method: Method) -> None:
    index = make_index(range(len(CATALOG)))
    # The query vector points at another tool, so only the exact-name rule can put Slack.SendMessage first.
    hits = index.rank(query, VECTORS[NAMES.index("Weather.GetForecast")], 5, method=method)
    assert index.names[hits[0].index] == "Slack.SendMessage"
    assert len({h.index for h in hits}) == len(hits)


@given(st.permutations(range(len(CATALOG))), methods)
def test_exact_name_of_a_disallowed_tool_is_not_returned(order: list[int], method: Method) -> None:
    index = make_index(order)
    allowed = np.array([name != "Jira.CreateIssue" for name in index.names])
    assume(allowed.any())
    hits = index.rank("Jira.CreateIssue", VECTORS[0], 3, allowed=allowed, method=method)
    assert "Jira.CreateIssue" not in [index.names[h.index] for h in hits]
    assert len(hits) == 3


def test_the_score_reads_a_cosine_as_the_past_tasks_lifted_it_and_nothing_else() -> None:
    """Issue 36 item 3: on a warm index the score reads each tool's cosine with what its past tasks added (the
    semantic signal's own reading); a tool usage did not lift, and a cold ranking, read as they were."""
    from handler.ranking.confidence import FEATURES
    from handler.ranking.retriever import Ranked, UsageMove, score_rows

    evidence = np.arange(2 * len(FEATURES), dtype=np.float64).reshape(2, len(FEATURES))
    cold = Ranked([7, 3], np.array([0.3, 0.2], np.float32), np.zeros(8, np.float32), 0.6, False, evidence)
    assert score_rows(cold) is evidence
    warm = Ranked(cold.chosen, cold.scores, cold.cosines, 0.6, False, evidence, {3: UsageMove(0.125, 0.0, 0.0)})
    rows = score_rows(warm)
    assert rows is not None
    cosine, below = FEATURES.index("cosine"), FEATURES.index("below_best_cosine")
    assert rows[1, cosine] == evidence[1, cosine] + 0.125 and rows[1, below] == evidence[1, below] - 0.125
    others = [c for c in range(len(FEATURES)) if c not in (cosine, below)]
    np.testing.assert_array_equal(rows[:, others], evidence[:, others])
    np.testing.assert_array_equal(rows[0], evidence[0])
    assert warm.evidence is evidence and evidence[1, cosine] == len(FEATURES)  # the stages still read the text's
