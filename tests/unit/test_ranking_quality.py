"""The hybrid fusion (z-score over the allowed tools) and the calibrated no-match decision."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handler.ranking.analyzer import Analyzer
from handler.ranking.bm25 import build_bm25
from handler.ranking.dense import DenseMatrix, quantize
from handler.ranking.fusion import standardized_sum, z_score
from handler.ranking.no_match import NO_MATCH_COSINE, calibrate, is_no_match
from handler.ranking.retriever import Hit, Method, RankingIndex
from handler.ranking.text import index_text

finite = st.floats(min_value=-1e3, max_value=1e3, allow_nan=False, width=32)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(finite, st.booleans()), min_size=1, max_size=40))
def test_z_score_is_standardized_over_the_allowed_tools_only(rows: list[tuple[float, bool]]) -> None:
    scores = np.array([s for s, _ in rows], dtype=np.float32)
    allowed = np.array([a for _, a in rows])
    z = z_score(scores, allowed)
    kept = scores[allowed].astype(np.float64)
    if not allowed.any() or kept.std() <= 1e-9:
        assert not z.any()
        return
    assert abs(float(z[allowed].mean())) < 1e-3
    assert abs(float(z[allowed].std()) - 1.0) < 1e-3
    # A disallowed tool's score, however extreme, does not move anyone else's standardized score.
    moved = scores.copy()
    moved[~allowed] = 1e6
    np.testing.assert_allclose(z_score(moved, allowed)[allowed], z[allowed], rtol=1e-5, atol=1e-5)


def test_one_lexical_outlier_does_not_silence_the_semantic_signal() -> None:
    # Tool 0 shares a rare word with the query (huge BM25); tool 1 matches in meaning and a little in words.
    lexical = np.array([40.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], dtype=np.float32)
    semantic = np.array([0.05, 0.80, 0.10, 0.12, 0.08, 0.11, 0.09, 0.10], dtype=np.float32)
    allowed = np.ones(8, dtype=bool)
    fused = standardized_sum(lexical, semantic, allowed, 0.5)
    assert set(np.argsort(-fused)[:2]) == {0, 1}
    assert fused[1] > fused[2:].max()


def _index() -> RankingIndex:
    catalog = [
        ("Slack.SendMessage", "Send a message to a Slack channel."),
        ("Github.CreateIssue", "Create an issue in a GitHub repository."),
        ("Weather.GetForecast", "Get the weather forecast for a city."),
    ]
    analyzer = Analyzer()
    texts = [index_text(n, d) for n, d in catalog]
    vectors = np.eye(3, 8, dtype=np.float32)
    dense = DenseMatrix.from_quantized(quantize(vectors))
    return RankingIndex([n for n, _ in catalog], build_bm25([analyzer(t) for t in texts]), dense, analyzer)


@pytest.mark.parametrize("method", [Method.HYBRID, Method.DENSE])
def test_embedded_queries_carry_each_hits_cosine(method: Method) -> None:
    query_vector = np.array([0.6, 0.8, 0, 0, 0, 0, 0, 0], dtype=np.float32)
    hits = _index().rank("create an issue", query_vector, 3, method=method)
    cosines = {h.index: h.semantic for h in hits}
    assert cosines[0] == pytest.approx(0.6, abs=0.01)
    assert cosines[1] == pytest.approx(0.8, abs=0.01)
    assert cosines[2] == pytest.approx(0.0, abs=0.01)


def test_keyword_ranking_has_no_cosine_and_never_answers_no_match() -> None:
    hits = _index().rank("weather forecast", None, 3, method=Method.BM25)
    assert hits and all(h.semantic is None for h in hits)
    assert not is_no_match(hits)


def test_no_match_when_no_hit_is_close_enough() -> None:
    assert is_no_match([])
    assert is_no_match([Hit(0, 1.0, NO_MATCH_COSINE - 0.01), Hit(1, 0.5, 0.0)])
    assert not is_no_match([Hit(0, 1.0, NO_MATCH_COSINE - 0.01), Hit(1, 0.5, NO_MATCH_COSINE)])
    assert not is_no_match([Hit(0, 1.0, 0.1)], threshold=0.05)


def test_an_unrelated_query_is_refused_and_a_related_one_is_not() -> None:
    index = _index()
    unrelated = np.zeros(8, dtype=np.float32)
    unrelated[7] = 1.0  # orthogonal to every tool
    assert is_no_match(index.rank("quantum chromodynamics", unrelated, 3))
    related = np.array([0.0, 0.0, 1.0, 0, 0, 0, 0, 0], dtype=np.float32)
    assert not is_no_match(index.rank("weather in Paris", related, 3))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.lists(st.floats(min_value=-1, max_value=1, allow_nan=False), min_size=1, max_size=60),
        min_size=1,
        max_size=4,
    ),
    st.sampled_from([0.0, 0.01, 0.05, 0.2]),
)
def test_calibration_refuses_at_most_the_target_share_averaged_over_sets(
    sets: list[list[float]], target: float
) -> None:
    threshold = calibrate({f"s{i}": v for i, v in enumerate(sets)}, target)
    refused = np.mean([np.mean(np.array(v) < threshold) for v in sets])
    assert refused <= target + 1e-12
    # It is the highest such threshold: the next larger observed cosine would refuse too many.
    above = sorted({x for v in sets for x in v if x > threshold})
    if above and threshold > 0:
        refused_next = np.mean([np.mean(np.array(v) < above[0]) for v in sets])
        assert refused_next > target


def test_calibration_weighs_each_set_the_same() -> None:
    big = [0.9] * 1000
    small = [0.1, 0.9]  # half of the small set would be refused by any threshold above 0.1
    assert calibrate({"big": big, "small": small}, 0.01) <= 0.1
    with pytest.raises(ValueError, match="at least one query"):
        calibrate({"empty": []})
