"""The action a task asks for, and which of the leading tools' actions fits it (issue 23: the right action of the
right app).

A tool's action is the verb its name starts with (``CreateCard`` creates, ``ListNotes`` lists, ``GET /movie/{id}``
gets), when the verb is one tool catalogs use. How users say each action ("add/open/file/log a ..." creates,
"find/look for" searches, "show me" lists or gets, "kill" deletes or cancels) is learned from our agent tasks
(build_index/quality/actions.py): a linear model over the task's words that scores each verb, and picks among
the verbs of the tools in contention, since a task's words only say which of the available actions fits best.
The ranking adds ``ACTION_WEIGHT`` times that choice to the fused score of its leading tools (retriever.py), so
among one app's siblings on the same object the one whose action fits comes first. Chosen leave-one-set-out
(docs/quality.md).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from handler.ranking.analyzer import stem
from handler.ranking.arrays import FloatArray
from handler.ranking.text import split_identifier

SHIPPED_ACTIONS = Path(__file__).with_name("actions.json")  # `toolrec model actions` writes it
ACTION_WEIGHT = 0.0  # chosen leave-one-set-out (docs/quality.md)
CONTENDERS = 10  # the leading tools whose actions compete
_TOKEN = re.compile(r"[a-z0-9]+|\?")
_LEADING_CUES = 2  # the first words of a task say most about its action: they count as cues of their own


@cache
def shipped_actions() -> ActionModel:
    """The action model learned from our agent tasks, read once."""
    return ActionModel.read(SHIPPED_ACTIONS)


def cues(task: str) -> set[str]:
    """The features of a task the action model reads: its words (numbers folded), and its first words marked.
    Pairs of adjacent words ("look for" / "look up") were tried: held-out accuracy 65.9 % against 68.6 %."""
    tokens = ["<n>" if any(c.isdigit() for c in t) else t for t in _TOKEN.findall(task.lower())]
    return set(tokens) | {f"^{t}" for t in tokens[:_LEADING_CUES]}


def tool_verb(name: str, verbs: frozenset[str]) -> str | None:
    """The verb a tool's name starts with, stemmed, when it is one of ``verbs``: ``Trello.CreateCard`` -> create."""
    tool = name.rsplit(".", 1)[-1] if "/" not in name else name
    words = split_identifier(tool)
    verb = stem(words[0].lower()) if words else None
    return verb if verb in verbs else None


@dataclass(frozen=True)
class ActionModel:
    verbs: frozenset[str]  # the tool-name verbs the model knows
    weights: Mapping[str, Mapping[str, float]]  # cue -> verb -> weight

    @classmethod
    def read(cls, path: Path) -> ActionModel:
        raw = json.loads(path.read_text(encoding="utf-8"))
        return cls(frozenset(raw["verbs"]), raw["weights"])

    def choice(self, task: str, verbs: Sequence[str | None]) -> FloatArray:
        """For each contender (its verb, or None), the probability that its action is the one the task asks for,
        among the distinct verbs in contention; 0 for a contender without a known verb."""
        distinct = sorted({v for v in verbs if v is not None})
        out = np.zeros(len(verbs), dtype=np.float32)
        if len(distinct) < 2:
            return out  # nothing to choose between
        features = cues(task)
        logits = [sum(self.weights.get(c, {}).get(v, 0.0) for c in features) for v in distinct]
        top = max(logits)
        shares = [math.exp(x - top) for x in logits]
        total = sum(shares)
        chance = {v: s / total for v, s in zip(distinct, shares, strict=True)}
        for position, verb in enumerate(verbs):
            if verb is not None:
                out[position] = chance[verb]
        return out
