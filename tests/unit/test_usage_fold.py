"""Learning from use, build side: which executions count as evidence, and the caps that bound them."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from build_index.usage.evidence import (
    EVIDENCE_SPAN,
    KEYS_PER_EVIDENCE,
    TASKS_PER_HOUR_PER_TOOL,
    TASKS_PER_KEY_PER_TOOL,
    TASKS_PER_TOOL,
    TASKS_PER_USER_PER_TOOL,
    past_tasks_by_tool,
    unused_evidence_note,
)
from build_index.usage.fold import (
    ExecutionGroup,
    UsageLog,
    fit_classifier,
    fold_usage,
    groups_from_benchmark,
    groups_from_queries,
    read_usage,
)
from handler.errors import CatalogError
from handler.policy.file_store import FilePolicyStore, read_query_log, write_document
from handler.policy.model import ExecutionRecord, QueryRecord

NOW = datetime(2026, 12, 1, tzinfo=UTC)
NAMES = ["Slack.SendMessage", "Slack.ListChannels", "GitHub.CreateIssue", "Jira.CreateIssue"]


def fake_vector(text: str) -> np.ndarray:
    """A deterministic unit vector per text (the fold never compares texts, it only averages their vectors)."""
    rng = np.random.default_rng(int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big"))
    vector = rng.normal(size=32).astype(np.float32)
    return vector / np.linalg.norm(vector)


def fake_embed(texts: Sequence[str]) -> np.ndarray:
    return np.stack([fake_vector(t) for t in texts])


def record(
    query_id: str,
    tasks: list[str],
    recommended: list[list[str]],
    ran: list[tuple[str, str]],
    key: str | None = "k1",
    at: datetime = NOW,
) -> QueryRecord:
    return QueryRecord(
        query_id=query_id,
        user_id="ada",
        key_id=key,
        tasks=tuple(tasks),
        recommended=tuple(tuple(r) for r in recommended),
        created_at=at,
        expires_at=int((NOW + timedelta(days=30)).timestamp()),
        executions=tuple(ExecutionRecord(tool_name=t, user_id="ada", key_id=key, at=at, outcome=o) for t, o in ran),
    )


def test_only_successful_suggested_executions_are_evidence_and_the_rest_is_counted() -> None:
    log = groups_from_queries(
        [
            record(
                "q1",
                ["tell the team", "file the bug"],
                [["Slack.SendMessage"], ["GitHub.CreateIssue", "Jira.CreateIssue"]],
                [
                    ("Slack.SendMessage", "ok"),
                    ("GitHub.CreateIssue", "ok"),
                    ("Jira.CreateIssue", "ok"),
                    ("Slack.ListChannels", "ok"),  # never suggested: the agent found it another way
                    ("Slack.SendMessage", "error"),
                ],
            )
        ],
        NOW.timestamp(),
    )
    assert [(g.task, g.tools) for g in log.groups] == [
        ("tell the team", ("Slack.SendMessage",)),
        ("file the bug", ("GitHub.CreateIssue", "Jira.CreateIssue")),
    ]
    assert log.ignored == {"not_suggested": 1, "failed": 1}


def test_expired_records_are_not_read() -> None:
    old = record("q1", ["tell the team"], [["Slack.SendMessage"]], [("Slack.SendMessage", "ok")])
    later = old.expires_at + 1
    log = groups_from_queries([old], later)
    assert log.groups == []
    assert log.ignored == {"expired": 1}


def test_a_burst_of_the_same_task_is_one_past_task_and_one_user_gives_at_most_a_few() -> None:
    burst = [ExecutionGroup("send the standup notes", ("Slack.SendMessage",), "mallory", NOW)] * 500
    many = [
        ExecutionGroup(f"fake task number {i}", ("Slack.SendMessage",), "mallory", NOW - timedelta(minutes=i))
        for i in range(50)
    ]
    others = [
        ExecutionGroup(f"real task {i}", ("Slack.SendMessage",), f"user{i}", NOW - timedelta(days=1, minutes=i))
        for i in range(TASKS_PER_TOOL + 10)
    ]
    groups: list[tuple[ExecutionGroup, tuple[int, ...]]] = [(g, (0,)) for g in [*burst, *many, *others]]
    (kept,) = past_tasks_by_tool(groups).values()
    # mallory's 550 executions are the newest, yet give TASKS_PER_USER_PER_TOOL past tasks (the burst is one); the
    # rest are other users' tasks, newest first, up to TASKS_PER_TOOL.
    mallory = ["send the standup notes", *[f"fake task number {i}" for i in range(TASKS_PER_USER_PER_TOOL - 1)]]
    assert kept == [*mallory, *[f"real task {i}" for i in range(TASKS_PER_TOOL - TASKS_PER_USER_PER_TOOL)]]
    arrays, summary = fold_usage(UsageLog([*burst, *many, *others]), NAMES, fake_embed, "test")
    assert arrays.past_task_tools.tolist() == [0]  # one row per tool: the mean of its past tasks
    mean = np.mean([fake_vector(t) for t in kept], axis=0)
    assert float(arrays.past_tasks.dequantize()[0] @ (mean / np.linalg.norm(mean))) > 0.998  # int8 rounding
    assert summary.past_task_rows == summary.distinct_tasks == TASKS_PER_TOOL
    assert summary.tools_with_usage == 1
    # The classifier learns from the same kept past tasks, not from the burst: mallory's 550 executions weigh 4 rows.
    expected = fit_classifier(fake_embed(kept), [list(range(len(kept)))])
    assert arrays.classifier is not None and summary.classifier
    np.testing.assert_allclose(arrays.classifier.dequantize(), expected, atol=float(arrays.classifier.scales[0]))


def test_the_classifier_scores_a_tool_high_for_its_own_tasks_and_low_for_anothers() -> None:
    """Two tools, each run for its own kind of task: a task of one kind scores its tool near 1 and the other near 0."""
    rng = np.random.default_rng(0)
    centers = rng.normal(size=(2, 32))
    tasks = np.concatenate([c + 0.3 * rng.normal(size=(20, 32)) for c in centers]).astype(np.float32)
    tasks /= np.linalg.norm(tasks, axis=1, keepdims=True)
    weights = fit_classifier(tasks[::2], [list(range(0, 10)), list(range(10, 20))])
    scores = tasks[1::2] @ weights.T  # the held-back tasks of each kind
    assert (scores[:10, 0] > scores[:10, 1] + 0.3).all() and (scores[10:, 1] > scores[10:, 0] + 0.3).all()
    assert fit_classifier(tasks, []).shape == (0, 32)


def test_co_usage_shares_count_distinct_groups() -> None:
    groups = [ExecutionGroup("triage", ("GitHub.CreateIssue", "Slack.SendMessage"))] * 100 + [
        ExecutionGroup("report", ("GitHub.CreateIssue",)),
        ExecutionGroup("report and tell", ("GitHub.CreateIssue", "Jira.CreateIssue")),
    ]
    arrays, _ = fold_usage(UsageLog(groups), NAMES, fake_embed, "test")
    github = NAMES.index("GitHub.CreateIssue")
    start, end = arrays.co_indptr[github], arrays.co_indptr[github + 1]
    companions = dict(zip(arrays.co_tools[start:end].tolist(), arrays.co_shares[start:end].tolist(), strict=True))
    # GitHub.CreateIssue ran in 3 distinct groups: once with Slack, once with Jira (the burst of 100 counts once).
    assert companions == pytest.approx({0: 1 / 3, 3: 1 / 3})


def test_query_log_evidence_is_counted_per_key_and_needs_several_keys() -> None:
    """Issue 22 item 6: a key names whatever user_id it likes, so the query log's evidence is counted per key. One
    key's runs (40 tasks, 40 users) are no evidence until KEYS_PER_EVIDENCE keys ran the tool, and then at most
    TASKS_PER_KEY_PER_TOOL of its tasks; a run linked to another key's select, or logged without a key, never."""
    assert KEYS_PER_EVIDENCE == 3
    slack = [["Slack.SendMessage"]], [("Slack.SendMessage", "ok")]
    burst = [record(f"m{i}", [f"send the notes {i}"], *slack, "mallory", NOW - timedelta(hours=i)) for i in range(40)]
    burst = [r.model_copy(update={"user_id": f"user{i}"}) for i, r in enumerate(burst)]
    unkeyed = record("old", ["tell the team"], [["Slack.SendMessage"]], [("Slack.SendMessage", "ok")], key=None)
    borrowed = record("b", ["file the bug"], [["GitHub.CreateIssue"]], [("GitHub.CreateIssue", "ok")], "k1")
    borrowed = borrowed.model_copy(update={"executions": (borrowed.executions[0].model_copy(update={"key_id": "m"}),)})
    alone = groups_from_queries([*burst, unkeyed, borrowed], NOW.timestamp())
    _, summary = fold_usage(alone, NAMES, fake_embed, "test")
    assert summary.tools_with_usage == 0
    assert summary.ignored == {"no_key": 1, "other_key": 1, "too_few_keys": 40}

    vouched = [record(k, ["tell the team"], *slack, k, NOW - timedelta(days=3 + i)) for i, k in enumerate("ab")]
    _, summary = fold_usage(groups_from_queries([*burst, *vouched], NOW.timestamp()), NAMES, fake_embed, "test")
    assert summary.tools_with_usage == 1 and summary.past_task_rows == TASKS_PER_KEY_PER_TOOL + 1


def test_a_pair_counts_as_co_used_once_several_keys_ran_it_together() -> None:
    both = ("Slack.SendMessage", "GitHub.CreateIssue")
    days = [NOW - timedelta(days=d) for d in range(3)]  # the query log's evidence spans at least a day
    apart = [ExecutionGroup("ping", (tool,), None, days[d], f"k{d + 1}") for tool in both for d in range(3)]
    together = [ExecutionGroup("triage", both, None, days[d], k) for d, k in enumerate(("mallory", "k1", "k2"))]
    slack = NAMES.index("Slack.SendMessage")
    for groups, companions in [(apart + together[:1], 0), (apart + together[:2], 0), (apart + together, 1)]:
        arrays, _ = fold_usage(UsageLog(groups), NAMES, fake_embed, "test")
        assert int(arrays.co_indptr[slack + 1] - arrays.co_indptr[slack]) == companions, len(groups)


def burst(keys: Sequence[str], start: datetime, tool: str = "Slack.SendMessage") -> list[QueryRecord]:
    """Issue 33 item 4's probe, in the query log: each key asks for one task in four wordings of its own, for each
    of four users, and runs the tool after each select; a second apart."""
    records = []
    for k, key in enumerate(keys):
        for n in range(16):
            user, wording = n // 4, f"send the standup notes to the team, wording {k * 4 + n % 4}"
            at = start + timedelta(seconds=len(records))
            ran = record(f"{key}-{n}", [wording], [[tool]], [(tool, "ok")], key, at)
            execution = ran.executions[0].model_copy(update={"user_id": f"u{user}"})
            records.append(ran.model_copy(update={"user_id": f"u{user}", "executions": (execution,)}))
    return records


def test_a_burst_from_several_keys_is_one_piece_of_evidence() -> None:
    """Issue 33 item 4: three keys, 48 linked runs in under a minute. Together they are one piece of evidence: a tool
    learns from the query log once its runs span EVIDENCE_SPAN, and one clock hour gives at most
    TASKS_PER_HOUR_PER_TOOL of its past tasks, whatever keys ran in it."""
    assert timedelta(days=1) == EVIDENCE_SPAN and TASKS_PER_HOUR_PER_TOOL == 4
    probe = burst(["m1", "m2", "m3"], NOW)
    _, summary = fold_usage(groups_from_queries(probe, NOW.timestamp()), NAMES, fake_embed, "test")
    assert summary.tools_with_usage == 0 and summary.ignored == {"within_a_day": 48}
    assert summary.classifier  # and so the classifier has no class for the tool either
    note = unused_evidence_note(summary.ignored)
    assert note is not None and "48 run(s) not used yet" in note and "--single-operator" in note

    # Spread over two days, the same runs are evidence; the burst's hour still gives only TASKS_PER_HOUR_PER_TOOL
    # of its 12 distinct wordings (the per-key and per-user bounds alone would keep 12).
    earlier = record("e", ["tell the team the deploy is done"], [["Slack.SendMessage"]], [("Slack.SendMessage", "ok")],
                     "k9", NOW - timedelta(days=2))  # fmt: skip
    log = groups_from_queries([earlier, *probe], NOW.timestamp())
    _, summary = fold_usage(log, NAMES, fake_embed, "test")
    assert summary.tools_with_usage == 1 and summary.past_task_rows == 1 + TASKS_PER_HOUR_PER_TOOL
    assert summary.ignored == {}


def test_single_operator_reads_a_local_query_log_as_the_operators_own_runs(tmp_path: Path) -> None:
    """Issue 34 item 5: on a machine only its operator uses, one key's query log teaches, burst or not; the flag is
    refused for anything but a local query log (a deployment's DynamoDB log is many keys')."""
    from build_index.ops.serve import demo_policy

    policy = tmp_path / "policy.json"
    write_document(policy, demo_policy())
    store = FilePolicyStore(policy, clock=NOW.timestamp)
    for query in burst(["me"], NOW):
        store.put_query(query.model_copy(update={"executions": ()}))
        store.record_execution(query.query_id, query.executions[0])
    source = str(store.query_log_path)
    _, summary = fold_usage(read_usage(source, NOW.timestamp()), NAMES, fake_embed, "test")
    assert summary.tools_with_usage == 0 and summary.ignored == {"too_few_keys": 16}
    _, summary = fold_usage(read_usage(source, NOW.timestamp(), single_operator=True), NAMES, fake_embed, "test")
    assert summary.tools_with_usage == 1 and summary.ignored == {}
    assert summary.past_task_rows == 4  # four wordings: the per-user bound is kept, the others are a key's
    for other in ("dynamodb:toolrec-queries", str(tmp_path / "usage.jsonl")):
        with pytest.raises(CatalogError, match="--single-operator counts a local query log"):
            read_usage(other, NOW.timestamp(), single_operator=True)


def test_unknown_tools_are_dropped_and_counted() -> None:
    log = UsageLog([ExecutionGroup("old task", ("Retired.Tool", "Slack.SendMessage"))])
    arrays, summary = fold_usage(log, NAMES, fake_embed, "test")
    assert arrays.past_task_tools.tolist() == [0]
    assert summary.ignored == {"unknown_tool": 1}


def test_benchmark_format_and_its_errors(tmp_path: Path) -> None:
    path = tmp_path / "usage.jsonl"
    path.write_text(json.dumps({"query": "tell the team", "relevant": ["Slack.SendMessage"]}) + "\n\n")
    assert groups_from_benchmark(path).groups == [ExecutionGroup("tell the team", ("Slack.SendMessage",))]
    path.write_text(json.dumps({"query": "tell the team", "relevant": "Slack.SendMessage"}) + "\n")
    with pytest.raises(CatalogError, match=r"usage.jsonl:1: relevant must be a list"):
        groups_from_benchmark(path)
    with pytest.raises(CatalogError, match="no usage source"):
        read_usage(str(tmp_path / "missing.jsonl"), NOW.timestamp())


def test_the_local_query_log_reads_back_as_the_store_recorded_it(tmp_path: Path) -> None:
    from build_index.ops.serve import demo_policy

    policy = tmp_path / "policy.json"
    write_document(policy, demo_policy())
    store = FilePolicyStore(policy, clock=NOW.timestamp)
    query = record("q1", ["tell the team"], [["Slack.SendMessage"]], [])
    store.put_query(query)
    execution = ExecutionRecord(tool_name="Slack.SendMessage", user_id="ada", key_id="k1", at=NOW, outcome="ok")
    store.record_execution("q1", execution)
    with store.query_log_path.open("a") as log:
        log.write('{"kind": "query", "record": {"query_id": "cut sh')  # a crash mid-line
    (back,) = read_query_log(store.query_log_path)
    assert back.query_id == "q1" and [e.tool_name for e in back.executions] == ["Slack.SendMessage"]
    usage = read_usage(str(store.query_log_path), NOW.timestamp())
    assert [(g.task, g.tools, g.user_id, g.key_id) for g in usage.groups] == [
        ("tell the team", ("Slack.SendMessage",), "ada", "k1")
    ]
