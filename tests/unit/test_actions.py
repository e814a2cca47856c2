"""A task's action against its leading tools' actions (handler/ranking/actions.py), and how it is learned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from build_index.quality.actions import learn_actions, tool_names
from build_index.quality.agent_tasks import held_out, read_agent_tasks
from handler.ranking.actions import SHIPPED_ACTIONS, ActionModel, cues, shipped_actions, tool_verb

VERBS = frozenset({"creat", "list", "get", "delet", "search", "send"})  # stemmed, as the analyzer stems


def test_a_tools_action_is_the_verb_its_name_starts_with() -> None:
    assert tool_verb("Trello.CreateCard", VERBS) == "creat"
    assert tool_verb("Trello.ListCards", VERBS) == "list"
    assert tool_verb("get_balance", VERBS) == tool_verb("Bank.getBalance", VERBS) == "get"
    assert tool_verb("GET /movie/{movie_id}/keywords", VERBS) == "get"
    assert tool_verb("Trello.CardArchiver", VERBS) is None  # not a verb catalogs use: no vote


def test_a_tasks_cues_are_its_words_and_its_first_words() -> None:
    assert cues("Show me card 88?") == {"show", "me", "card", "<n>", "?", "^show", "^me"}


def test_the_shipped_model_chooses_the_action_users_mean() -> None:
    model = shipped_actions()
    for task, verbs, meant in [
        ("add a card for the login bug", ["get", "creat", "list"], "creat"),
        ("what cards are on the Roadmap board", ["creat", "list", "delet"], "list"),
        ("kill card 4410, it's a duplicate", ["creat", "get", "delet"], "delet"),
    ]:
        choice = model.choice(task, verbs)
        assert verbs[int(choice.argmax())] == meant, (task, dict(zip(verbs, choice.tolist(), strict=True)))
        assert choice.sum() == pytest.approx(1.0)


def test_nothing_to_choose_between_gives_no_vote() -> None:
    model = ActionModel(VERBS, {"add": {"creat": 2.0}})
    assert model.choice("add a card", ["creat", "creat", None]).tolist() == [0.0, 0.0, 0.0]
    assert model.choice("add a card", ["creat", "list", None])[2] == 0.0


def test_the_shipped_model_is_what_the_agent_tasks_teach_and_it_chooses_well_on_held_out_ones(shared_dir: Path) -> None:
    tasks = read_agent_tasks()
    learned = learn_actions(shared_dir / "training", tasks)
    assert json.loads(SHIPPED_ACTIONS.read_text()) == json.loads(json.dumps(learned))  # `toolrec model actions`
    names = tool_names(shared_dir / "training", tasks)
    model, right, chance = shipped_actions(), [], []
    for task in (t for t in tasks if held_out(t) and len(t.groups) == 1):
        verb = tool_verb(names[(task.source, task.groups[0][0])], model.verbs)
        others = {tool_verb(names[(task.source, n)], model.verbs) for n in task.negatives if (task.source, n) in names}
        contenders = sorted({v for v in others if v} | {verb}) if verb else []
        if len(contenders) > 1:
            right.append(contenders[int(model.choice(task.task, contenders).argmax())] == verb)
            chance.append(1 / len(contenders))
    # Among a held-out task's tool and its look-alikes: 68.6 % right, where guessing is right 43 %.
    assert len(right) > 1000 and sum(right) / len(right) >= 0.65 and sum(chance) / len(chance) < 0.5
