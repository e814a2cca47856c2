"""BM25 against an independent, deliberately plain Okapi BM25 (Lucene idf), term by term, document by document."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from handler.ranking.bm25 import BM25Params, build_bm25

VOCAB = ["slack", "send", "message", "channel", "issue", "create", "jira", "list", "user", "email"]
documents = st.lists(st.lists(st.sampled_from(VOCAB), max_size=12), min_size=1, max_size=25)
queries = st.lists(st.sampled_from([*VOCAB, "absent"]), max_size=8)
params = st.builds(BM25Params, k1=st.floats(0.0, 3.0), b=st.floats(0.0, 1.0))


def okapi(docs: list[list[str]], query: list[str], k1: float, b: float) -> list[float]:
    n = len(docs)
    total = sum(len(d) for d in docs)
    avgdl = total / n if total else 1.0
    scores = []
    for doc in docs:
        score = 0.0
        for term in set(query):
            tf = doc.count(term)
            if tf == 0:
                continue
            df = sum(1 for d in docs if term in d)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(doc) / avgdl))
        scores.append(score)
    return scores


@given(documents, queries, params)
def test_scores_match_the_reference(docs: list[list[str]], query: list[str], p: BM25Params) -> None:
    got = build_bm25(docs, p).score(query)
    np.testing.assert_allclose(got, okapi(docs, query, p.k1, p.b), rtol=1e-5, atol=1e-5)


def test_known_values_and_repeated_query_terms() -> None:
    docs = [["slack", "send", "message"], ["jira", "create", "issue", "issue"], ["send", "email"]]
    index = build_bm25(docs)
    expected = okapi(docs, ["send", "issue"], 1.2, 0.75)
    np.testing.assert_allclose(index.score(["send", "issue"]), expected, rtol=1e-6)
    # A query term repeated counts once (a chatty "send ... send" is not twice the evidence).
    np.testing.assert_allclose(index.score(["send", "send", "issue"]), expected, rtol=1e-6)
    assert expected[1] > expected[0] > 0 and expected[2] > 0
    assert index.score(["absent"]).tolist() == [0.0, 0.0, 0.0]
