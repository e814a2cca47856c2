"""A task as BM25 reads it: its terms, each with a weight.

The words of the task count fully; the words inside its values (values.py) little, since an id or a repository
name says what to act on, not which tool acts. A word the catalog lacks is met with the catalog's words
(catalog_words.py: joined brands, capital acronyms of tool names, prefixes), and an abbreviation with the
catalog's words for what it stands for (abbreviations.py). Measured: docs/quality.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from handler.ranking.abbreviations import Abbreviations
from handler.ranking.analyzer import STOPWORDS
from handler.ranking.catalog_words import CatalogWords
from handler.ranking.values import split_values
from handler.ranking.verbs import action_terms, general_verbs

VALUE_TERM_WEIGHT = 0.5  # chosen leave-one-set-out (docs/quality.md "How we got here")
ACTION_TERM_WEIGHT = 0.5  # the catalog's verb for the task's own (verbs.py); chosen leave-one-set-out
MIN_SHORT_FORM_CHARS = 2
# A short form as typed ("o365", "k8s", "1:1", "r&d"); an apostrophe stays inside, so "I'm" is never "m".
_TOKEN = re.compile(r"[a-z0-9](?:[a-z0-9:&+']*[a-z0-9])?")


@dataclass(frozen=True)
class LexicalQuery:
    weights: Mapping[str, float]  # analyzed term -> weight; the task's own words first

    @property
    def terms(self) -> list[str]:
        """The terms of the task's own words (values and expansions aside: what "half of its words" counts)."""
        return [term for term, weight in self.weights.items() if weight >= 1.0]


@dataclass(frozen=True)
class LexicalAnalysis:
    vocabulary: Collection[str]
    names: Sequence[str]
    analyzer: Callable[[str], list[str]]
    lexicon: Mapping[str, tuple[str, ...]]
    verbs: Mapping[str, tuple[str, ...]] = field(default_factory=general_verbs)  # verbs.py
    stopwords: Collection[str] = frozenset(STOPWORDS)
    _words: CatalogWords = field(init=False, repr=False, compare=False)
    _abbreviations: Abbreviations = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_words", CatalogWords(self.vocabulary, self.names, self.analyzer))
        object.__setattr__(self, "_abbreviations", Abbreviations(self.lexicon, self.vocabulary, self.analyzer))

    def query(self, text: str) -> LexicalQuery:
        plain, values = split_values(text)
        weights: dict[str, float] = {}
        for part, weight in ((plain, 1.0), (values, VALUE_TERM_WEIGHT)):
            for term in self._words.expand(self.analyzer(part), part):
                weights.setdefault(term, weight)
            for token in self._short_forms(part):  # an abbreviation counts fully, also one with digits
                for term in self._abbreviations.terms(token):
                    weights[term] = max(weights.get(term, 0.0), 1.0)
        for term in action_terms(plain, self.verbs, self.vocabulary, self.analyzer):
            weights.setdefault(term, ACTION_TERM_WEIGHT)
        return LexicalQuery(weights)

    def with_meanings(self, task: str) -> str:
        """The task with what its short forms mean in this catalog after it, for the embedder: "open a PR
        (pull request)". The model learned abbreviations from the agent tasks, but the spelled-out meaning, met
        with the catalog's words, is what a tool's first line says (docs/quality.md "How we got here")."""
        meanings = [m for token in self._short_forms(task) for m in self._abbreviations.meanings(token)]
        return f"{task} ({'; '.join(dict.fromkeys(meanings))})" if meanings else task

    def _short_forms(self, text: str) -> list[str]:
        # "a", "x", "us", "am": words before they are short forms
        tokens = _TOKEN.findall(text.lower())
        return [t for t in tokens if len(t) >= MIN_SHORT_FORM_CHARS and t not in self.stopwords]
