"""How a task (and the request's optional context) becomes the query the ranking core scores.

The one place query formation lives, so it can be measured and changed without touching the service.
Today: the embedding reads the task alone (context is often long and would blur the task's meaning in a
384-d mean-pooled vector), and the lexical side reads the task followed by the context, which can only
add matching words. A task that is a bare tool name ("Slack.SendMessage") gets no context, so
``RankingIndex.rank`` still recognizes the exact name in the lexical text.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class QueryText:
    lexical: str  # what BM25 (and the exact-name check) reads
    semantic: str  # what the embedder reads


def query_text(task: str, context: str | None = None) -> QueryText:
    task = task.strip()
    context = (context or "").strip()
    looks_like_a_name = "." in task and not any(ch.isspace() for ch in task)
    lexical = f"{task}\n{context}" if context and not looks_like_a_name else task
    return QueryText(lexical=lexical, semantic=task)
