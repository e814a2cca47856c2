"""``toolrec stats`` on a query log in DynamoDB (moto) and on the local one `toolrec serve` appends to: select
records written and executions linked through the real store, then the hit rate read back by the command."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import boto3
import pytest
from moto import mock_aws

from build_index import cli
from build_index.ops.stats import recommendation_stats, stats_report
from handler.policy.dynamodb_schema import create_tables
from handler.policy.dynamodb_store import DynamoPolicyStore, TableNames
from handler.policy.file_store import FilePolicyStore, write_document
from handler.policy.model import ExecutionRecord, PolicyDocument, QueryRecord

TABLES = TableNames("policy", "connections", "api-keys", "query-log")


def query(query_id: str, recommended: tuple[tuple[str, ...], ...], expires_in: int = 3600) -> QueryRecord:
    now = time.time()
    return QueryRecord(
        query_id=query_id,
        user_id="u",
        gateway_id=None,
        tasks=tuple(f"task {i}" for i in range(len(recommended))),
        recommended=recommended,
        created_at=datetime.fromtimestamp(now, UTC),
        expires_at=int(now) + expires_in,
    )


def ran(tool_name: str, outcome: str = "ok") -> ExecutionRecord:
    return ExecutionRecord(tool_name=tool_name, user_id="u", at=datetime.now(UTC), outcome=outcome)


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Iterator[DynamoPolicyStore]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    with mock_aws():
        client = boto3.client("dynamodb", region_name="eu-west-1")
        create_tables(client, TABLES)
        yield DynamoPolicyStore(client, TABLES)


def fill(store: DynamoPolicyStore | FilePolicyStore) -> None:
    store.put_query(query("q1", (("Slack.SendMessage", "Slack.ListChannels"), ("GitHub.CreateIssue",))))
    store.put_query(query("q2", (("Gmail.Send", "Slack.SendMessage"),)))
    store.put_query(query("q3", (("Weather.Get",),)))  # recommended, never followed
    store.put_query(query("old", (("Weather.Get",),), expires_in=-10))  # expired: TTL lags, stats must skip it
    store.record_execution("q1", ran("Slack.SendMessage"))  # rank 1
    store.record_execution("q1", ran("GitHub.CreateIssue", "executor_timeout"))  # rank 1 of task 2
    store.record_execution("q2", ran("Slack.SendMessage"))  # rank 2
    store.record_execution("q2", ran("Jira.CreateTicket"))  # not recommended: a miss
    store.record_execution("old", ran("Weather.Get"))


def assert_figures(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["stats", *args, "--json"]) == 0
    figures = json.loads(capsys.readouterr().out)
    assert figures["queries"] == 3 and figures["queries_followed"] == 2
    assert (figures["executions"], figures["hits"], figures["hits_at_1"]) == (4, 3, 2)
    assert figures["hit_rate"] == pytest.approx(0.75)
    assert figures["rank_counts"] == {"1": 2, "2": 1}
    assert figures["outcomes"] == {"ok": 3, "executor_timeout": 1}

    assert cli.main(["stats", *args]) == 0
    assert "recommended tool used    3 (75.0%)" in capsys.readouterr().out


def test_stats_command_reads_the_query_log(store: DynamoPolicyStore, capsys: pytest.CaptureFixture[str]) -> None:
    fill(store)
    assert_figures(["--table", TABLES.query_log], capsys)


def test_stats_command_reads_the_local_query_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / ".toolrec" / "policy.json"
    write_document(policy, PolicyDocument())
    fill(FilePolicyStore(policy))  # what a local server appends to .toolrec/policy.queries.jsonl
    assert_figures(["--policy", str(policy)], capsys)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TOOLREC_POLICY_FILE", raising=False)
    assert_figures([], capsys)  # the default: the log of ./.toolrec/policy.json, as `toolrec serve` left it
    assert cli.main(["stats", "--policy", str(tmp_path / "other.json")]) == 2
    assert "no query log at" in capsys.readouterr().err


def test_empty_log_has_no_rates() -> None:
    stats = recommendation_stats([])
    assert stats.hit_rate is None and stats.follow_rate is None
    assert "n/a" in stats_report(stats)


def test_unreachable_table_is_a_clear_error(store: DynamoPolicyStore, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["stats", "--table", "no-such-table"]) == 2
    assert "no-such-table" in capsys.readouterr().err
