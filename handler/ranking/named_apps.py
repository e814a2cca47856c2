"""The apps a step names: "post it in #eng on slack" names Slack, "book it on my google calendar" Google Calendar.

A step that names an app wants that app's tool, and another app's tool on the same object is the wrong one ("record
the call in hubspot" is not another CRM's call logger; issue 31). An app is named when its name's words, joined and
lowercase (an "Api" or "Toolkit" suffix aside), are one to three consecutive words of the step; a name of fewer than
four letters ("X", "Box") is never read as named, since it is as likely a plain word, and neither is a word of an
address (a URL, a domain, an email: "crawl docs.stripe.com" acts on Stripe's site, not in Stripe) unless the
address is the app's name ("customer.io"). A name must be the app's own in its catalog: where more tools of
other apps hold its words than the app has tools ("Image" among image APIs, "Phone" beside "Mobile Phone Specs"),
saying it names a topic, not the app. Only a catalog of apps has apps to name: where fewer than
``APP_CATALOG_SHARE`` of the tools are named ``App.Action``, a prefix is a topic ("math.factorial",
"restaurant.search" beside a bare "get_restaurant"), and a task saying "restaurant" names no app.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from handler.ranking.text import split_identifier

NAMED_DEPTH = 10  # how deep the ranking is read for the tools of the app a task names
APP_CATALOG_SHARE = 0.9
MIN_KEY_CHARS = 4
MAX_KEY_WORDS = 3
_SUFFIXES = ("api", "toolkit")
_TOKEN = re.compile(r"[a-z0-9]+")
# What text.split_identifier splits a name at: its words are what lies between (a property test holds the two alike).
_SEPARATORS = re.compile(r"[._\-/:\s]+")
_ADDRESS = re.compile(r"\S*(?:://|@|\w\.[a-z]{2,}\b)\S*")


Holding = Callable[[tuple[str, ...]], int]  # how many tools of the catalog hold every one of these words


def app_words(app: str) -> tuple[str, ...]:
    """An app's name as words, lowercase, an "Api" or "Toolkit" suffix aside."""
    words = [w.lower() for w in split_identifier(app)]
    while len(words) > 1 and words[-1] in _SUFFIXES:
        words.pop()
    return tuple(words)


def app_key(app: str) -> str:
    """``app_words`` joined. Those words are the name without its separators, so the key is read without splitting
    it unless it may end in a suffix to drop, or lowercasing a word alone could differ from lowercasing them joined
    (a final sigma): every app of a catalog is keyed when it is loaded."""
    key = _SEPARATORS.sub("", app).lower()
    if key.endswith(_SUFFIXES) or not app.isascii():
        return "".join(app_words(app))
    return key


@dataclass(frozen=True)
class NamedApps:
    app_of_tool: tuple[str, ...]  # each tool's app key ("" for a name with no app part)
    keys: frozenset[str]
    app_names: Mapping[str, str] = field(default_factory=dict)  # each key's app as the names write it (is_own's words)
    tools: Mapping[str, int] = field(default_factory=dict)  # how many tools each app has
    holding: Holding | None = None  # None: every key is the app's own (no catalog to ask)
    _own: dict[str, bool] = field(default_factory=dict, init=False, repr=False, compare=False)

    @classmethod
    def of(cls, names: Sequence[str], holding: Holding | None = None) -> NamedApps:
        # Each app is keyed once, not once per tool: a catalog of a million tools has a hundred thousand apps.
        numbered: dict[str, int] = {}  # each app prefix ("" where a name has none) -> its number, in order met
        codes = [numbered.setdefault(name.partition(".")[0] if "." in name else "", len(numbered)) for name in names]
        keys = [app_key(prefix) if prefix else "" for prefix in numbered]
        apps = tuple(map(keys.__getitem__, codes))
        tools = Counter(apps)
        if len(apps) - tools[""] < APP_CATALOG_SHARE * len(apps):
            return cls(apps, frozenset())
        # A key several prefixes share ("GitHub", "Github") reads the words of the last of them met.
        by_key = {key: prefix for prefix, key in zip(numbered, keys, strict=True) if len(key) >= MIN_KEY_CHARS}
        return cls(apps, frozenset(by_key), by_key, tools, holding)

    def is_own(self, key: str) -> bool:
        """Whether the app's name is its own here: no more tools of other apps hold its words than it has tools."""
        own = self._own.get(key)
        if own is None:  # once per app named, per index
            tools = self.tools[key]
            own = self.holding is None or self.holding(app_words(self.app_names[key])) - tools <= tools
            self._own[key] = own
        return own

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
        return frozenset(key for key in found if self.is_own(key))

    def _app_address(self, match: re.Match[str]) -> str:
        """An address stands for nothing, unless it is an app's own name ("customer.io")."""
        joined = "".join(_TOKEN.findall(match.group()))
        return f" {joined} " if joined in self.keys else " "


def named_first(apps: NamedApps, named: frozenset[str], chosen: Sequence[int]) -> list[int]:
    """The places of ``chosen`` (best first) with the tools of the ``named`` apps (keys, as ``NamedApps.named`` read
    them) ahead of the rest, each side in its order: a permutation of range(len(chosen)), the identity where none
    is named."""
    order = list(range(len(chosen)))
    if not named:
        return order
    own = [place for place in order if apps.app_of_tool[chosen[place]] in named]
    return own + [place for place in order if apps.app_of_tool[chosen[place]] not in named]
