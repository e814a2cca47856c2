"""Lexical analysis for BM25: word tokens, stopwords and light stemming.

A tool catalog is written in imperative, terse English ("Send a message to a channel"); queries are
chatty ("could you please send..."). Dropping chat words and folding inflections lets the two meet.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from handler.ranking.text import words

# Function words and request chatter. Verbs that name actions (send, create, list) are kept on purpose:
# they carry most of the meaning of a tool name.
STOPWORDS = frozenset(
    """
    a an the and or but if then else of to in on at by for with from into onto about as is are was were
    be been being am do does did doing have has had having i me my we our you your he she it its they
    them their this that these those there here what which who whom whose when where why how can could
    would should will shall may might must please want wants like need needs help let lets just also
    some any all each every so such than too very not no nor only own same other s t don now get gets
    tell show find give me us one
    """.split()
)
# The most characters stem() takes off a word ("xxxxeeings" -> "xxxx"): a term is never shorter than its word by more.
MAX_STEM_STRIP = 6


def stem(word: str) -> str:
    """A light, conservative suffix stripper (plural, -ing, -ed, final e): keeps short words intact.

    Porter-style stemming over-merges in tool language ("organization" vs "organize"); this only folds
    the inflections that separate a query from a catalog line ("sends"/"sending"/"sent" aside).
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]
            break
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


@dataclass(frozen=True)
class Analyzer:
    """Turns text into BM25 terms. Its parameters are recorded in the index manifest."""

    stopwords: frozenset[str] = STOPWORDS
    stemming: bool = True

    def __call__(self, text: str) -> list[str]:
        terms = [w for w in words(text) if w not in self.stopwords]
        return [stem(w) for w in terms] if self.stemming else terms


DEFAULT_ANALYZER: Callable[[str], list[str]] = Analyzer()
