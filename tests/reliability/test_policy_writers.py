"""Concurrent policy writers lose nothing (issue 15 item 2): many `toolrec policy` processes at once against one
policy file keep every change (a lost revocation is a security bug), a reader never sees half a file, and query-log
appends from several processes never interleave. The DynamoDB store keeps both of two interleaved writers' changes."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from handler.errors import PolicyUnavailableError
from handler.policy import AccessRule, ApiKeyRecord, ExecutionRecord, QueryRecord
from handler.policy.dynamodb_schema import create_tables
from handler.policy.dynamodb_store import DynamoPolicyStore, TableNames
from handler.policy.file_store import FilePolicyStore, query_log_file
from handler.policy.keys import hash_key

REPO_ROOT = Path(__file__).resolve().parents[2]
TRIALS = 3
# Each writer imports the CLI first and then waits for one shared start time, so the writes really overlap
# (interpreter start-up alone spreads 12 processes over more than the write takes).
LAUNCHER = (
    "import sys, time\n"
    "from build_index.cli import main\n"
    "time.sleep(max(0.0, float(sys.argv[1]) - time.time()))\n"
    "sys.exit(main(sys.argv[2:]))\n"
)
REVOKED = "trk_revoked-before-the-race"


def _writer_commands(path: Path) -> list[list[str]]:
    base = ["policy", "--file", str(path)]
    rules = [
        [*base, "rule", "put", "--subject", "*", "--rule-id", f"deny-{i}", "--effect", "deny", "--tools", f"App{i}.*"]
        for i in range(6)
    ]
    keys = [[*base, "key", "create", "--key", f"trk_created-in-race-{i}", "--key-id", f"k{i}"] for i in range(3)]
    connections = [[*base, "connection", "put", f"user-{i}", "Slack", "--scope", "chat:write"] for i in range(2)]
    return [*rules, *keys, [*base, "key", "revoke", REVOKED], *connections]


def _start_writers(commands: list[list[str]]) -> list[subprocess.Popen[str]]:
    start_at = f"{time.time() + 2.0:.3f}"  # after every interpreter has imported the CLI
    return [
        subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, start_at, *command],
            cwd=REPO_ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for command in commands
    ]


def _read_while(path: Path, stop: threading.Event, failures: list[str]) -> None:
    """A serving process's reader: every read sees a whole file (the old one or the new one)."""
    reader = FilePolicyStore(path)
    while not stop.is_set():
        try:
            reader.document()
        except PolicyUnavailableError as exc:
            failures.append(str(exc))
        time.sleep(0.001)


@pytest.mark.slow
@pytest.mark.parametrize("trial", range(TRIALS))
def test_concurrent_policy_commands_keep_every_change(tmp_path: Path, trial: int) -> None:
    path = tmp_path / "policy.json"
    seed = FilePolicyStore(path)
    seed.put_rule(AccessRule(rule_id="everyone", subject="*", effect="allow", tools=("*",)))
    seed.put_api_key(ApiKeyRecord(key_id="old", key_hash=hash_key(REVOKED), gateway_id=None))

    stop, read_failures = threading.Event(), []
    reader = threading.Thread(target=_read_while, args=(path, stop, read_failures), daemon=True)
    reader.start()
    processes = _start_writers(_writer_commands(path))
    try:
        results = [(p.communicate(timeout=60)[1], p.returncode) for p in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.communicate()
        stop.set()
        reader.join(timeout=10)
    assert [rc for _, rc in results] == [0] * len(processes), [err for err, _ in results]

    document = FilePolicyStore(path).document()
    assert sorted(r.rule_id for r in document.access_rules) == sorted(["everyone", *(f"deny-{i}" for i in range(6))])
    assert sorted(k.key_id for k in document.api_keys) == ["k0", "k1", "k2"], "a lost revocation or a lost key"
    assert sorted(c.user_id for c in document.connections) == ["user-0", "user-1"]
    assert read_failures == []


class _BigRecord:
    """Query records with a task longer than one write buffer (8 KiB), so a split write would show."""

    @staticmethod
    def make(writer: int, n: int) -> QueryRecord:
        return QueryRecord(
            query_id=f"w{writer}-{n}",
            user_id="ana",
            gateway_id="default",
            tasks=(f"{writer}" * 20_000,),
            recommended=((),),
            created_at=datetime.now(UTC),
            expires_at=int(time.time()) + 3600,
        )


APPENDER = (
    "import sys, time\n"
    "from pathlib import Path\n"
    "from handler.policy.file_store import FilePolicyStore\n"
    "from tests.reliability.test_policy_writers import _BigRecord\n"
    "store = FilePolicyStore(Path(sys.argv[2]))\n"
    "writer = int(sys.argv[3])\n"
    "time.sleep(max(0.0, float(sys.argv[1]) - time.time()))\n"
    "for n in range(int(sys.argv[4])):\n"
    "    store.put_query(_BigRecord.make(writer, n))\n"
)


@pytest.mark.slow
def test_query_log_appends_from_several_processes_never_interleave(tmp_path: Path) -> None:
    path, writers, per_writer = tmp_path / "policy.json", 4, 60
    start_at = f"{time.time() + 2.0:.3f}"
    processes = [
        subprocess.Popen([sys.executable, "-c", APPENDER, start_at, str(path), str(w), str(per_writer)], cwd=REPO_ROOT)
        for w in range(writers)
    ]
    try:
        assert [p.wait(timeout=60) for p in processes] == [0] * writers
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()
    lines = query_log_file(path).read_text(encoding="utf-8").splitlines()
    ids = sorted(json.loads(line)["record"]["query_id"] for line in lines)  # a torn line fails to parse here
    assert ids == sorted(f"w{w}-{n}" for w in range(writers) for n in range(per_writer))


TABLES = TableNames("policy", "connections", "api-keys", "query-log")


@pytest.fixture
def dynamo() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        create_tables(client, TABLES)
        yield client


class _Interleaving:
    """A client proxy that runs another writer's change just before this writer's first write reaches DynamoDB:
    the window where a read-modify-write loses the other change."""

    WRITES = frozenset({"put_item", "update_item", "delete_item"})

    def __init__(self, client: Any, other: Any) -> None:
        self._client, self._other = client, other
        self.exceptions = client.exceptions

    def __getattr__(self, name: str) -> Any:
        call = getattr(self._client, name)
        if name in self.WRITES and self._other is not None:
            other, self._other = self._other, None
            other()
        return call


def test_dynamodb_interleaved_execution_links_keep_both(dynamo: Any) -> None:
    plain = DynamoPolicyStore(dynamo, TABLES)
    plain.put_query(_BigRecord.make(0, 0).model_copy(update={"tasks": ("t",)}))
    first = ExecutionRecord(tool_name="Slack.SendMessage", user_id="ana", at=datetime.now(UTC), outcome="ok")
    second = first.model_copy(update={"tool_name": "Gmail.SendEmail"})
    racing = DynamoPolicyStore(_Interleaving(dynamo, lambda: plain.record_execution("w0-0", second)), TABLES)
    racing.record_execution("w0-0", first)
    record = plain.get_query("w0-0")
    assert record is not None
    assert sorted(e.tool_name for e in record.executions) == ["Gmail.SendEmail", "Slack.SendMessage"]


def test_dynamodb_interleaved_policy_writes_keep_both(dynamo: Any) -> None:
    plain = DynamoPolicyStore(dynamo, TABLES)
    plain.put_api_key(ApiKeyRecord(key_id="old", key_hash=hash_key(REVOKED), gateway_id=None))
    rule = AccessRule(rule_id="deny-0", subject="*", effect="deny", tools=("Stripe.*",))
    racing = DynamoPolicyStore(_Interleaving(dynamo, lambda: plain.put_rule(rule)), TABLES)
    racing.delete_api_key(hash_key(REVOKED))
    assert plain.api_key(hash_key(REVOKED)) is None
    assert [r.rule_id for r in plain.access_rules("*")] == ["deny-0"]
