"""The action a task asks for, met with the catalog's verb for it: "ping #ops" is a send, "grab the invoice" a get.

Where the first tool is wrong it is mostly the right app's sibling (issue 31), and adding the wanted action's verb
to a task was measured to lift top-1 by some 15 points: agents say "tell", "ping", "post", "grab", "nuke", catalogs
say "send", "get", "delete". A general lexicon (verbs.json: the verbs people type for an action -> the verbs tool
names use for it, written from usage, not from any catalog) adds the catalog's verb to the task's words, at a
fraction of a word's weight and only where the catalog holds it. Only the task's leading verb is read: "top posts in
r/devops" holds the noun "post", not the action. Measured: docs/quality.md "The action among siblings".
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Mapping
from functools import cache
from pathlib import Path

LEXICON = Path(__file__).with_name("verbs.json")
# Words before the verb: "hey, can you please just ping #ops", "then grab it", "pls nuke it".
_LEAD_INS = frozenset(
    "hey hi hello ok okay so and then also please pls plz kindly just quickly can could would will you u i we "
    "need want to go ahead help me us lets let's".split()
)
_WORD = re.compile(r"[a-z][a-z']*")


@cache
def general_verbs() -> Mapping[str, tuple[str, ...]]:
    """The shipped lexicon: a verb as typed (lowercase) -> the catalog verbs for that action."""
    raw = json.loads(LEXICON.read_text(encoding="utf-8"))
    return {str(verb): tuple(str(v) for v in verbs) for verb, verbs in raw.items()}


def leading_verb(text: str) -> str | None:
    """The first word of the text's first line that is not a lead-in: where an imperative task puts its verb."""
    first_line = text.strip().split("\n", 1)[0].lower()
    for word in _WORD.findall(first_line[:200]):
        if word not in _LEAD_INS:
            return str(word)
    return None


def action_terms(
    text: str, lexicon: Mapping[str, tuple[str, ...]], vocabulary: Collection[str], analyze: Callable[[str], list[str]]
) -> tuple[str, ...]:
    """The catalog's terms for the action the text leads with, that the text does not already say."""
    verb = leading_verb(text)
    if verb is None or verb not in lexicon:
        return ()
    said = set(analyze(verb))
    terms = (term for meaning in lexicon[verb] for term in analyze(meaning))
    return tuple(dict.fromkeys(t for t in terms if t in vocabulary and t not in said))
