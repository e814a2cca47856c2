"""Learning how users say each action (handler/ranking/actions.py) from our agent tasks.

Each one-step agent task outside the held-out fifth is an example: the verb of its tool, against the verbs of the
look-alikes its writer named as wrong for it (the same app's tools on the same object with another action). A
conditional logistic model over the task's words (AdaGrad, L2, a fixed seed) learns which words choose which
verb among those in contention; the result is written beside the model it was trained with and pinned with it.
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from build_index.quality.agent_tasks import ARCADE_SOURCE, AgentTask, arcade_rows, training_tasks
from build_index.quality.evaluate import benchmark_tools
from build_index.quality.training_split import TRAINING_SETS
from handler.ranking.actions import cues, tool_verb
from handler.ranking.analyzer import stem
from handler.ranking.text import split_identifier


@dataclass(frozen=True)
class ActionRecipe:
    min_verb_tools: int = 3  # a verb names at least this many tools across the training catalogs
    epochs: int = 3
    learning_rate: float = 0.3
    l2: float = 0.03
    min_weight: float = 0.01  # smaller weights are dropped from the file
    seed: int = 0


@dataclass(frozen=True)
class _Example:
    cues: frozenset[str]
    verb: str
    contenders: tuple[str, ...]  # sorted, the verb among them


def tool_names(training_root: Path, tasks: Sequence[AgentTask]) -> dict[tuple[str, str], str]:
    """(source, tool id) -> tool name, for every catalog the tasks and the training sets name."""
    names = {}
    apps = {tool.split(".", 1)[0] for task in tasks if task.source == ARCADE_SOURCE for tool in task.tool_ids}
    for row in arcade_rows(training_root.parent, apps):
        names[(ARCADE_SOURCE, str(row["id"]))] = str(row["name"])
    for set_name in TRAINING_SETS:
        ids, tools = benchmark_tools(training_root / set_name)
        names.update({(set_name, tool_id): tool.name for tool_id, tool in zip(ids, tools, strict=True)})
    return names


def catalog_verbs(names: Sequence[str], minimum: int) -> frozenset[str]:
    """The stemmed first words of tool names that start at least ``minimum`` of them: the verbs catalogs use."""
    counts = Counter(stem(words[0].lower()) for words in map(_tool_words, names) if words)
    return frozenset(v for v, n in counts.items() if n >= minimum and v.isalpha() and len(v) > 1)


def _tool_words(name: str) -> list[str]:
    return split_identifier(name.rsplit(".", 1)[-1] if "/" not in name else name)


def examples(tasks: Sequence[AgentTask], names: Mapping[tuple[str, str], str], verbs: frozenset[str]) -> list[_Example]:
    found = []
    for task in training_tasks(tasks):
        if len(task.groups) != 1:
            continue  # a multi-step task's words speak of several actions at once
        verb = tool_verb(names[(task.source, task.groups[0][0])], verbs)
        others = {tool_verb(names[(task.source, n)], verbs) for n in task.negatives if (task.source, n) in names}
        contenders = tuple(sorted({v for v in others if v is not None} | {verb} if verb else ()))
        if verb is not None and len(contenders) > 1:
            found.append(_Example(frozenset(cues(task.task)), verb, contenders))
    return found


def learn_actions(
    training_root: Path, tasks: Sequence[AgentTask], recipe: ActionRecipe = ActionRecipe()
) -> dict[str, Any]:
    """The action model as handler/ranking/actions.py reads it: {"verbs": [...], "weights": {cue: {verb: w}}}."""
    names = tool_names(training_root, tasks)
    verbs = catalog_verbs(list(names.values()), recipe.min_verb_tools)
    data = examples(tasks, names, verbs)
    weights: dict[tuple[str, str], float] = defaultdict(float)
    squares: dict[tuple[str, str], float] = defaultdict(lambda: 1e-8)
    order = random.Random(recipe.seed)  # noqa: S311 - a reproducible order, not a secret
    for _ in range(recipe.epochs):
        order.shuffle(data)
        for example in data:
            logits = [sum(weights[(c, v)] for c in example.cues) for v in example.contenders]
            top = max(logits)
            shares = [math.exp(x - top) for x in logits]
            total = sum(shares)
            for verb, share in zip(example.contenders, shares, strict=True):
                error = share / total - (verb == example.verb)
                for cue in example.cues:
                    key = (cue, verb)
                    gradient = error + recipe.l2 * weights[key]
                    squares[key] += gradient * gradient
                    weights[key] -= recipe.learning_rate * gradient / math.sqrt(squares[key])
    table: dict[str, dict[str, float]] = defaultdict(dict)
    for (cue, verb), weight in sorted(weights.items()):
        if abs(weight) >= recipe.min_weight:
            table[cue][verb] = round(weight, 4)
    return {"verbs": sorted(verbs), "examples": len(data), "weights": dict(table)}


def write_actions(model: Mapping[str, Any], path: Path) -> None:
    path.write_text(json.dumps(model, sort_keys=True, separators=(",", ":")) + "\n", encoding="utf-8")
