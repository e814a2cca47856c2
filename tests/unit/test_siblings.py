"""The sibling stage (handler/ranking/siblings.py): it reorders only the first tool and its same-app siblings among
the leading candidates, never adds a tool (nor a disallowed one), leaves a list without siblings alone, keeps each
place's probability, and is deterministic."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from handler.ranking.confidence import SHIPPED
from handler.ranking.sibling_features import FEATURES, name_action, task_shape
from handler.ranking.siblings import CANDIDATES, SHIPPED_HEAD, SiblingHead, parameters_of, sibling_order
from tests.unit.test_retriever_properties import CATALOG, QUERIES, make_index, query_vector

# A head that only knows one thing: a question about something leans to a tool that lists it.
LIST_FOR_QUESTIONS = SiblingHead(np.array([10.0 if name == "question_x_list" else 0.0 for name in FEATURES]))


def _index(head: SiblingHead | None = LIST_FOR_QUESTIONS):  # type: ignore[no-untyped-def]
    return replace(make_index(range(len(CATALOG))), siblings=head)


def test_a_question_moves_the_lister_sibling_first_and_leaves_the_other_apps_in_place() -> None:
    index = _index()
    vector = query_vector(0)  # near Slack.SendMessage
    task = "what was said in slack?"
    before = [h.index for h in replace(index, siblings=None).recommend(task, vector, 5).hits]
    after = [h.index for h in index.recommend(task, vector, 5).hits]
    names = [index.names[i] for i in after]
    assert index.names[before[0]] != "Slack.ListChannels" and names[0] == "Slack.ListChannels"
    assert sorted(after) == sorted(before)  # nothing added or dropped
    slack = [p for p, i in enumerate(before) if index.names[i].startswith("Slack.")]
    assert all(after[p] == before[p] for p in range(len(before)) if p not in slack)


def test_each_place_keeps_its_probability_so_the_score_never_rises() -> None:
    index = _index()
    vector = query_vector(0)
    task = "what was said in slack?"
    plain = replace(index, siblings=None).recommend(task, vector, 5, calibration=SHIPPED)
    staged = index.recommend(task, vector, 5, calibration=SHIPPED)
    assert [h.probability for h in staged.hits] == [h.probability for h in plain.hits]
    assert staged.hits[0].index != plain.hits[0].index


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.booleans(), min_size=len(CATALOG), max_size=len(CATALOG)),
    st.sampled_from([*QUERIES, "what channels are there in slack?", "which invoices are open?"]),
    st.integers(0, 100),
    st.integers(1, 8),
)
def test_the_stage_never_adds_a_tool_nor_a_disallowed_one(mask: list[bool], task: str, seed: int, k: int) -> None:
    index, allowed, vector = _index(), np.array(mask), query_vector(seed)
    staged = index.recommend(task, vector, k, allowed)
    again = index.recommend(task, vector, k, allowed)
    leading = [h.index for h in replace(index, siblings=None).recommend(task, vector, max(k, CANDIDATES), allowed).hits]
    assert staged == again  # deterministic
    assert all(allowed[h.index] for h in staged.hits)
    assert {h.index for h in staged.hits} <= set(leading)
    assert len(staged.hits) == min(k, len(leading))


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from([n for n, _ in CATALOG]), min_size=0, max_size=10, unique=True), st.integers(0, 9))
def test_the_order_is_a_permutation_that_moves_only_the_first_and_its_siblings(names: list[str], seed: int) -> None:
    rng = np.random.default_rng(seed)
    head = SiblingHead(rng.normal(size=len(FEATURES)))
    evidence = rng.uniform(size=(len(names), 13))
    order = sibling_order(head, "which ones are open?", names, None, list(range(len(names))), evidence)
    assert sorted(order) == list(range(len(names)))
    app = names[0].split(".")[0] + "." if names else ""
    for place, moved in enumerate(order):
        if place != moved:  # only the first and its same-app siblings among the leading ones (no identity tools)
            assert place < CANDIDATES and moved < CANDIDATES
            assert names[place].startswith(app) and names[moved].startswith(app)


def test_one_candidate_and_a_list_without_siblings_are_left_alone() -> None:
    evidence = np.ones((3, 13))
    assert sibling_order(LIST_FOR_QUESTIONS, "what?", ["Slack.ListChannels"], None, [0], evidence[:1]) == [0]
    names = ["Slack.SendMessage", "Github.ListPullRequests", "Stripe.ListInvoices"]
    assert sibling_order(LIST_FOR_QUESTIONS, "what is open?", names, None, [0, 1, 2], evidence) == [0, 1, 2]


def test_an_identity_tool_leads_only_a_task_asking_who_the_caller_is() -> None:
    evidence = np.ones((4, 13))
    names = ["Hubspot.WhoAmI", "Zendesk.GetCurrentUser", "Hubspot.GetContactDataByKeywords", "Hubspot.GetAllUsers"]
    order = sibling_order(
        SiblingHead(np.zeros(len(FEATURES))),
        "look up marco@initech.com in hubspot",
        names,
        None,
        [0, 1, 2, 3],
        evidence,
    )
    assert order == [2, 0, 1, 3]  # the first tool that is no identity tool goes first; the rest keep their order
    for task in ("which hubspot account is this token logged in as?", "who am I in hubspot", "show my profile"):
        assert sibling_order(SiblingHead(np.zeros(len(FEATURES))), task, names, None, [0, 1, 2, 3], evidence)[0] == 0
    only = ["Slack.WhoAmI", "Github.WhoAmI"]  # nothing else to put first
    assert sibling_order(LIST_FOR_QUESTIONS, "what's up on slack", only, None, [0, 1], evidence[:2]) == [0, 1]


def test_a_task_naming_a_tool_keeps_it_first() -> None:
    index = _index(SiblingHead(np.array([-10.0 if name == "place" else 0.0 for name in FEATURES])))
    hits = index.recommend("Slack.SendMessage", query_vector(0), 5).hits
    assert index.names[hits[0].index] == "Slack.SendMessage"


def test_what_the_stage_reads() -> None:
    assert task_shape("what's been said in #incidents?") == "question"
    assert task_shape("pls move my physio session to 4pm") == "update"
    assert task_shape("slack: post the deploy note in #eng") == "send"
    assert name_action("Slack.ListConversations") == ("list", "list")
    assert name_action("Github.WhoAmI")[1] == "read"
    assert parameters_of({"properties": {"query": {}, "limit": {}}, "required": ["query"]}) == (("query", "limit"), 1)
    assert parameters_of({"type": "object"}) == ((), 0)


def test_a_head_file_names_every_feature() -> None:
    with pytest.raises(ValueError, match="missing"):
        SiblingHead.from_json('{"weights": {"cosine": 1.0}}')
    assert SiblingHead.from_json(SHIPPED_HEAD.to_json()).weights.tolist() == SHIPPED_HEAD.weights.tolist()
