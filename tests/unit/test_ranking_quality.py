"""The hybrid fusion (reciprocal rank fusion over the allowed tools) and the calibrated no-match decision."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handler.ranking.analyzer import Analyzer
from handler.ranking.bm25 import build_bm25
from handler.ranking.confidence import FEATURES, SHIPPED, Calibration
from handler.ranking.dense import DenseMatrix, quantize
from handler.ranking.fusion import RANK_CONSTANT, rank_votes, reciprocal_rank_fusion, z_score
from handler.ranking.no_match import calibrate, refusal_upper_bound
from handler.ranking.retriever import Method, RankingIndex
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


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(finite, finite, st.booleans()), min_size=1, max_size=150), st.randoms())
def test_rank_fusion_reads_only_the_allowed_tools_and_never_their_order(
    rows: list[tuple[float, float, bool]], shuffle: random.Random
) -> None:
    lexical = np.array([max(lx, 0.0) for lx, _, _ in rows], dtype=np.float32)
    semantic = np.array([s for _, s, _ in rows], dtype=np.float32)
    allowed = np.array([a for _, _, a in rows])
    fused = reciprocal_rank_fusion(lexical, semantic, allowed)
    assert not fused[~allowed].any()
    # A disallowed tool's scores, however extreme, move no allowed tool's score.
    moved = reciprocal_rank_fusion(np.where(allowed, lexical, 1e6), np.where(allowed, semantic, 1e6), allowed)
    np.testing.assert_allclose(moved, fused, rtol=1e-5, atol=1e-7)
    order = list(range(len(rows)))
    shuffle.shuffle(order)
    permuted = reciprocal_rank_fusion(lexical[order], semantic[order], allowed[order])
    np.testing.assert_allclose(permuted, fused[order], rtol=1e-5, atol=1e-7)  # summation order only


def test_rank_votes_share_a_rank_on_ties_and_stop_at_the_depth() -> None:
    scores = np.array([3.0, 1.0, 3.0, 2.0, 0.5], dtype=np.float32)
    votes = rank_votes(scores, np.ones(5, dtype=bool), depth=3)
    first, third = 1 / (RANK_CONSTANT + 1), 1 / (RANK_CONSTANT + 3)
    np.testing.assert_allclose(votes, [first, 0.0, first, third, 0.0], rtol=1e-6)
    # BM25 votes only for tools sharing a word with the query (score > 0): with none, the dense order decides.
    semantic_only = reciprocal_rank_fusion(np.zeros(5, dtype=np.float32), scores, np.ones(5, dtype=bool))
    assert list(np.argsort(-semantic_only, kind="stable")) == list(np.argsort(-scores, kind="stable"))


def test_standing_out_separates_tools_whose_rank_votes_are_close() -> None:
    # Tool 0 alone shares a rare context word (BM25 far above the rest) and is the second in meaning;
    # tool 1 is first in meaning and second in words. Equal votes; tool 0 stands out more.
    lexical = np.array([9.0, 1.1, 1.0, 0.9, 0.0, 0.0], dtype=np.float32)
    semantic = np.array([0.60, 0.62, 0.30, 0.28, 0.25, 0.20], dtype=np.float32)
    fused = reciprocal_rank_fusion(lexical, semantic, np.ones(6, dtype=bool))
    assert int(np.argmax(fused)) == 0


def test_one_lexical_outlier_does_not_silence_the_semantic_signal() -> None:
    # Tool 0 shares a rare word with the query (huge BM25); tool 1 matches in meaning and a little in words.
    lexical = np.array([40.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0], dtype=np.float32)
    semantic = np.array([0.05, 0.80, 0.10, 0.12, 0.08, 0.11, 0.09, 0.10], dtype=np.float32)
    fused = reciprocal_rank_fusion(lexical, semantic, np.ones(8, dtype=bool))
    assert int(np.argmax(fused)) == 1
    assert set(np.argsort(-fused)[:2]) == {0, 1}


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


def test_keyword_ranking_has_no_cosine_and_refuses_only_a_query_sharing_no_word() -> None:
    found = _index().recommend("weather forecast", None, 3, method=Method.BM25)
    assert found.hits and all(h.semantic is None for h in found.hits) and found.best_cosine is None
    assert _index().recommend("quantum chromodynamics", None, 3, method=Method.BM25).no_match


def _unit(*components: float) -> np.ndarray:
    vector = np.zeros(8, dtype=np.float32)
    vector[: len(components)] = components
    return vector / np.linalg.norm(vector)


# A score that reads the cosine alone: p = sigmoid(10 (cosine - 0.3)), refusing below 0.5 (cosine 0.3).
BY_COSINE = Calibration(np.eye(len(FEATURES))[FEATURES.index("cosine")] * 10.0, -3.0, 0.5)


def test_no_match_when_no_allowed_tool_is_likely_right() -> None:
    index = _index()
    unrelated = _unit(0, 0, 0, 0, 0, 0, 0, 1)  # orthogonal to every tool
    refused = index.recommend("quantum chromodynamics", unrelated, 3, calibration=BY_COSINE)
    assert refused.no_match and refused.hits == () and refused.best_cosine == pytest.approx(0.0, abs=0.01)
    found = index.recommend("weather in Paris", _unit(0, 0, 1), 3, calibration=BY_COSINE)
    assert not found.no_match and found.hits[0].probability == pytest.approx(1 / (1 + np.exp(-7.0)), abs=0.01)
    # Only the allowed tools count: the one close tool, disallowed, does not rescue the query.
    mask = np.array([True, True, False])
    assert index.recommend("weather in Paris", _unit(0, 0, 1), 3, mask, calibration=BY_COSINE).no_match
    assert not index.recommend("quantum chromodynamics", unrelated, 3, calibration=None).no_match


def test_the_shipped_score_refuses_a_task_no_tool_is_near() -> None:
    assert _index().recommend("quantum chromodynamics", _unit(0, 0, 0, 0, 0, 0, 0, 1), 3).no_match


def test_a_task_in_the_catalogs_own_words_is_never_refused() -> None:
    index, unrelated = _index(), _unit(0, 0, 0, 0, 0, 0, 0, 1)  # the model sees nothing close
    assert not index.recommend("github issue", unrelated, 3, calibration=BY_COSINE).no_match  # both in one tool
    assert not index.recommend("create slack issue", unrelated, 3, calibration=BY_COSINE).no_match  # 2 of 3
    assert index.recommend("book a flight with the weather service", unrelated, 3, calibration=BY_COSINE).no_match
    # Only allowed tools count: the GitHub tool, disallowed, does not keep the task.
    mask = np.array([True, False, True])
    assert index.recommend("github issue", unrelated, 3, mask, calibration=BY_COSINE).no_match


def test_a_tool_named_exactly_is_never_refused() -> None:
    found = _index().recommend("Weather.GetForecast", _unit(0, 0, 0, 0, 0, 0, 0, 1), 1, calibration=BY_COSINE)
    assert [h.index for h in found.hits] == [2]


def _vector(components: list[float]) -> np.ndarray:
    vector = np.asarray(components, dtype=np.float32)
    if float(np.linalg.norm(vector)) < 1e-3:
        vector[0] = 1.0
    return vector / np.linalg.norm(vector)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.floats(min_value=-1, max_value=1, allow_nan=False, width=32), min_size=8, max_size=8),
    st.lists(st.booleans(), min_size=3, max_size=3),
    st.one_of(st.sampled_from(["send a message", "weather", "open an issue", "quantum chromodynamics"]), st.text()),
    st.floats(min_value=0.0, max_value=1.0, allow_nan=False),
)
def test_no_match_is_a_property_of_the_task_and_the_allowed_tools_never_of_top_k(
    components: list[float], allowed: list[bool], words: str, threshold: float
) -> None:
    vector, mask = _vector(components), np.array(allowed)
    calibration = Calibration(SHIPPED.weights, SHIPPED.bias, threshold)
    answers = [_index().recommend(words, vector, k, mask, calibration=calibration) for k in range(1, 21)]
    assert len({a.no_match for a in answers}) == 1
    for k, answer in enumerate(answers, start=1):
        assert len(answer.hits) == (0 if answer.no_match else min(k, int(mask.sum())))
        # A suggestion's score does not depend on how many are shown either.
        assert [h.probability for h in answer.hits] == [h.probability for h in answers[-1].hits][:k]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.floats(min_value=-1, max_value=1, allow_nan=False, width=32), min_size=8, max_size=8),
    st.one_of(st.sampled_from(["send a message", "weather forecast", "open an issue in slack"]), st.text()),
)
def test_the_score_is_a_probability_and_orders_suggestions_as_the_ranking_does(
    components: list[float], words: str
) -> None:
    found = _index().recommend(
        words, _vector(components), 3, calibration=Calibration(SHIPPED.weights, SHIPPED.bias, None)
    )
    scores = [h.score for h in found.hits]
    probabilities = [h.probability for h in found.hits]
    assert all(p is not None and 0.0 <= p <= 1.0 for p in probabilities)
    assert scores == sorted(scores, reverse=True)
    assert probabilities == sorted(probabilities, reverse=True)  # never rises down the list


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.lists(st.floats(min_value=-1, max_value=1, allow_nan=False), min_size=268, max_size=1200),
        min_size=1,
        max_size=3,
    ),
    st.sampled_from([0.01, 0.05, 0.2]),
)
def test_calibration_is_the_highest_threshold_each_set_is_confidently_within(
    sets: list[list[float]], target: float
) -> None:
    threshold = calibrate({f"s{i}": v for i, v in enumerate(sets)}, target)
    for values in sets:
        refused = int(np.sum(np.array(values) < threshold))
        assert refusal_upper_bound(refused, len(values)) <= target
    # The next larger observed cosine would put some set's bound over the target.
    above = sorted({x for v in sets for x in v if x > threshold})
    if above:
        bounds = [refusal_upper_bound(int(np.sum(np.array(v) < above[0])), len(v)) for v in sets]
        assert max(bounds) > target


def test_the_bound_is_stricter_than_the_share_seen_and_tightens_with_more_queries() -> None:
    assert refusal_upper_bound(0, 268) <= 0.01 < refusal_upper_bound(0, 267)  # the smallest set that can vote
    assert refusal_upper_bound(5, 1000) > 0.005
    assert refusal_upper_bound(50, 10_000) < refusal_upper_bound(5, 1000)


def test_calibration_holds_every_set_to_the_target_and_ignores_sets_too_small_to_vote() -> None:
    big = [0.9] * 1000
    low = [0.1] * 20 + [0.9] * 980  # 2 % of its requests sit at 0.1: refusing them would break the target
    assert calibrate({"big": big, "low": low}, 0.01) <= 0.1
    tiny = [0.05, 0.9]  # 2 queries cannot show a 1 % refusal rate either way
    assert calibrate({"big": big, "tiny": tiny}, 0.01) == 0.9
    with pytest.raises(ValueError, match="large enough"):
        calibrate({"tiny": tiny})
    with pytest.raises(ValueError, match="large enough"):
        calibrate({"empty": []})
