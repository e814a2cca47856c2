"""Words agents type, met with the catalog's own words (PRODUCT.md §1), learned from the catalog alone.

A query term the catalog's BM25 vocabulary does not hold may still name something the catalog does:
- a joined brand or name, "github" or "googledrive", where the catalog writes ``GitHub`` (indexed as git + hub);
- an acronym written in capitals, "PR"/"PRs" or "DM", of adjacent words of a tool name (``ListPullRequests``);
- an abbreviation that starts one to three catalog words, "repo" for "repository".
Such a term is expanded to those catalog words; a term the vocabulary holds is never touched, so a catalog
that uses the short form keeps its meaning. Built for the words agents type, which the benchmark sets barely
contain; measured: docs/quality.md.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import cached_property

from handler.ranking.analyzer import MAX_STEM_STRIP
from handler.ranking.text import split_identifier

_CAPITALS = re.compile(r"\b([A-Z]{2,5})s?\b")
_NAME_PARTS = re.compile(r"[._\-/:\s]+")
MIN_JOINED_CHARS = 5  # "github"; shorter terms split into two catalog words too easily
MIN_PART_CHARS = 2
MAX_PART_CHARS = 40  # longer than any word or brand: a longer "part" of an unknown term is noise, never tried
MIN_PREFIX_CHARS = 4  # "repo"; three letters start too many words
MAX_PREFIX_WORDS = 3
MAX_ACRONYM_WORDS = 3


@dataclass(frozen=True)
class CatalogWords:
    vocabulary: Collection[str]  # the BM25 terms, analyzed
    names: Sequence[str]  # tool names, for their acronyms
    analyze: Callable[[str], list[str]]

    def expand(self, terms: list[str], query: str) -> list[str]:
        """``terms`` (the analyzed query) plus the catalog words its unknown terms stand for. Each distinct acronym
        and term is met once: a context repeating one ("PR PR PR ...") costs as much as saying it once."""
        acronyms = dict.fromkeys(_CAPITALS.findall(query))
        extra = [word for acronym in acronyms for word in self._acronym(acronym.lower())]
        for term in dict.fromkeys(terms):
            if term not in self.vocabulary and term.isalpha():
                extra += self._joined(term) or self._prefixed(term)
        return terms + extra

    def _joined(self, term: str) -> list[str]:
        """Only cuts whose halves could each analyze to a catalog word are tried: analyzing every cut of a long
        unknown word cost the square of its length (a 4,000-letter context took 2 s per task, issue 33)."""
        longest = self._longest_part
        if len(term) < MIN_JOINED_CHARS or len(term) > 2 * longest:
            return []
        for cut in range(max(MIN_PART_CHARS, len(term) - longest), min(longest, len(term) - MIN_PART_CHARS) + 1):
            head, tail = self.analyze(term[:cut]), self.analyze(term[cut:])
            if head and tail and all(t in self.vocabulary for t in head + tail):
                return head + tail
        return []

    def _acronym(self, acronym: str) -> list[str]:
        """The words of the one or two name-word runs a capital acronym ("PR", "PRs": analyzed p + rs) stands for."""
        if acronym in self.vocabulary:
            return []
        meanings = self.acronyms.get(acronym, set())
        return [word for words in sorted(meanings) for word in words] if len(meanings) <= 2 else []

    def _prefixed(self, term: str) -> list[str]:
        if len(term) < MIN_PREFIX_CHARS:
            return []
        words = self.sorted_vocabulary
        start = bisect.bisect_left(words, term)
        found = []
        for word in words[start : start + MAX_PREFIX_WORDS + 1]:
            if not word.startswith(term):
                break
            found.append(word)
        return found if len(found) <= MAX_PREFIX_WORDS else []

    @cached_property
    def _longest_part(self) -> int:
        """The longest word that analyzes to a catalog word: its longest term plus what a stem may take off."""
        longest = max((len(word) for word in self.vocabulary), default=0)
        return min(longest + MAX_STEM_STRIP, MAX_PART_CHARS)

    @cached_property
    def sorted_vocabulary(self) -> list[str]:
        return sorted(self.vocabulary)  # built on the first query that needs it, not at cold start

    @cached_property
    def acronyms(self) -> dict[str, set[tuple[str, ...]]]:
        """Acronym -> the analyzed words it abbreviates, from runs of 2-3 adjacent words of one name part. Each
        distinct part and word is analyzed once: a large catalog repeats them (a million bench tools hold ~180k
        distinct parts), and this table is built on the first query with a capital acronym."""
        found: dict[str, set[tuple[str, ...]]] = defaultdict(set)
        analyzed: dict[str, tuple[str, ...]] = {}
        segments: set[str] = set()
        for name in self.names:  # split at its dots first: a name's segments repeat across tools, its parts with them
            segments.update(name.split("."))
        for part in {part for segment in segments for part in _NAME_PARTS.split(segment)}:
            words = split_identifier(part)
            for start in range(len(words)):
                for end in range(start + 2, min(start + MAX_ACRONYM_WORDS, len(words)) + 1):
                    run = words[start:end]
                    if all(w.isalpha() for w in run):
                        for word in run:
                            if word not in analyzed:
                                analyzed[word] = tuple(self.analyze(word))
                        terms = tuple(t for w in run for t in analyzed[w])
                        if terms:
                            found["".join(w[0].lower() for w in run)].add(terms)
        return dict(found)
