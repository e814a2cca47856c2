"""The apps a step names: "post it in #eng on slack" names Slack, "book it on my google calendar" Google Calendar.

A step that names an app wants that app's tool, and another app's tool on the same object is the wrong one ("record
the call in hubspot" is not another CRM's call logger; issue 31). An app is named when its name's words, joined and
lowercase (an "Api" or "Toolkit" suffix aside), are one to three consecutive words of the step; a name of fewer than
four letters ("X", "Box") is never read as named, since it is as likely a plain word.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from handler.ranking.text import split_identifier

MIN_KEY_CHARS = 4
MAX_KEY_WORDS = 3
_SUFFIXES = ("api", "toolkit")
_TOKEN = re.compile(r"[a-z0-9]+")


def app_key(app: str) -> str:
    words = [w.lower() for w in split_identifier(app)]
    while len(words) > 1 and words[-1] in _SUFFIXES:
        words.pop()
    return "".join(words)


@dataclass(frozen=True)
class NamedApps:
    app_of_tool: tuple[str, ...]  # each tool's app key ("" for a name with no app part)
    keys: frozenset[str]

    @classmethod
    def of(cls, names: Sequence[str]) -> NamedApps:
        apps = tuple(app_key(name.split(".", 1)[0]) if "." in name else "" for name in names)
        return cls(apps, frozenset(key for key in apps if len(key) >= MIN_KEY_CHARS))

    def named(self, text: str) -> frozenset[str]:
        """The apps the text names, by key."""
        tokens = _TOKEN.findall(text.lower())
        found = set()
        for start in range(len(tokens)):
            joined = ""
            for token in tokens[start : start + MAX_KEY_WORDS]:
                joined += token
                if joined in self.keys:
                    found.add(joined)
        return frozenset(found)
