"""What the sibling stage (siblings.py) reads of a task and of each leading candidate: the action asked and the
action each tool's name says, identity tools, the task's values against the tool's parameter *names* (PRODUCT.md
§1 allows names, never parameter descriptions, to tell one app's siblings apart), and the ranking's own evidence.

Pure: strings and arrays in, one row of ``FEATURES`` per candidate out.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from handler.ranking.confidence import FEATURES as EVIDENCE_FEATURES
from handler.ranking.text import split_identifier, words

Rows = npt.NDArray[np.float64]

# What a tool name's first word says it does, and what a task's first verb asks; one class each, first match wins.
ACTIONS = ("read", "list", "search", "create", "update", "delete", "send", "other")
_ACTION_WORDS = {
    "read": "get fetch retrieve read show view describe lookup check download load info details inspect see "
    "pull grab tell give display open",
    "list": "list browse enumerate all",
    "search": "search find query filter lookup locate",
    "create": "create add new make insert upload register start generate build book schedule draft write log "
    "record set up compose import copy duplicate clone",
    "update": "update edit modify change patch rename move replace reschedule assign mark toggle enable disable "
    "set bump switch turn reorder upsert approve resolve reopen complete finish star pin unpin lock unlock "
    "restore apply attach label tag",
    "delete": "delete remove cancel archive close revoke unsubscribe clear destroy drop kill purge trash detach "
    "unassign reject decline",
    "send": "send post reply share notify message email dm ping text publish forward invite comment tweet announce "
    "respond broadcast",
}
_CLASS_OF: dict[str, str] = {}
for _action, _spelled in _ACTION_WORDS.items():
    for _word in _spelled.split():
        _CLASS_OF.setdefault(_word, _action)
_QUESTION_STARTS = frozenset(
    "what which who whom whose when where how why is are was were do does did any anything".split()
)
_IDENTITY = re.compile(r"who\s*am\s*i|whoami|get\s*me\b|current\s*user|my\s*profile|get\s*self|^me$", re.IGNORECASE)
# A task that asks who the caller is: all an identity tool answers ("which account is this token logged in as").
_ABOUT_THE_CALLER = re.compile(
    r"\b(?:who\s*am\s*i|whoami|am\s+i|(?:signed|logged)\s+in|authenticated|current\s+user|about\s+me|"
    r"my\s+(?:own\s+)?(?:account|profile|user\s*name|user|identity|login|role|permissions)|"
    r"whose\s+(?:login|account|token|key)|this\s+(?:token|api\s+key|key))\b",
    re.IGNORECASE,
)
_SEARCH_PARAMS = frozenset("query q search keyword keywords term terms filter filters text".split())
_ID_VALUE = re.compile(r"\b(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{4,}\b")
_FILTER_WORDS = frozenset(
    "over under above below since before after between from last this only where with without more less than "
    "status overdue unpaid open closed pending".split()
)
_GENERIC_PARAMS = frozenset("id ids type mode name data body value values string object".split())

TASK_SHAPES = ("question", *ACTIONS)
# The ranking's evidence the stage reads (columns of confidence.FEATURES, looked up by name).
FROM_EVIDENCE = ("cosine", "below_best_cosine", "words_held", "lexical_place", "semantic_place", "place", "fused_share")
EVIDENCE_COLUMNS = tuple(EVIDENCE_FEATURES.index(name) for name in FROM_EVIDENCE)
BASE = (
    *FROM_EVIDENCE,
    "same_app_as_first",
    "app_siblings",
    "verb_in_task",
    "identity_self",
    "identity_other",
    "search_params_x_filter",
    "param_words_in_task",
    "param_share_in_task",
    "id_value_x_id_param",
    "id_value_x_no_id_param",
    "parameters",
    "required",
)
FEATURES = BASE + tuple(f"{shape}_x_{action}" for shape in TASK_SHAPES for action in ACTIONS)


def app_of(name: str) -> str:
    """The app a tool's name says ("Slack.SendMessage" -> "slack"); the whole name where it has none."""
    return name.rsplit(".", 1)[0].lower() if "." in name else ""


def name_action(name: str) -> tuple[str, str]:
    """The first word of a tool's own name (after its app) and the action class it says."""
    tool = name.rsplit(".", 1)[-1]
    parts = [w.lower() for w in split_identifier(tool)]
    if not parts:
        return "", "other"
    if _IDENTITY.search(tool) or _IDENTITY.search(" ".join(parts)):
        return parts[0], "read"
    return parts[0], _CLASS_OF.get(parts[0], "other")


def is_identity(name: str) -> bool:
    """Whether a tool's own name says it tells who the caller is (WhoAmI, GetMe, GetCurrentUser)."""
    return bool(_IDENTITY.search(name.rsplit(".", 1)[-1]))


def asks_who_the_caller_is(task: str) -> bool:
    """Whether the task asks about the caller's own identity, not about someone or something else."""
    return bool(_ABOUT_THE_CALLER.search(task))


def task_shape(task: str) -> str:
    """What the task asks: a question, or the action of its first verb (after fillers and an app prefix)."""
    tokens = words(task)
    if task.rstrip().endswith("?") or (tokens and tokens[0] in _QUESTION_STARTS):
        return "question"
    # The first action word among the first few (fillers, an app's name and values come before it).
    return next((_CLASS_OF[token] for token in tokens[:8] if token in _CLASS_OF), "other")


def candidate_rows(
    task: str, names: Sequence[str], parameters: Sequence[Sequence[str]], required: Sequence[int], evidence: Rows
) -> Rows:
    """One row of FEATURES per candidate (best first); ``evidence``: their rows of confidence.FEATURES."""
    tokens = words(task)
    held = set(tokens)
    stems = {t[:5] for t in tokens if len(t) > 3}
    shape = TASK_SHAPES.index(task_shape(task))
    about_self = asks_who_the_caller_is(task)
    has_id = bool(_ID_VALUE.search(task))
    filtered = bool(held & _FILTER_WORDS)
    apps = [app_of(n) for n in names]
    count = len(names)
    rows = np.zeros((count, len(FEATURES)), dtype=np.float64)
    rows[:, : len(FROM_EVIDENCE)] = evidence[:, EVIDENCE_COLUMNS]
    for i, name in enumerate(names):
        verb, action = name_action(name)
        identity = is_identity(name)
        rows[i, 7:19] = _candidate(
            apps, i, verb, held, stems, identity, about_self, parameters[i], required[i], has_id, filtered
        )
        rows[i, len(BASE) + shape * len(ACTIONS) + ACTIONS.index(action)] = 1.0
    return rows


def _candidate(
    apps: Sequence[str],
    i: int,
    verb: str,
    held: set[str],
    stems: set[str],
    identity: bool,
    about_self: bool,
    parameters: Sequence[str],
    required: int,
    has_id: bool,
    filtered: bool,
) -> list[float]:
    app = apps[i]
    siblings = sum(1 for other in apps if app and other == app) - 1
    param_words = {w.lower() for p in parameters for w in split_identifier(p)} - _GENERIC_PARAMS
    matched = sum(1 for w in param_words if w in held or (len(w) > 3 and w[:5] in stems))
    lowered = {p.lower() for p in parameters}
    searchable = bool(lowered & _SEARCH_PARAMS)
    id_param = any(p.lower() == "id" or p.lower().endswith(("_id", "id")) for p in parameters)
    return [
        float(bool(app) and app == apps[0]),
        float(np.log1p(max(siblings, 0))),
        float(verb in held),
        float(identity and about_self),
        float(identity and not about_self),
        float(searchable and filtered),
        float(np.log1p(matched)),
        matched / len(param_words) if param_words else 0.0,
        float(has_id and id_param),
        float(has_id and not id_param),
        float(np.log1p(len(parameters))),
        float(np.log1p(required)),
    ]
