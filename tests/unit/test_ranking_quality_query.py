"""Multi-request tasks: splitting a task into its parts, and ranking by a tool's best cosine with any part."""

from __future__ import annotations

import numpy as np
import pytest

from handler.inference.embedder import OnnxEmbedder
from handler.ranking.analyzer import Analyzer
from handler.ranking.bm25 import build_bm25
from handler.ranking.dense import DenseMatrix, quantize
from handler.ranking.query import MAX_PARTS, embed_query, query_text, task_parts
from handler.ranking.retriever import Method, RankingIndex
from handler.ranking.text import index_text


@pytest.mark.parametrize(
    ("task", "parts"),
    [
        ("send a Slack message to the team", ()),
        ("Slack.SendMessage", ()),
        (
            "Please block my IoT device 'ABC123'. Also, retrieve the engine RPM of vehicle 49. "
            "Finally, I would like astronomy data for New York.",
            (
                "Please block my IoT device 'ABC123'",
                "retrieve the engine RPM of vehicle 49",
                "I would like astronomy data for New York",
            ),
        ),
        (
            "Create the issue in Jira and then post a note to the channel",
            ("Create the issue in Jira", "post a note to the channel"),
        ),
        ("Find flights to Rome. Thanks!", ()),  # "Thanks" is no request of its own
    ],
)
def test_task_parts(task: str, parts: tuple[str, ...]) -> None:
    assert task_parts(task) == parts


def test_parts_are_bounded_and_only_the_task_is_split() -> None:
    task = " ".join(f"Step {i}: do thing number {i}." for i in range(10))
    assert len(task_parts(task)) == MAX_PARTS
    query = query_text(
        "Book a table for two. Then order a taxi to the restaurant.", context="I am in Paris. Then Rome."
    )
    assert query.parts == ("Book a table for two", "order a taxi to the restaurant")
    assert "Paris" in query.lexical and "Paris" not in query.semantic


def test_embed_query_gives_the_task_then_its_parts(embedder: OnnxEmbedder) -> None:
    query = query_text("Convert 100 dollars to euros. Also, tell me the weather in Oslo tomorrow.")
    rows = embed_query(embedder, query)
    assert rows.shape == (1 + len(query.parts), embedder.dimensions)
    np.testing.assert_allclose(rows[0], embedder.embed(query.semantic), atol=1e-6)
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    single = embed_query(embedder, query_text("convert dollars to euros"))
    assert single.shape == (1, embedder.dimensions)


def test_a_tool_scores_its_best_cosine_with_any_part() -> None:
    catalog = [("A.One", "first tool"), ("B.Two", "second tool"), ("C.Three", "third tool")]
    analyzer = Analyzer()
    dense = DenseMatrix.from_quantized(quantize(np.eye(3, 4, dtype=np.float32)))
    index = RankingIndex(
        [n for n, _ in catalog], build_bm25([analyzer(index_text(n, d)) for n, d in catalog]), dense, analyzer
    )
    whole = np.array([0.8, 0.6, 0.0, 0.0], dtype=np.float32)
    part = np.array([0.0, 0.0, 1.0, 0.0], dtype=np.float32)
    hits = index.rank("unrelated words", np.stack([whole, part]), 3, method=Method.DENSE)
    assert [h.index for h in hits] == [2, 0, 1]
    assert [round(h.semantic or 0.0, 2) for h in hits] == [1.0, 0.8, 0.6]
    # One row behaves exactly like the plain vector.
    one = index.rank("unrelated words", whole[None, :], 3, method=Method.HYBRID)
    assert one == index.rank("unrelated words", whole, 3, method=Method.HYBRID)
