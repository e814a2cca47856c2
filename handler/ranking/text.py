"""The one definition of the text that toolrec indexes and the tokens BM25 sees.

The build step and the query path both import these functions, so the text fed to the models
at build time and at query time cannot drift apart (a golden test pins the exact output).
"""

from __future__ import annotations

import re
import unicodedata

# Name parts: "Slack.SendMessage", "get_user_token", "api/v1:listItems" -> words.
_NAME_SEPARATORS = re.compile(r"[._\-/:\s]+")
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORD = re.compile(r"[a-z0-9]+|[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_MAX_FIRST_LINE_CHARS = 500


def split_identifier(identifier: str) -> list[str]:
    """Split a tool or app name into its words, keeping their case: "Slack.SendMessage" -> [Slack, Send, Message]."""
    words: list[str] = []
    for part in _NAME_SEPARATORS.split(identifier):
        words.extend(w for w in _CAMEL_BOUNDARY.split(part) if w)
    return words


def first_line(description: str) -> str:
    """The first non-empty line of a description: the only part of it that matching reads (PRODUCT.md §1)."""
    for line in description.splitlines():
        stripped = " ".join(line.split())
        if stripped:
            return stripped[:_MAX_FIRST_LINE_CHARS]
    return ""


def index_text(name: str, description: str) -> str:
    """The text embedded and tokenized for a tool: its name as words, then the first line of its description."""
    name_words = " ".join(split_identifier(name))
    line = first_line(description)
    return f"{name_words}: {line}" if line else name_words


def normalize(text: str) -> str:
    """Unicode-normalize and strip control characters, so odd input never reaches a model or a tokenizer raw."""
    folded = unicodedata.normalize("NFKC", text)
    if folded.isprintable():  # nearly every text: no character to look at one by one
        return folded
    return "".join(ch if ch.isprintable() else " " for ch in folded)


def words(text: str) -> list[str]:
    """Lowercased word tokens with CamelCase split: the unit of lexical matching."""
    spaced = _CAMEL_BOUNDARY.sub(" ", normalize(text))
    return _WORD.findall(spaced.lower())
