"""Ranking tools for one query over an index held in memory. Pure: arrays in, ranked indices out."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum

import numpy as np
import numpy.typing as npt

from handler.catalog.names import ToolNames
from handler.ranking.arrays import BoolArray, FloatArray, IndexArray, IntArray
from handler.ranking.bm25 import BM25Index
from handler.ranking.coarse import CoarseSemantic
from handler.ranking.confidence import CROWD_COSINE, SHIPPED, Calibration, Signals, features, with_raised_cosines
from handler.ranking.dense import DenseScorer
from handler.ranking.fusion import Votes, evidence_weight, shortlist_fusion, top_votes
from handler.ranking.lexical import LexicalAnalysis, LexicalQuery
from handler.ranking.named_apps import NAMED_DEPTH, NamedApps, named_first
from handler.ranking.siblings import CANDIDATES, SHIPPED_HEAD, Schemas, SiblingHead, sibling_order
from handler.ranking.steps import COMMON_VERBS, catalog_verbs
from handler.ranking.topk import top_k
from handler.ranking.usage import (
    COMPANION_CANDIDATES,
    UsageEvidence,
    classifier_votes,
    companion_votes,
    with_past_tasks,
)


class Method(StrEnum):
    HYBRID = "hybrid"
    BM25 = "bm25"
    DENSE = "dense"


@dataclass(frozen=True)
class Hit:
    index: int
    score: float
    semantic: float | None = None  # the tool's cosine with the query, when the query was embedded
    probability: float | None = None  # calibrated: that it is a right tool for the query (confidence.py)


@dataclass(frozen=True)
class UsageMove:
    """What the tenant's usage (usage.py) did to one chosen tool, each 0 where it did nothing."""

    past_tasks: float  # how far its past tasks raised its cosine with the task (with_past_tasks)
    classifier: float  # the classifier's vote added to its ranking score (classifier_votes)
    companions: float  # the votes added for being run beside the best tools (companion_votes)


@dataclass(frozen=True)
class Recommendation:
    hits: tuple[Hit, ...]  # best first; empty when nothing allowed matches (the calibrated no match)
    best_cosine: float | None  # the best cosine of any allowed tool; None when the query was not embedded
    # A compound task's answer (recommend.recommend_task): the step each hit serves, one per hit; else empty.
    steps: tuple[str, ...] = ()
    usage: Mapping[int, UsageMove] = field(default_factory=dict)  # the chosen tools usage moved, by index

    @property
    def no_match(self) -> bool:
        return not self.hits


@dataclass(frozen=True)
class Ranked:
    chosen: list[int]  # the k best allowed tools, best first
    scores: FloatArray  # the ranking's score of each chosen tool
    cosines: FloatArray | None  # None when the query was not embedded (BM25 alone)
    best: float | None  # the best cosine of any allowed tool
    named: bool  # the task names an allowed tool, or one holds half its words: never refused
    evidence: npt.NDArray[np.float64] | None  # one row of confidence.FEATURES per chosen tool
    usage: Mapping[int, UsageMove] = field(default_factory=dict)  # the chosen tools usage moved, by index


@dataclass(frozen=True)
class RankingIndex:
    names: Sequence[str]
    bm25: BM25Index
    dense: DenseScorer
    analyzer: Callable[[str], list[str]]
    usage: UsageEvidence | None = None  # what the tenant's agents ran before (ranking/usage.py); None: text alone
    lexicon: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # abbreviations (ranking/abbreviations.py)
    coarse: CoarseSemantic | None = None  # a large build's two-stage dense scan (coarse.py); None: ``dense``
    schemas: Schemas | None = None  # each tool's input schema, whose parameter names tell siblings apart (siblings.py)
    siblings: SiblingHead | None = SHIPPED_HEAD  # the action among siblings (siblings.py); None: the ranking's order
    _resolver: ToolNames = field(init=False, repr=False, compare=False)
    _step_verbs: frozenset[str] | None = field(init=False, default=None, repr=False, compare=False)
    _named_apps: NamedApps | None = field(init=False, default=None, repr=False, compare=False)
    _lexical: LexicalAnalysis = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # The one resolver of a spelling (handler/catalog/names.py): the build's own when it is given one.
        resolver = self.names if isinstance(self.names, ToolNames) else ToolNames(self.names)
        object.__setattr__(self, "_resolver", resolver)
        lexical = LexicalAnalysis(self.bm25.vocabulary, self.names, self.analyzer, self.lexicon)
        object.__setattr__(self, "_lexical", lexical)

    def __len__(self) -> int:
        return len(self.names)

    @property
    def step_verbs(self) -> frozenset[str]:
        """The actions that start a step of a compound task here (steps.py): common verbs and the catalog's own."""
        verbs = self._step_verbs
        if verbs is None:  # once per index, on the first comma or "and" a task holds
            verbs = COMMON_VERBS | catalog_verbs(self.names)
            object.__setattr__(self, "_step_verbs", verbs)
        return verbs

    @property
    def named_apps(self) -> NamedApps:
        """The apps a task can name here (named_apps.py), read once per index on its first select."""
        apps = self._named_apps
        if apps is None:
            apps = NamedApps.of(self.names, self._holding)
            object.__setattr__(self, "_named_apps", apps)
        return apps

    def _holding(self, words: tuple[str, ...]) -> int:
        """How many tools' words (their name and first line) hold every one of ``words``."""
        terms = {term for word in words for term in self.analyzer(word)}
        return int(np.count_nonzero(self.bm25.terms_held(terms) >= len(terms))) if terms else 0

    def exact_match(self, query: str) -> int | None:
        return self._resolver.position(query)

    def rank(
        self,
        query: str,
        query_vector: FloatArray | None,
        k: int,
        allowed: BoolArray | None = None,
        method: Method = Method.HYBRID,
    ) -> list[Hit]:
        """The k best allowed tools for a query, best first; a disallowed tool never takes a slot.

        ``query_vector`` is the unit-length embedding of the query, or one row per part of it
        (query.embed_query); unused by BM25 alone, which returns only tools sharing a term with the query.
        A query equal to an allowed tool's name ranks it first.
        """
        return list(self.recommend(query, query_vector, k, allowed, method, calibration=None).hits)

    def recommend(
        self,
        query: str,
        query_vector: FloatArray | None,
        k: int,
        allowed: BoolArray | None = None,
        method: Method = Method.HYBRID,
        calibration: Calibration | None = SHIPPED,
        action_stage: bool = True,
        named_stage: bool = True,
    ) -> Recommendation:
        """``rank``, each hit with its calibrated probability (confidence.py), and the no match decided on the best
        cosine of every allowed tool: a property of the query and the allowed tools, never of k (PRODUCT.md §2).
        With ``calibration`` None, no probability and no refusal; with ``action_stage`` False, neither second stage;
        with ``named_stage`` False, the apps the task names move nothing (a step of a compound task: recommend.py)."""
        staged = action_stage and method is Method.HYBRID and calibration is not None
        # The apps the task (the query's first line) names, read once for the depth and the stage.
        named = self.named_apps.named(query.split("\n", 1)[0]) if staged and named_stage else frozenset()
        depth = max(k, NAMED_DEPTH if named else CANDIDATES) if staged else k
        found = self.ranked(query, query_vector, depth, allowed, method)
        scored = score_rows(found)  # by place, as ranked: a place keeps its evidence through the second stages
        if staged:
            found = self._staged(query, found, k, named)
        scores, cosines = found.scores, found.cosines
        if cosines is None or scored is None or calibration is None:
            plain = zip(found.chosen, scores.tolist(), strict=True)
            hits = (Hit(i, s, None if cosines is None else float(cosines[i])) for i, s in plain)
            return Recommendation(tuple(hits), found.best, usage=found.usage)
        if found.best is not None and calibration.refuses(found.best) and not found.named:  # a named tool: never
            return Recommendation((), found.best)
        # Each place keeps the probability the ranking's order gives it (the sibling stage reorders only the tools).
        probability = calibration.probabilities(scored[: len(found.chosen)]).tolist()
        rows = zip(found.chosen, scores.tolist(), probability, strict=True)
        return Recommendation(tuple(Hit(i, s, float(cosines[i]), p) for i, s, p in rows), found.best, usage=found.usage)

    def _staged(self, query: str, found: Ranked, k: int, named: frozenset[str]) -> Ranked:
        """The k best after the second stages: the tools of the apps the task names first (named_apps.py), then the
        first tool's siblings reordered by the action the task asks (siblings.py). Each place keeps its evidence
        row and its ranking score, so the scores read of it are the place's and never rise down the list. A task
        naming a tool: as ranked."""
        chosen, evidence = found.chosen, found.evidence
        if evidence is None or len(chosen) < 2 or self.exact_match(query) is not None:
            return replace(found, chosen=chosen[:k], scores=found.scores[:k], evidence=_first(evidence, k))
        order = named_first(self.named_apps, named, chosen)
        if self.siblings is not None:
            ordered = [chosen[p] for p in order]  # the head reads each tool's own evidence row
            moved = sibling_order(self.siblings, query, self.names, self.schemas, ordered, evidence[order])
            order = [order[p] for p in moved]
        kept = order[:k]
        return replace(found, chosen=[chosen[p] for p in kept], scores=found.scores[:k], evidence=evidence[:k])

    def ranked(
        self,
        query: str,
        query_vector: FloatArray | None,
        k: int,
        allowed: BoolArray | None = None,
        method: Method = Method.HYBRID,
    ) -> Ranked:
        """The k best allowed tools with what the score reads of them (confidence.py), before any refusal.

        The hybrid ranking touches the whole catalog only where it must (the dense scan, the mean and spread of each
        signal, one comparison against a sampled threshold): everything else reads the few tools a signal votes for
        (fusion.shortlist_fusion), so a select stays fast at a million tools (issue #27)."""
        if allowed is None:
            allowed = np.ones(len(self), dtype=bool)
        lexical = self.lexical_query(query)  # analyzed once, read twice
        words = self.bm25.score_weighted(lexical.weights)
        held = self.bm25.terms_held(lexical.terms)
        exact = self.exact_match(query)
        if exact is not None and not allowed[exact]:
            exact = None
        if method is Method.BM25:
            usable = allowed & (words > 0)
            return self._top(words, np.flatnonzero(usable), k, exact, None)
        if query_vector is None:
            raise ValueError(f"the {method} method needs a query vector")
        matched = np.flatnonzero(words > 0)  # BM25 never scores below 0; a bool array is read 2x faster at 1M
        eligible = matched[allowed[matched]]  # allowed tools sharing a word with the task, ascending
        allowed_count = int(np.count_nonzero(allowed))
        terms = len(lexical.terms)
        lexical_votes = top_votes(words[eligible])
        every = allowed_count == len(allowed)
        cosines = self._semantic(query_vector, eligible[lexical_votes.voters], None if every else allowed, exact)
        text_votes = top_votes(cosines if every else np.where(allowed, cosines, -np.inf))
        if method is Method.DENSE:
            found = self._top(cosines, np.flatnonzero(allowed), k, exact, cosines)
        else:
            votes = (lexical_votes, text_votes)
            found = self._fused(
                words, eligible, held, terms, cosines, query_vector, allowed, allowed_count, k, exact, votes
            )
        chosen = found.chosen
        if not chosen:
            best = None if not allowed_count else float(text_votes.pool_scores.max())
            return replace(found, best=best)
        best = float(text_votes.pool_scores.max())
        # A task half of whose words one allowed tool holds is in the catalog's own words ("find the open PRs
        # assigned to me"): a match even where the model's cosine is low for it. One shared word is not.
        named = exact is not None or (bool(terms) and int(held[eligible].max(initial=0)) * 2 >= terms)
        parts = 0 if query_vector.ndim == 1 else len(query_vector) - 1
        lexical_values = words[eligible]
        signals = Signals(
            cosine=cosines[chosen],
            best_cosine=best,
            words_held=(held[chosen] / max(terms, 1)).astype(np.float32),
            lexical_place=np.array(
                [(lexical_values > words[i]).sum() if words[i] > 0 else -1 for i in chosen], dtype=np.float64
            ),
            semantic_place=np.array([_above(cosines, allowed, text_votes, cosines[i]) for i in chosen], np.float64),
            fused=found.scores,
            crowding=_at_or_above(cosines, allowed, text_votes, np.float32(best - CROWD_COSINE)),
            query_words=terms,
            query_parts=parts,
            allowed_tools=allowed_count,
        )
        return replace(found, best=best, named=named, evidence=features(signals))

    def _fused(
        self,
        words: FloatArray,
        eligible: IndexArray,
        held: IntArray,
        terms: int,
        cosines: FloatArray,
        query_vector: FloatArray,
        allowed: BoolArray,
        allowed_count: int,
        k: int,
        exact: int | None,
        votes: tuple[Votes, Votes],
    ) -> Ranked:
        """The hybrid ranking's k best: the two signals fused, with what the tenant's agents ran before. The no match
        and each hit's cosine stay the text's: usage reorders what the text finds, never more. ``votes``: the lexical
        and the text's semantic signal's (fusion.top_votes), found once per query."""
        lexical_weight = evidence_weight(words[eligible], held[eligible], terms)
        if self.usage is None:
            moments = self._semantic_moments(query_vector, allowed_count)
            short = shortlist_fusion(
                words,
                eligible,
                cosines,
                allowed,
                allowed_count,
                lexical_weight,
                k,
                votes=votes,
                semantic_moments=moments,
            )
            return self._top_of(short.ids, short.scores, k, exact, cosines)
        task_vector = query_vector if query_vector.ndim == 1 else query_vector[0]
        past = self.usage.past_task_cosines(task_vector, len(cosines))
        lifted = with_past_tasks(cosines, self.usage, task_vector, past)
        picked = classifier_votes(self.usage, task_vector, past, allowed)
        wanted = max(k, COMPANION_CANDIDATES)
        also = np.flatnonzero(picked)
        short = shortlist_fusion(
            words, eligible, lifted, allowed, allowed_count, lexical_weight, wanted, also, votes=(votes[0], None)
        )
        scores = short.scores + picked[short.ids]
        boost = companion_votes(self.usage, short.ids, scores, len(self))
        found = self._top_of(short.ids, (scores + boost).astype(np.float32), k, exact, cosines)
        return replace(found, usage=_moved(found.chosen, short.ids, cosines, lifted, picked, boost))

    def _top(
        self, scores: FloatArray, usable: IndexArray, k: int, exact: int | None, cosines: FloatArray | None
    ) -> Ranked:
        return self._top_of(usable, scores[usable], k, exact, cosines)

    @staticmethod
    def _top_of(ids: IndexArray, scores: FloatArray, k: int, exact: int | None, cosines: FloatArray | None) -> Ranked:
        """The k best of some usable tools (``ids`` ascending, with their ``scores``), the named tool first."""
        scores = scores.astype(np.float32)
        if exact is not None:
            lifted = np.float32(scores.max(initial=0.0) + 1.0)
            at = int(np.searchsorted(ids, exact))
            if at < len(ids) and ids[at] == exact:
                scores[at] = lifted
            else:
                ids, scores = np.insert(ids, at, exact), np.insert(scores, at, lifted)
        order = top_k(scores, k)
        return Ranked([int(i) for i in ids[order]], scores[order], cosines, None, exact is not None, None)

    def lexical_query(self, query: str) -> LexicalQuery:
        return self._lexical.query(query)

    def with_meanings(self, task: str) -> str:
        """The task as the embedder reads it here: with what its short forms mean in this catalog (lexical.py)."""
        return self._lexical.with_meanings(task)

    def _semantic_moments(self, query_vector: FloatArray, allowed_count: int) -> tuple[float, float] | None:
        """The semantic signal's mean and spread in closed form, where a large build's estimates would otherwise
        enter them (coarse.py): a task of one row (a task's best over its parts has no closed form) with every tool
        allowed (the build's moments are the whole catalog's). None: the fusion reads them from the scores."""
        rows = np.atleast_2d(query_vector)
        if self.coarse is None or len(rows) != 1 or allowed_count != len(self):
            return None
        return self.coarse.moments(rows[0])

    def _semantic(
        self, query_vector: FloatArray, voters: IndexArray, allowed: BoolArray | None, exact: int | None
    ) -> FloatArray:
        """Cosines with the query; with several rows (a task and its parts, query.embed_query) a tool's best.
        ``allowed``: None when every tool is.
        A large build's coarse scan scores exactly the tools that can take a vote: its own candidates, the lexical
        signal's ``voters`` and the tool the task names."""
        rows = [query_vector] if query_vector.ndim == 1 else list(query_vector)
        coarse = self.coarse
        if coarse is None:
            cosines = [self.dense.score(row) for row in rows]
        else:
            named = voters if exact is None else np.union1d(voters, [exact])
            cosines = [coarse.score(row, allowed, named) for row in rows]
        best = cosines[0]
        for other in cosines[1:]:
            best = np.maximum(best, other)
        return best


def score_rows(found: Ranked) -> npt.NDArray[np.float64] | None:
    """What the score reads of the chosen tools (confidence.FEATURES, best first): their evidence, each cosine raised
    by what the tool's past tasks added on a warm index, as the semantic signal ranked it (issue 36 item 3: read from
    the text alone, warm first answers were shown 0.1-0.2 less likely than they are right). The second stages and
    the no match read the text's cosine."""
    if found.evidence is None or not found.usage:
        return found.evidence
    lift = np.array([found.usage[t].past_tasks if t in found.usage else 0.0 for t in found.chosen])
    return with_raised_cosines(found.evidence, lift)


def _first(evidence: npt.NDArray[np.float64] | None, k: int) -> npt.NDArray[np.float64] | None:
    return None if evidence is None else evidence[:k]


def _moved(
    chosen: list[int], ids: IndexArray, cosines: FloatArray, lifted: FloatArray, picked: FloatArray, boost: FloatArray
) -> dict[int, UsageMove]:
    """What usage did to each chosen tool (``boost``: the companions' votes of the shortlist ``ids``, ascending), kept
    for the tools it moved: read by an explanation (explain.py), a few floats per select otherwise."""
    moved = {}
    for tool in chosen:
        at = int(np.searchsorted(ids, tool))
        companions = float(boost[at]) if at < len(ids) and ids[at] == tool else 0.0
        move = UsageMove(max(float(lifted[tool] - cosines[tool]), 0.0), float(picked[tool]), companions)
        if move.past_tasks or move.classifier or move.companions:
            moved[tool] = move
    return moved


def _above(cosines: FloatArray, allowed: BoolArray, votes: Votes, cosine: np.float32) -> int:
    """How many allowed tools have a higher cosine: read from the signal's pool when the cosine is in it."""
    pool = votes.pool_scores
    if len(pool) and cosine >= pool.min():
        return int((pool > cosine).sum())
    return int(np.count_nonzero(allowed & (cosines > cosine)))


def _at_or_above(cosines: FloatArray, allowed: BoolArray, votes: Votes, floor: np.float32) -> int:
    pool = votes.pool_scores
    if len(pool) and floor >= pool.min():
        return int((pool >= floor).sum())
    return int(np.count_nonzero(allowed & (cosines >= floor)))
