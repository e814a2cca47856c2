"""The step splitter (handler/ranking/steps.py) and how a compound task's answers merge (recommend.merge_steps)."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

from handler.ranking.recommend import merge_steps
from handler.ranking.retriever import Hit, Recommendation
from handler.ranking.steps import COMMON_VERBS, MAX_STEPS, catalog_verbs, split_steps


@pytest.mark.parametrize(
    ("task", "steps"),
    [
        ("open a GitHub issue for the flaky test and tell #eng on slack",
         ("open a GitHub issue for the flaky test", "tell #eng on slack")),
        ("find the deal, move it to Contract Sent and attach contact 4410 to it",
         ("find the deal", "move it to Contract Sent", "attach contact 4410 to it")),
        ("create the customer, draft an invoice, then finalize it",
         ("create the customer", "draft an invoice", "finalize it")),
        ("once the build passes, deploy to prod", ("once the build passes", "deploy to prod")),
        ("if the invoice is overdue, email the customer a reminder",
         ("if the invoice is overdue", "email the customer a reminder")),
        ("what's NVDA trading at right now? tweet it with a rocket emoji",
         ("what's NVDA trading at right now", "tweet it with a rocket emoji")),
        ("I'm a movie critic. List the new arrivals on netflix and email them to me",
         ("I'm a movie critic. List the new arrivals on netflix", "email them to me")),
    ],
)  # fmt: skip
def test_steps_start_at_sentences_connectors_conditions_and_verbs(task: str, steps: tuple[str, ...]) -> None:
    assert split_steps(task) == steps


@pytest.mark.parametrize(
    "task",
    [
        "send a Slack message to the ops channel",
        "send the Q3 and Q4 numbers to Johnson and Johnson",  # "and" inside a value
        "email R&D the report",
        "post 'build and deploy done' in #eng",  # inside quotes
        "list issues, PRs and commits for acme/web",  # a list of objects, not of actions
        "Thanks! Send the report to ana.",  # a courtesy is not a step
        "notify me when the build finishes",  # a condition after the action stays with it
        "Check the public holidays in Japan. I want to make sure I don't miss any dates.",  # a remark, not a want
    ],
)
def test_one_step_stays_whole(task: str) -> None:
    assert split_steps(task) == (task,)


def test_no_more_than_max_steps_and_nothing_dropped() -> None:
    task = "make a doc, share it with ana, email bob, post in #eng, then tweet the link and pin it"
    steps = split_steps(task)
    assert len(steps) == MAX_STEPS
    assert steps[-1] == "post in #eng, then tweet the link and pin it"


def test_the_catalog_adds_its_own_actions() -> None:
    verbs = catalog_verbs(["Github.SquashCommits", "Gitlab.SquashMerge", "Weather.Forecast", "X.Go"])
    assert verbs == {"squash"}  # two tools share it; one name alone may be a noun; too short to tell
    task = "find the open PR and squash it into main"
    assert split_steps(task) == (task,)
    assert split_steps(task, COMMON_VERBS | verbs) == ("find the open PR", "squash it into main")


@given(st.lists(st.text(alphabet=st.sampled_from("AbcdeXYZ.é _"), max_size=14), max_size=40))
def test_a_catalog_verb_is_a_tool_parts_first_word_two_names_share(names: list[str]) -> None:
    firsts = [re.match(r"[A-Z]?[a-z]+", name.rsplit(".", 1)[-1]) for name in names]
    counts = Counter(found.group().lower() for found in firsts if found)
    assert catalog_verbs(names) == {word for word, count in counts.items() if count >= 2 and len(word) > 2}


@given(st.text(max_size=300))
def test_every_step_is_a_span_of_the_task(task: str) -> None:
    steps = split_steps(task)
    assert 1 <= len(steps) <= MAX_STEPS
    assert all(step in task for step in steps)


def _answer(*hits: tuple[int, float]) -> Recommendation:
    return Recommendation(tuple(Hit(i, p, 0.5, p) for i, p in hits), 0.5)


def test_each_step_has_its_own_tool_within_k_and_scores_never_rise() -> None:
    whole = _answer((1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6))
    first, second = _answer((1, 0.95), (2, 0.5)), _answer((1, 0.4), (9, 0.3))
    merged = merge_steps("a and b", whole, ("a", "b"), (first, second), 3)
    assert [h.index for h in merged.hits] == [1, 2, 9]  # 9: the second step's best no earlier step took
    assert merged.steps == ("a", "a", "b")  # a tool's step is the one it scores best for
    assert [h.probability for h in merged.hits] == sorted((h.probability for h in merged.hits), reverse=True)


def test_a_longer_answer_holds_each_steps_next_tools_not_only_the_whole_tasks() -> None:
    whole = _answer((1, 0.9), (2, 0.8), (3, 0.7), (4, 0.6), (5, 0.5))
    first, second = _answer((1, 0.95), (8, 0.2)), _answer((6, 0.4), (7, 0.3))  # a step's best may be the wrong action
    merged = merge_steps("a and b", whole, ("a", "b"), (first, second), 6)
    assert [h.index for h in merged.hits] == [1, 2, 3, 4, 6, 8]  # 8, not the whole task's fifth: best first by score
    assert [h.index for h in merge_steps("a and b", whole, ("a", "b"), (first, second), 3).hits] == [1, 2, 6]
    assert {h.index for h in merge_steps("a and b", whole, ("a", "b"), (first, second), 10).hits} == set(range(1, 9))


def test_a_tool_no_step_found_serves_the_whole_task_and_all_refused_is_no_match() -> None:
    whole = _answer((7, 0.6))
    merged = merge_steps("a and b", whole, ("a", "b"), (_answer((8, 0.7)), _answer()), 5)
    assert dict(zip((h.index for h in merged.hits), merged.steps, strict=True)) == {8: "a", 7: "a and b"}
    refused = merge_steps("a and b", _answer(), ("a", "b"), (_answer(), _answer()), 5)
    assert refused.no_match and refused.steps == ()
