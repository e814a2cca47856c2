"""How a task (and the request's optional context) becomes the query the ranking core scores.

The one place query formation lives, so it can be measured and changed without touching the service. The
embedding reads the task alone (a long context would blur its meaning in one mean-pooled vector); the lexical side
reads the task followed by the context, which can only add matching words, and a bare tool name
("Slack.SendMessage") gets no context, so ``RankingIndex.rank`` still recognizes it. One vector of a task that
asks for several things sits between their tools, so its sentences and "also/then/finally" clauses are embedded
too (``embed_query``) and a tool keeps its best cosine with any of them. Measured: docs/quality.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from handler.ranking.arrays import FloatArray


class Embedder(Protocol):
    """Turns texts into unit-length float32 vectors; ``fingerprint`` identifies the model exactly."""

    @property
    def fingerprint(self) -> str: ...

    @property
    def dimensions(self) -> int: ...

    def embed(self, text: str) -> FloatArray: ...


# A new sentence starts after . ! ? or ; followed by a capital or a quote; a line break also separates.
_SENTENCE = re.compile(r"(?<=[.!?;])\s+(?=[A-Z\"'])|\n+")
_CONNECTOR = re.compile(
    r"(?:^|,\s*|\s+)(?:and then|and also|then|also|additionally|furthermore|moreover|finally|lastly|"
    r"after that|afterwards|next)\b,?\s*",
    re.IGNORECASE,
)
MIN_PART_WORDS = 3  # shorter pieces ("Thanks!") carry no request of their own
MAX_PARTS = 4  # each part costs one embedding (~1-3 ms): a bound on the query's latency


@dataclass(frozen=True)
class QueryText:
    lexical: str  # what BM25 (and the exact-name check) reads
    semantic: str  # what the embedder reads
    parts: tuple[str, ...] = ()  # the task's separate requests, when it has more than one


def task_parts(task: str) -> tuple[str, ...]:
    """The separate requests in a task, in order; none when it reads as one request."""
    pieces: list[str] = []
    for sentence in _SENTENCE.split(task):
        pieces.extend(_CONNECTOR.split(sentence))
    parts = [p.strip(" ,.;") for p in pieces if p and len(p.split()) >= MIN_PART_WORDS]
    return tuple(parts[:MAX_PARTS]) if len(parts) > 1 else ()


def query_text(task: str, context: str | None = None, spelled_out: Callable[[str], str] = str) -> QueryText:
    """``spelled_out``: the task as the embedder reads it (RankingIndex.with_meanings: its short forms spelled out
    as the catalog says them); its parts are embedded as written."""
    task = task.strip()
    context = (context or "").strip()
    looks_like_a_name = "." in task and not any(ch.isspace() for ch in task)
    lexical = f"{task}\n{context}" if context and not looks_like_a_name else task
    return QueryText(lexical=lexical, semantic=spelled_out(task), parts=task_parts(task))


def embed_query(embedder: Embedder, query: QueryText) -> FloatArray:
    """The query's unit vectors, one row each: the whole task first, then each of its parts."""
    rows = [embedder.embed(query.semantic)] + [embedder.embed(part) for part in query.parts]
    return np.stack(rows).astype(np.float32)
