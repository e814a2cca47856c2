"""The apps a step names: "post it in #eng on slack" names Slack, "book it on my google calendar" Google Calendar.

A step that names an app wants that app's tool, and another app's tool on the same object is the wrong one ("record
the call in hubspot" is not another CRM's call logger; issue 31). An app is named when its name's words, joined and
lowercase (an "Api" or "Toolkit" suffix aside), are one to three consecutive words of the step; a name of fewer than
four letters ("X", "Box") is never read as named, since it is as likely a plain word, and neither is a word of an
address (a URL, a domain, an email: "crawl docs.stripe.com" acts on Stripe's site, not in Stripe) unless the
address is the app's name ("customer.io"). Only a catalog of apps has apps to name: where fewer than
``APP_CATALOG_SHARE`` of the tools are named ``App.Action``, a prefix is a topic ("math.factorial",
"restaurant.search" beside a bare "get_restaurant"), and a task saying "restaurant" names no app.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from handler.ranking.text import split_identifier

NAMED_DEPTH = 10  # how deep the ranking is read for the tools of the app a task names
APP_CATALOG_SHARE = 0.9
MIN_KEY_CHARS = 4
MAX_KEY_WORDS = 3
_SUFFIXES = ("api", "toolkit")
_TOKEN = re.compile(r"[a-z0-9]+")
_ADDRESS = re.compile(r"\S*(?:://|@|\w\.[a-z]{2,}\b)\S*")


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
        keys: dict[str, str] = {}  # each app's key, worked out once per app, not per tool (a million tools)
        prefixes = (name.split(".", 1)[0] if "." in name else "" for name in names)
        apps = tuple(keys.get(p) or keys.setdefault(p, app_key(p) if p else "") for p in prefixes)
        if sum(1 for app in apps if app) < APP_CATALOG_SHARE * len(apps):
            return cls(apps, frozenset())
        return cls(apps, frozenset(key for key in keys.values() if len(key) >= MIN_KEY_CHARS))

    def named(self, text: str) -> frozenset[str]:
        """The apps the text names, by key."""
        tokens = _TOKEN.findall(_ADDRESS.sub(self._app_address, text.lower()))
        found = set()
        for start in range(len(tokens)):
            joined = ""
            for token in tokens[start : start + MAX_KEY_WORDS]:
                joined += token
                if joined in self.keys:
                    found.add(joined)
        return frozenset(found)

    def _app_address(self, match: re.Match[str]) -> str:
        """An address stands for nothing, unless it is an app's own name ("customer.io")."""
        joined = "".join(_TOKEN.findall(match.group()))
        return f" {joined} " if joined in self.keys else " "


def named_first(apps: NamedApps, text: str, chosen: Sequence[int]) -> list[int]:
    """The places of ``chosen`` (best first) with the tools of the apps ``text`` names ahead of the rest, each side in
    its order: a permutation of range(len(chosen)), the identity where the text names no app among them."""
    named = apps.named(text)
    order = list(range(len(chosen)))
    if not named:
        return order
    own = [place for place in order if apps.app_of_tool[chosen[place]] in named]
    return own + [place for place in order if apps.app_of_tool[chosen[place]] not in named]
