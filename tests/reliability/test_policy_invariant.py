"""Policy as an invariant: for any policy (gateways with patterns, pinned tools and a recommendation mode, user
allow/deny rules, connections, an API key scoped or not), no entry point reveals or runs a tool the caller may not
use, and a disallowed tool never takes a result slot.

One app (real index, real embedder, real executors behind a recording wrapper) answers every example; only the
policy changes, through the file store's own lookups over an in-memory document. The expected sets are computed
here from the pattern rules in plain Python, independently of the service's mask code.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from starlette.testclient import TestClient

from handler.app import create_app
from handler.catalog.names import listed_name
from handler.execute.base import ToolCall, ToolExecutor
from handler.execute.registry import default_executors
from handler.index.holder import IndexHolder
from handler.index.store import LocalIndexStore
from handler.policy.file_store import FilePolicyStore
from handler.policy.keys import hash_key
from handler.policy.model import AccessRule, ApiKeyRecord, Connection, Gateway, PolicyDocument
from handler.ranking.query import Embedder
from tests.support.gateway_app import Backends, Prepared, catalog, prepare_for
from tests.support.policy_strategies import matches, spellings, tool_patterns
from tests.support.serving import file_settings, full_answer_size

TOOLS = catalog("http://w", "http://u", "http://d")
TOOL_NAMES = [t.name for t in TOOLS]
APP_OF = {t.name: t.app for t in TOOLS}
APPS = sorted(set(APP_OF.values()))
CATALOG_NAME = {name.lower().replace("_", "."): name for name in TOOL_NAMES}  # a caller's spelling -> the tool
USER, OTHER = "pat", "someone-else"
KEY = "trk_policy-invariant-key"
GATEWAYS = ("g1", "g2", "g3")
META = ["Toolrec_SelectTools", "Toolrec_UseTool", "Toolrec_ListApps"]
# Valid inputs, so an allowed call really runs; RunQuarterlyReport (a deliberately slow worker) is left out.
INPUTS: dict[str, dict[str, Any]] = {
    "Weather.GetForecast": {"city": "oslo"},
    "Calculator.AddNumbers": {"a": 1, "b": 2},
    "Text.Shout": {"text": "hi"},
    "Printer.PrintDocument": {"printer": "p1"},
    "Archive.FetchRecord": {"a": 1, "b": 2},
    "Slack.SendMessage": {"channel_name": "ops", "text": "hi"},
    "Admin.DeleteUser": {"user": "mallory"},
}
EXAMPLES = 500


class InMemoryPolicy(FilePolicyStore):
    """The file store's lookups over a document held in memory, so each example swaps the policy instantly."""

    def __init__(self, directory: Path) -> None:
        super().__init__(directory / "policy.json")  # never read; the query log is appended next to it
        self.current = PolicyDocument()

    def document(self) -> PolicyDocument:
        return self.current


@dataclass
class RecordingExecutors:
    """The real executors, with every call that reaches one recorded (what a policy bug would let through)."""

    inner: dict[str, ToolExecutor]
    calls: list[str] = field(default_factory=list)

    def by_kind(self) -> dict[str, ToolExecutor]:
        return {kind: _Recorder(executor, self.calls) for kind, executor in self.inner.items()}


@dataclass
class _Recorder:
    inner: ToolExecutor
    calls: list[str]

    async def call(self, call: ToolCall) -> Any:
        self.calls.append(call.tool.name)
        return await self.inner.call(call)


@dataclass
class Harness:
    client: TestClient
    policy: InMemoryPolicy
    recorder: RecordingExecutors
    holder: IndexHolder
    embedder: Embedder

    def expected_count(self, task: str, allowed: frozenset[str], top_k: int) -> int:
        return full_answer_size(self.holder.current().ranking, self.embedder, task, allowed, top_k)


@pytest.fixture(scope="module")
def harness(backends: Backends, embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Harness]:
    prepared: Prepared = prepare_for(tmp_path_factory.mktemp("policy-invariant"), embedder, backends)
    settings_ = file_settings(str(prepared.index_dir), prepared.policy_file, prepared.root / "cache")
    holder = IndexHolder(LocalIndexStore(prepared.index_dir), prepared.root / "cache", embedder.fingerprint, 3600)
    holder.load()
    policy = InMemoryPolicy(prepared.root)
    recorder = RecordingExecutors(default_executors())
    app = create_app(
        settings_, index_holder=holder, embedder=embedder, policy_store=policy, executors=recorder.by_kind()
    )
    with TestClient(app, headers={"Authorization": f"Bearer {KEY}"}) as client:
        yield Harness(client, policy, recorder, holder, embedder)


def user_allowed(rules: Sequence[AccessRule]) -> set[str]:
    mine = [r for r in rules if r.subject in (USER, "*")]
    return {
        name
        for name in TOOL_NAMES
        if any(matches(p, name) for r in mine if r.effect == "allow" for p in r.tools)
        and not any(matches(p, name) for r in mine if r.effect == "deny" for p in r.tools)
    }


def in_gateway(gateway: Gateway | None) -> set[str]:
    return (
        set(TOOL_NAMES) if gateway is None else {n for n in TOOL_NAMES if any(matches(p, n) for p in gateway.allowed)}
    )


patterns = tool_patterns(APPS, TOOL_NAMES, misses=["Nope.*", "Slack.NoSuchTool", "Slack"])
pin_lists = st.lists(
    st.sampled_from([*TOOL_NAMES, "Slack.NoSuchTool"]).flatmap(spellings),
    max_size=4,
    unique_by=lambda name: name.lower().replace("_", "."),
)
gateway_lists = st.lists(
    st.builds(
        lambda gid, allowed, mode, pinned: Gateway(
            gateway_id=gid, allowed=tuple(allowed), recommendation=mode, pinned=tuple(pinned)
        ),
        st.sampled_from(GATEWAYS),
        st.lists(patterns, max_size=4),
        st.sampled_from(["on", "off", "auto"]),
        pin_lists,
    ),
    max_size=3,
    unique_by=lambda g: g.gateway_id,
)
rule_lists = st.lists(
    st.builds(
        lambda i, subject, effect, tools: AccessRule(
            rule_id=f"r{i}", subject=subject, effect=effect, tools=tuple(tools)
        ),
        st.integers(0, 99),
        st.sampled_from([USER, "*", OTHER]),
        st.sampled_from(["allow", "allow", "deny"]),
        st.lists(patterns, min_size=1, max_size=3),
    ),
    max_size=5,
)
connection_lists = st.lists(
    st.builds(
        lambda app, connected, scopes: Connection(user_id=USER, app_id=app, connected=connected, scopes=tuple(scopes)),
        st.sampled_from(APPS),
        st.booleans(),
        st.lists(st.sampled_from(["chat:write", "channels:read"]), max_size=2),
    ),
    max_size=3,
    unique_by=lambda c: c.app_id,
)


@st.composite
def policies(draw: st.DrawFn) -> PolicyDocument:
    gateways = draw(gateway_lists)
    scope = draw(st.none() | st.sampled_from(GATEWAYS))
    return PolicyDocument(
        gateways=gateways,
        access_rules=draw(rule_lists),
        connections=draw(connection_lists),
        api_keys=[ApiKeyRecord(key_id="k", key_hash=hash_key(KEY), gateway_id=scope)],
    )


@dataclass(frozen=True)
class Expect:
    """What one request under this policy may see: a refusal status, or the tools it may use."""

    status: int
    allowed: frozenset[str] = frozenset()
    gateway: Gateway | None = None


def expect(policy: PolicyDocument, requested: str | None) -> Expect:
    scope = policy.api_keys[0].gateway_id
    if scope is not None and requested is not None and requested != scope:
        return Expect(403)
    gateway_id = scope or requested
    gateway = next((g for g in policy.gateways if g.gateway_id == gateway_id), None)
    if gateway_id is not None and gateway is None:
        return Expect(404)
    return Expect(200, frozenset(user_allowed(policy.access_rules) & in_gateway(gateway)), gateway)


def rpc(h: Harness, gateway_id: str, method: str, params: dict[str, Any] | None = None) -> Any:
    message = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params or {}}
    return h.client.post(f"/mcp/{gateway_id}", json=message, headers={"X-Toolrec-User": USER})


def check_rest(h: Harness, policy: PolicyDocument, requested: str | None, task: str, top_k: int) -> None:
    want = expect(policy, requested)
    body = {"user_id": USER, "gateway_id": requested}
    selected = h.client.post("/v1/tools/select", json={**body, "tasks": [task], "top_k": top_k})
    searched = h.client.post("/v1/tools/search", json={**body, "query": task, "top_k": top_k})
    assert selected.status_code == searched.status_code == want.status, selected.text
    if want.status == 200:
        names = [s["tool_name"] for s in selected.json()["results"][0]["suggestions"]]
        assert set(names) <= want.allowed
        assert len(names) == h.expected_count(task, want.allowed, top_k)  # no slot lost to a filtered-out tool
        assert {s["tool_name"] for s in searched.json()["results"]} <= want.allowed
    key_scope = expect(policy, None)
    apps = h.client.get("/v1/apps", params={"user_id": USER})
    assert apps.status_code == key_scope.status, apps.text
    if key_scope.status == 200:
        counts: dict[str, int] = {}
        for name in key_scope.allowed:
            counts[APP_OF[name]] = counts.get(APP_OF[name], 0) + 1
        assert {a["app_id"]: a["tool_count"] for a in apps.json()["apps"]} == counts


def check_mcp_listing(h: Harness, policy: PolicyDocument, gateway_id: str, task: str) -> Expect:
    want = expect(policy, gateway_id)
    listed = rpc(h, gateway_id, "tools/list")
    assert listed.status_code == want.status, listed.text
    if want.status != 200:
        return want
    assert want.gateway is not None
    names = [t["name"] for t in listed.json()["result"]["tools"]]
    if want.gateway.recommendation == "on":  # auto lists directly: the catalog has fewer than 25 tools
        # The pins the user may use, in the gateway's order, under their catalog names; no other tool.
        meant = [CATALOG_NAME.get(pin.lower().replace("_", ".")) for pin in want.gateway.pinned]
        assert names == META + [listed_name(name) for name in meant if name in want.allowed]
    else:
        assert sorted(names) == sorted(listed_name(n) for n in want.allowed)
    selected = rpc(h, gateway_id, "tools/call", {"name": "Toolrec_SelectTools", "arguments": {"tasks": [task]}})
    tools = [t["tool_name"] for t in selected.json()["result"]["structuredContent"]["results"][0]["tools"]]
    assert set(tools) <= want.allowed and len(tools) == h.expected_count(task, want.allowed, 5)
    return want


def check_runs(h: Harness, policy: PolicyDocument, gateway_id: str, want: Expect, tool: str) -> None:
    inputs = INPUTS[tool]
    if want.status == 200:
        for name, arguments in (
            ("Toolrec_UseTool", {"tool_name": tool, "inputs": inputs}),
            (listed_name(tool), inputs),
        ):
            before = len(h.recorder.calls)
            result = rpc(h, gateway_id, "tools/call", {"name": name, "arguments": arguments}).json()["result"]
            ran = h.recorder.calls[before:]
            if tool not in want.allowed:
                assert result["isError"] and result["structuredContent"]["error"]["name"] in {"forbidden", "not_found"}
                assert ran == []
            else:
                assert ran in ([], [tool])  # [] only when the app is not authorized for this user
    rest = expect(policy, None)
    before = len(h.recorder.calls)
    executed = h.client.post("/v1/tools/execute", json={"tool_name": tool, "input": inputs, "user_id": USER})
    ran = h.recorder.calls[before:]
    if rest.status != 200 or tool not in rest.allowed:
        assert executed.status_code in {403, 404} and ran == [], executed.text
        assert executed.json()["name"] in {"forbidden", "not_found"}
    else:
        assert executed.status_code in {200, 403}, executed.text
        assert ran == ([tool] if executed.status_code == 200 else [])


@settings(
    max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
@given(
    policy=policies(),
    requested=st.none() | st.sampled_from(GATEWAYS),
    mcp_gateway=st.sampled_from(GATEWAYS),
    task=st.sampled_from(["get the weather forecast", "add two numbers", "send a slack message", "delete a user"]),
    top_k=st.integers(1, 10),
    tool=st.sampled_from(sorted(INPUTS)),
)
def test_no_entry_point_reveals_or_runs_a_disallowed_tool(
    harness: Harness,
    policy: PolicyDocument,
    requested: str | None,
    mcp_gateway: str,
    task: str,
    top_k: int,
    tool: str,
) -> None:
    harness.policy.current = policy
    check_rest(harness, policy, requested, task, top_k)
    want = check_mcp_listing(harness, policy, mcp_gateway, task)
    check_runs(harness, policy, mcp_gateway, want, tool)
