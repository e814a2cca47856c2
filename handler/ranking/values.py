"""The concrete values agents put in a task: ids, keys, emails, channels, paths, quoted text, amounts, dates.

"merge PR 12 in octo/billing": ``12`` and ``octo/billing`` say what to act on, not which tool acts. Their shape is
evidence the dense model reads (it was trained with values swapped for others of the same kind), but the words
inside a value must not pull the lexical ranking: the repository ``octo/billing`` is not a billing request
(PRODUCT.md §5: a value in the task never decides which tool comes first). So the lexical query splits a task into
its words and its values' words, and BM25 weighs the latter little (retriever.VALUE_TERM_WEIGHT).
"""

from __future__ import annotations

import re

_MONTHS = "jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec"
_DAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday|mon|tue|tues|wed|thu|thur|thurs|fri|sat|sun"
# An email, a slug and a value with a digit start only where a run of their characters starts (a lookbehind): tried
# at every position of a long run, each scanned the rest of it ("a-a-a-..." of 4,000 characters: 0.3 s a task, issue
# 33). Tasks read the same but where two values touch with no space between.
_VALUE = re.compile(
    "|".join(
        (
            r"https?://\S+",  # a URL
            r"(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+",  # an email
            r"\"[^\"\n]{1,200}\"|“[^”\n]{1,200}”|(?<!\w)'[^'\n]{1,200}'(?!\w)",  # quoted text
            r"(?<![\w/])[#@][\w.-]+",  # a channel, a mention
            r"(?<!\S)[~.]{0,2}/[\w.@/-]+",  # a path
            r"(?<![\w.-])[.-]*\b[\w.-]+/[\w.-]+(?:/[\w.-]+)*",  # a slug: owner/repo, a relative path
            r"[$€£¥]\s?\d[\d,.]*\w*",  # an amount
            r"(?<![\w-])-*\b[\w-]*\d[\w-]*\b",  # anything with a digit: ids, keys, numbers, times, ISO dates
            rf"\b(?:(?:next|last|this)\s+)?(?:{_DAYS}|week|month|year|quarter)\b",
            rf"\b(?:{_MONTHS})[a-z]*\b(?=\s+\d)",  # "Jan 5", "March 2024"
            r"\b(?:today|tonight|tomorrow|yesterday)\b",
        )
    ),
    re.IGNORECASE,
)


def split_values(text: str) -> tuple[str, str]:
    """(the text without its values, the values' text): every character lands in exactly one of the two."""
    plain, values, last = [], [], 0
    for match in _VALUE.finditer(text):
        plain.append(text[last : match.start()])
        values.append(match.group())
        last = match.end()
    plain.append(text[last:])
    return " ".join(plain), " ".join(values)
