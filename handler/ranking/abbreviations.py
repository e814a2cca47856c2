"""Abbreviations agents and their users type ("open a PR", "DM jake", "the k8s cluster", "my gdoc"), met with the
catalog's own words.

A general lexicon (abbreviations.json: 749 software and business short forms, acronyms and joined brand nicknames,
written from usage, not from any catalog; build_index/quality/agent_tasks/README.md says who wrote it) lists what
each short form may stand for. A meaning counts only where the catalog holds every one of its words, so "pr" is a
pull request on a code host's catalog and a press release on a PR agency's, and a short form whose meanings the
catalog does not hold adds nothing. The model is trained on tasks written with abbreviations too.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

LEXICON = Path(__file__).with_name("abbreviations.json")


@cache
def general_lexicon() -> Mapping[str, tuple[str, ...]]:
    """The shipped lexicon: short form (lowercase) -> what it may stand for."""
    raw = json.loads(LEXICON.read_text(encoding="utf-8"))
    return {str(short): tuple(str(m) for m in meanings) for short, meanings in raw.items()}


@dataclass(frozen=True)
class Abbreviations:
    lexicon: Mapping[str, tuple[str, ...]]
    vocabulary: Collection[str]  # the catalog's BM25 terms, analyzed
    analyze: Callable[[str], list[str]]
    _met: dict[str, tuple[str, ...]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def meanings(self, word: str) -> tuple[str, ...]:
        """Every meaning of ``word`` (a raw lowercase token) whose words the catalog holds, as the lexicon writes it."""
        word = word.lower()
        if word not in self.lexicon and word.endswith("s") and word[:-1] in self.lexicon:
            word = word[:-1]  # "PRs", "DMs"
        if word not in self.lexicon:
            return ()
        if word not in self._met:  # looked up once per lexicon entry and index: the cache is bounded by the lexicon
            self._met[word] = tuple(
                meaning
                for meaning in self.lexicon[word]
                if (terms := self.analyze(meaning)) and all(term in self.vocabulary for term in terms)
            )
        return self._met[word]

    def terms(self, word: str) -> tuple[str, ...]:
        """The analyzed words of those meanings."""
        return tuple(dict.fromkeys(term for meaning in self.meanings(word) for term in self.analyze(meaning)))

    def __contains__(self, word: str) -> bool:
        return bool(self.meanings(word))
