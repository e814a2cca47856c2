"""Finding the steps of a compound task: "find the open PR, merge it and tell #eng on slack" -> three steps.

Agents put several steps in one task; one ranking of the whole task finds its first steps' tools and loses the
last (PRODUCT.md §2). A step starts at a sentence break, after "then" / "also" / "after that" and kin, at a
leading condition ("if/once/when/after ..., do it"), and at a comma or "and" followed by an action verb: "and"
alone never splits ("Johnson and Johnson", "the Q3 and Q4 numbers"), nor does anything inside quotes. A sentence
that asks for nothing ("I'm a movie critic.") is context for the request after it, not a step. The verbs are
common English actions plus the first word of the catalog's own tool names ("squash", "redeem"), so a catalog's
actions split where an English list would miss them. Measured on the multi-step sets: docs/quality.md.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

MAX_STEPS = 4  # each step costs one ranking (a one-action select): a bound on a task's latency
MIN_STEP_WORDS = 2  # "do it" is a step; a lone word ("thanks", "asap") is not

# Actions agents ask for in their own words; the catalog adds its own (catalog_verbs).
COMMON_VERBS = frozenset(
    """
    add answer append approve archive ask assign attach book bump cancel change check clone close comment commit
    compare complete compute confirm convert copy count create decline delete deploy describe disable dm download
    draft drop duplicate edit email enable export fetch file fill find finalize flag follow forward generate get give
    grab invite issue join kick label launch leave let link list load lock log look make mark merge message move
    mute notify open order pay pin ping play post print publish pull push put read record redeem refund register
    reject release reload remind remove rename reopen reply report request reschedule reset resolve restart restore
    retrieve return revert revoke roll run save schedule search see send set share show sign snooze sort start stop
    submit subscribe summarize sync tag tell text translate transfer trigger tweet unarchive unlock unpin unsubscribe
    update upload upgrade verify view watch write
    """.split()
)
# Words that may stand before a step's verb: "and then send", "also add", "please post", "finally close".
_LEAD_INS = frozenset("and then also please finally lastly next afterwards plus so".split())
_WORD = re.compile(r"[A-Za-z0-9][\w'-]*")
# A sentence ends at . ! ? ; before a space (not inside "v1.2" or "acme.com"), or at a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")
# Connectors that always start a new step.
_ALWAYS = re.compile(
    r",?\s+(?:and\s+then|then|and\s+also|after\s+that|afterwards|finally|lastly)\s+|,\s*also\s+", re.IGNORECASE
)
# A comma or "and" starts a new step only before an action verb (checked by the caller).
_MAYBE = re.compile(r",\s*(?:and\s+)?|\s+and\s+|\s*&\s*", re.IGNORECASE)
# A leading condition: "if it's the refund thing, mark it solved", "once the build passes, deploy".
_CONDITION = re.compile(r"^(?:if|once|when|whenever|after|as\s+soon\s+as)\b[^,]{3,}?,\s*", re.IGNORECASE)
_CONDITION_WORDS = frozenset("if once when whenever".split())
# How a sentence asks: a question's first word, or a want ("I'd like to know", "we need", "help me").
_ASKING = frozenset("can could would will what which who whom whose where when how is are do does did".split())
_ASKING_OR_CONDITION = _ASKING | _CONDITION_WORDS
_WANT = re.compile(
    r"\b(?:(?:i|we)(?:'d|\s+would)?\s+(?:like|want|need|wish)|(?:i'd|we'd)\s+like|help\s+(?:me|us))\s+"
    r"(?!(?:to\s+)?(?:make\s+sure|be\s+sure|ensure)\b)",  # "I want to make sure I don't miss ..." asks for nothing
    re.IGNORECASE,
)
_FIRST_WORD = re.compile(r"[A-Z]?[a-z]+")  # a tool name's first word, its action in a catalog of actions
_QUOTED = re.compile(r"\"[^\"]*\"|“[^”]*”|(?<![A-Za-z])'[^']*'(?![A-Za-z])")


def catalog_verbs(names: Iterable[str]) -> frozenset[str]:
    """The first word of the tool names ("Github.MergePullRequest" -> merge), where two or more tools share it:
    a catalog's own actions. A word that starts one name only is as likely a noun ("Weather.Forecast")."""
    first_word = _FIRST_WORD.match
    # Matched where the tool part starts, after the name's last dot, rather than on a slice: a catalog of a million
    # tools reads every name once, on its first select.
    counts = Counter(found.group().lower() for name in names if (found := first_word(name, name.rfind(".") + 1)))
    return frozenset(word for word, count in counts.items() if count >= 2 and len(word) > 2)


def split_steps(task: str, verbs: frozenset[str] = COMMON_VERBS) -> tuple[str, ...]:
    """The steps of a task, in order, each a span of its text; one step (the task itself) when it reads as one.

    ``verbs``: the actions a comma or "and" must be followed by to start a step (COMMON_VERBS and the catalog's).
    """
    masked = _masked(task)
    steps: list[tuple[int, int]] = []
    for start, end in _requests(masked, _spans(masked, _SENTENCE_END, 0, len(task)), verbs):
        for s, e in _spans(masked, _ALWAYS, start, end):
            for piece in _verb_split(masked, s, e, verbs):
                steps.extend(_condition_split(masked, *piece))
    texts = [task[s:e].strip(" ,.;:!?\n\t") for s, e in steps]
    texts = [t for t in texts if len(_WORD.findall(t)) >= MIN_STEP_WORDS]
    if len(texts) < 2:
        return (task,)
    if len(texts) > MAX_STEPS:  # the rest stays with the last step, so no part of the task is dropped
        last = task[task.find(texts[MAX_STEPS - 1]) :].strip(" ,.;:!?\n\t")
        texts = [*texts[: MAX_STEPS - 1], last]
    return tuple(texts)


def _masked(task: str) -> str:
    """The task with quoted values blanked out (same length), so nothing inside quotes is a split point."""
    return _QUOTED.sub(lambda m: m.group(0)[0] + "_" * (len(m.group(0)) - 2) + m.group(0)[-1], task)


def _spans(masked: str, separator: re.Pattern[str], start: int, end: int) -> list[tuple[int, int]]:
    spans, at = [], start
    for match in separator.finditer(masked, start, end):
        spans.append((at, match.start()))
        at = match.end()
    spans.append((at, end))
    return spans


def _requests(masked: str, sentences: list[tuple[int, int]], verbs: frozenset[str]) -> list[tuple[int, int]]:
    """The sentences that ask for something, each with the statements before it ("I'm a movie critic. Can you
    list the new arrivals?" is one step): a statement is context, not a step. Trailing statements join the last."""
    spans: list[tuple[int, int]] = []
    pending: int | None = None  # where the statements waiting for their request start
    for start, end in sentences:
        if _is_request(masked[start:end], verbs):
            spans.append((start if pending is None else pending, end))
            pending = None
        elif pending is None:
            pending = start
    if pending is not None:
        if spans:
            spans[-1] = (spans[-1][0], sentences[-1][1])
        else:
            spans.append((pending, sentences[-1][1]))
    return spans


def _is_request(sentence: str, verbs: frozenset[str]) -> bool:
    """A question, an action verb first ("send it", "please post"), or a want ("I need to know ...")."""
    text = sentence.strip()
    return text.endswith("?") or _starts_with_verb(text, verbs, _ASKING_OR_CONDITION) or bool(_WANT.search(text))


def _condition_split(masked: str, start: int, end: int) -> list[tuple[int, int]]:
    lead = len(masked[start:end]) - len(masked[start:end].lstrip())
    match = _CONDITION.match(masked, start + lead, end)
    if match is None:
        return [(start, end)]
    comma = masked.rindex(",", start, match.end())
    return [(start, comma), (match.end(), end)]


def _verb_split(masked: str, start: int, end: int, verbs: frozenset[str]) -> list[tuple[int, int]]:
    spans, at = [], start
    for match in _MAYBE.finditer(masked, start, end):
        if _starts_with_verb(masked[match.end() : end], verbs) and _WORD.search(masked, at, match.start()):
            spans.append((at, match.start()))
            at = match.end()
    spans.append((at, end))
    return spans


def _starts_with_verb(text: str, verbs: frozenset[str], also: frozenset[str] = _CONDITION_WORDS) -> bool:
    """Whether a step starts here: an action verb, or ``also`` (a condition: "and if it's overdue, ...")."""
    for word in _WORD.findall(text[:80]):
        lowered = word.lower()
        if lowered not in _LEAD_INS:
            return lowered in verbs or lowered in also
    return False
