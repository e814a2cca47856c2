"""Why select suggested a tool, or none (PRODUCT.md §2 "Why"): for people checking a catalog, not for agents.

Read after the ranking, only when a request asks, from the query and the few tools it chose: each word's share of a
tool's BM25 score from the index's postings (bm25.BM25Index.term_scores), the cosine the ranking itself used, and
what usage did as the ranking reports it (retriever.UsageMove). The ranking never knows whether it is explained, so
a select that does not ask pays nothing (docs/performance.md "Explain"). Pure: arrays and strings in, values out.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from handler.ranking.confidence import SHIPPED, Calibration
from handler.ranking.query import query_text
from handler.ranking.retriever import Hit, RankingIndex, Recommendation, UsageMove

# A request's words as written: "GitHub.CreateIssue" is GitHub and CreateIssue, "octo/billing" octo and billing,
# "#ops" ops; an acronym keeps its letters together ("PRs": its catalog words, pull request).
_WORD = re.compile(r"[^\s._/:#@\-\"'“”‘’`,;!?()\[\]{}<>]+")


@dataclass(frozen=True)
class WordWeight:
    word: str  # as the request writes it
    weight: float  # its share of the tool's BM25 score: its terms' idf-weighted matches (halved inside a value)


@dataclass(frozen=True)
class Why:
    words: tuple[WordWeight, ...]  # the request's words the tool's name or first line holds, heaviest first
    similarity: float | None  # the tool's cosine with the task (its best with the task or one of its parts)
    named: bool  # the task is the tool's name: ranked first, never refused
    usage: UsageMove | None = None  # what the tenant's past use did to it; None: nothing
    step: str | None = None  # the part of a compound task it serves (select fills it); None: a one-step task
    app_named: str | None = None  # its app, where the task (or its step) names it: put ahead of other apps' tools


@dataclass(frozen=True)
class NoMatchWhy:
    """What an empty answer compared: the best cosine of any allowed tool against the refusal threshold; and where
    tools fit but a score floor dropped them all, the best score against that floor."""

    best_cosine: float | None
    refusal_below: float | None
    best_score: float | None = None
    min_score: float | None = None


def explain_hits(
    ranking: RankingIndex,
    task: str,
    context: str | None,
    hits: Sequence[Hit],
    usage: Mapping[int, UsageMove],
    step: str | None = None,
) -> tuple[Why, ...]:
    """Why each of ``hits`` (ranked for ``task`` and ``context``) was suggested; ``usage``: the ranking's report
    (Recommendation.usage) of the tools usage moved."""
    query = query_text(task, context).lexical  # what BM25 and the exact-name check read
    weights = ranking.lexical_query(query).weights
    named = ranking.exact_match(query)
    shares = [ranking.bm25.term_scores(weights, hit.index) for hit in hits]
    spoken = _words_of(ranking, query, {term for held in shares for term in held})
    apps = ranking.named_apps
    # What the named-app stage read (RankingIndex.recommend, recommend._step_answer): a step's words, or a one-step
    # task's without a context (with one, the ranking's order stands: RankingIndex.recommend's action_stage).
    said = apps.named((step or task).split("\n", 1)[0]) if step or not context else frozenset()
    whys = []
    for hit, held in zip(hits, shares, strict=True):
        words: dict[str, float] = {}
        for term, share in held.items():
            word = spoken.get(term, term)
            words[word] = words.get(word, 0.0) + share
        ordered = tuple(WordWeight(w, s) for w, s in sorted(words.items(), key=lambda item: -item[1]))
        app = ranking.names[hit.index].split(".", 1)[0] if apps.app_of_tool[hit.index] in said else None
        whys.append(Why(ordered, hit.semantic, hit.index == named, usage.get(hit.index), step, app))
    return tuple(whys)


def explain_empty(
    recommendation: Recommendation, min_score: float | None = None, calibration: Calibration = SHIPPED
) -> NoMatchWhy:
    """Why a task got no suggestion: refused (no hits), or every hit below ``min_score``."""
    best = recommendation.best_cosine
    if not recommendation.hits or min_score is None:
        return NoMatchWhy(best, calibration.no_match)
    return NoMatchWhy(best, calibration.no_match, recommendation.hits[0].probability, min_score)


def _words_of(ranking: RankingIndex, query: str, terms: Collection[str]) -> dict[str, str]:
    """The request's word each term comes from, as written: one word analyzed alone gives the terms it stands for
    (its stem, the catalog words of an abbreviation, a joined name or an acronym: lexical.py)."""
    found: dict[str, str] = {}
    for word in _WORD.findall(query):
        if len(found) == len(terms):
            break
        for term in ranking.lexical_query(word).weights:
            if term in terms:
                found.setdefault(term, word)
    return found
