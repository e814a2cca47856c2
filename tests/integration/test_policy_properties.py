"""Property: for any gateway and access rules, select and search never return a tool the user may not use,
and a disallowed tool never takes a slot (each answer is as full as the allowed tools permit); a gateway's pins
never widen that, and the pins a user is shown are exactly the pinned tools they may use, in the gateway's order.

The expected allowed set is computed here from the pattern rules in plain Python, independently of the
service's mask code; the index is the real demo build with the real embedder.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from build_index.build import embed_texts, index_tools
from build_index.model_prepare import MODEL_ID
from build_index.publish import publish
from build_index.usage.fold import ExecutionGroup, UsageLog, fold_usage
from handler.index.holder import IndexHolder
from handler.index.store import LocalIndexStore
from handler.inference.embedder import OnnxEmbedder
from handler.policy.model import (
    AccessRule,
    ApiKeyRecord,
    AppInfo,
    Connection,
    ExecutionRecord,
    Gateway,
    Principal,
    QueryRecord,
)
from handler.services.access import AccessPolicy
from handler.services.select import ToolFinder
from tests.support.policy_strategies import matches, spellings, tool_patterns
from tests.support.serving import demo_tools, full_answer_size

TOOL_NAMES = [t.name for t in demo_tools()]
APPS = sorted({name.split(".")[0] for name in TOOL_NAMES})
USER = "u"
TASKS = ["send a message to the team", "refund a payment", "create an issue", "weather tomorrow", "list files"]
# A caller's spelling -> the catalog name it means (case and '.'/'_' do not matter, as in every lookup by name).
CATALOG_NAME = {name.lower().replace("_", "."): name for name in TOOL_NAMES}


class MemoryPolicy:
    """A PolicyStore fake holding one gateway and a rule list in memory."""

    def __init__(self, gateway: Gateway | None, rules: Sequence[AccessRule]) -> None:
        self._gateway, self._rules = gateway, list(rules)
        self.queries: list[QueryRecord] = []

    def gateway(self, gateway_id: str) -> Gateway | None:
        return self._gateway if self._gateway and self._gateway.gateway_id == gateway_id else None

    def gateway_ids(self) -> Sequence[str]:
        return [] if self._gateway is None else [self._gateway.gateway_id]

    def access_rules(self, user_id: str) -> Sequence[AccessRule]:
        return [r for r in self._rules if r.subject in (user_id, "*")]

    def apps(self) -> Sequence[AppInfo]:
        return []

    def connections(self, user_id: str) -> Sequence[Connection]:
        return []

    def api_key(self, key_hash: str) -> ApiKeyRecord | None:
        return None

    def put_query(self, record: QueryRecord) -> None:
        self.queries.append(record)

    def get_query(self, query_id: str) -> QueryRecord | None:
        return None

    def record_execution(self, query_id: str, execution: ExecutionRecord) -> None:
        return None


def expected_allowed(gateway: Gateway | None, rules: Sequence[AccessRule]) -> set[str]:
    mine = [r for r in rules if r.subject in (USER, "*")]
    allowed = set()
    for name in TOOL_NAMES:
        permitted = any(matches(p, name) for r in mine if r.effect == "allow" for p in r.tools)
        denied = any(matches(p, name) for r in mine if r.effect == "deny" for p in r.tools)
        in_gateway = gateway is None or any(matches(p, name) for p in gateway.allowed)
        if permitted and not denied and in_gateway:
            allowed.add(name)
    return allowed


patterns = tool_patterns(APPS, TOOL_NAMES, misses=["Nope.*", "Slack.NoSuchTool"])
pins = st.lists(
    st.one_of(
        st.sampled_from(TOOL_NAMES).flatmap(spellings),
        st.just("Slack.NoSuchTool"),  # a pin the build does not hold (its tool was removed)
    ),
    max_size=4,
    unique_by=lambda name: name.lower().replace("_", "."),
)
pinned_gateways = st.builds(
    lambda allowed, pinned: Gateway(gateway_id="g", allowed=tuple(allowed), pinned=tuple(pinned)),
    st.lists(patterns, min_size=0, max_size=4),
    pins,
)
gateways = st.one_of(st.none(), pinned_gateways)
rules = st.lists(
    st.builds(
        lambda i, subject, effect, tools: AccessRule(
            rule_id=f"r{i}", subject=subject, effect=effect, tools=tuple(tools)
        ),
        st.integers(0, 99),
        st.sampled_from([USER, "*", "someone-else"]),
        st.sampled_from(["allow", "allow", "deny"]),
        st.lists(patterns, min_size=1, max_size=3),
    ),
    max_size=5,
)


# A warm index's usage ties every task to tools of several apps, so usage would surface a filtered-out tool if
# the policy did not come first.
USAGE = [ExecutionGroup(task, tuple(TOOL_NAMES[i :: len(TOOL_NAMES) // 4][:4])) for i, task in enumerate(TASKS)]


@pytest.fixture(scope="module", params=["cold", "warm"])
def holder(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, embedder: OnnxEmbedder
) -> IndexHolder:
    directory = tmp_path_factory.mktemp("index")
    built = index_tools(demo_tools(), embedder, MODEL_ID, progress=False)
    if request.param == "warm":
        built = replace(
            built, usage=fold_usage(UsageLog(USAGE), TOOL_NAMES, lambda texts: embed_texts(texts, embedder), "test")
        )
    publish(built, str(directory))
    holder = IndexHolder(LocalIndexStore(Path(directory)), directory / "cache", embedder.fingerprint, 3600)
    holder.load()
    assert (holder.current().ranking.usage is not None) is (request.param == "warm")
    return holder


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gateway=gateways, rule_list=rules, task=st.sampled_from(TASKS), top_k=st.integers(1, 20))
def test_select_and_search_only_return_allowed_tools(
    holder: IndexHolder,
    embedder: OnnxEmbedder,
    gateway: Gateway | None,
    rule_list: list[AccessRule],
    task: str,
    top_k: int,
) -> None:
    store = MemoryPolicy(gateway, rule_list)
    finder = ToolFinder(holder, embedder, AccessPolicy(store), store)
    allowed = expected_allowed(gateway, rule_list)
    gateway_id = gateway.gateway_id if gateway else None
    caller = AccessPolicy(store).caller(Principal(key_id="k"), USER, gateway_id)

    selection = finder.select(caller, [task], None, top_k)
    selected = [t.name for t in selection.results[0].tools]
    assert set(selected) <= allowed
    index = holder.current().ranking
    assert len(selected) == full_answer_size(index, embedder, task, allowed, top_k)  # no slot lost to a filtered tool

    found = [t.name for t in finder.search(caller, task, top_k)]
    scores = index.bm25.score(index.analyzer(task))
    ranked = sorted(
        (i for i, name in enumerate(TOOL_NAMES) if name in allowed and scores[i] > 0), key=lambda i: (-scores[i], i)
    )
    assert found == [TOOL_NAMES[i] for i in ranked[:top_k]]
    assert np.isfinite(scores).all()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gateway=pinned_gateways, rule_list=rules)
def test_the_pins_listed_are_the_pinned_tools_the_user_may_use(
    holder: IndexHolder, gateway: Gateway, rule_list: list[AccessRule]
) -> None:
    table = holder.current().table
    listed = [table.names[i] for i in AccessPolicy(MemoryPolicy(gateway, rule_list)).listed_pins(table, USER, gateway)]
    allowed = expected_allowed(gateway, rule_list)
    meant = [CATALOG_NAME.get(pin.lower().replace("_", ".")) for pin in gateway.pinned]
    assert listed == [name for name in meant if name in allowed]
