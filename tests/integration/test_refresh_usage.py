"""``toolrec refresh --usage``: a tenant's index is rebuilt and published when its usage evidence changed, and only
then, keeping its tools' vectors; with a golden, the drift check runs on the new build before LATEST moves."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from build_index import cli
from build_index.drift import IndexEndpoint, read_queries, record, write_golden
from build_index.model_prepare import MODEL_ID
from build_index.ops.serve import DEMO_DIR, demo_policy
from build_index.refresh.run import DriftError, refresh
from handler.index.format import LATEST
from handler.index.store import LocalIndexStore, load_latest
from handler.policy.file_store import FilePolicyStore, write_document
from handler.policy.model import ExecutionRecord, QueryRecord
from handler.ranking.query import Embedder

QUERIES = Path(__file__).parents[2] / "infra" / "tenants" / "queries.txt"


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    out = tmp_path / "index"
    assert cli.main(["build", "--catalog", str(DEMO_DIR / "tools.jsonl"), "--out", str(out), "--quiet"]) == 0
    return out


def log_execution(store: FilePolicyStore, query_id: str, task: str, tool: str, expires_at: int) -> None:
    """The task run with the tool through three API keys on three days: the query log's evidence needs that many
    keys, over at least a day (build_index/usage/evidence.py KEYS_PER_EVIDENCE, EVIDENCE_SPAN), so this is three
    execution groups."""
    for days, key in enumerate(("k1", "k2", "k3")):
        now = datetime.now(UTC) - timedelta(days=days)
        record_ = QueryRecord(
            query_id=f"{query_id}-{key}",
            user_id="ada",
            key_id=key,
            tasks=(task,),
            recommended=((tool,),),
            created_at=now,
            expires_at=expires_at,
        )
        store.put_query(record_)
        execution = ExecutionRecord(tool_name=tool, user_id="ada", key_id=key, at=now, outcome="ok")
        store.record_execution(record_.query_id, execution)


def latest(index_dir: Path) -> str:
    return (index_dir / LATEST).read_text().strip()


def run_refresh(index_dir: Path, log: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    assert cli.main(["refresh", "--index", str(index_dir), "--usage", str(log), *extra]) == 0, capsys.readouterr().err
    return capsys.readouterr().out


def test_refresh_publishes_when_the_usage_changed_and_only_then(
    index_dir: Path, tmp_path: Path, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "policy.json"
    write_document(policy, demo_policy())
    store = FilePolicyStore(policy)
    soon = int(datetime.now(UTC).timestamp()) + 3600
    log_execution(store, "q1", "tell the on-call crew the failover finished", "Slack.SendMessage", soon)
    cold = latest(index_dir)
    capsys.readouterr()

    assert "published new build" in run_refresh(index_dir, store.query_log_path, capsys)
    first = latest(index_dir)
    assert first != cold
    warm = load_latest(LocalIndexStore(index_dir), index_dir, embedder.fingerprint).manifest
    assert warm.usage is not None and warm.usage.execution_groups == 3
    cold_manifest = (index_dir / "builds" / cold / "manifest.json").read_text()
    assert warm.files["vectors.npy"] in cold_manifest  # the tools were not embedded again

    assert f"tools and usage unchanged, kept build {first}" in run_refresh(index_dir, store.query_log_path, capsys)
    assert latest(index_dir) == first

    log_execution(store, "q2", "file a bug about the login page", "GitHub.CreateIssue", soon)
    assert "published new build" in run_refresh(index_dir, store.query_log_path, capsys)
    second = load_latest(LocalIndexStore(index_dir), index_dir, embedder.fingerprint).manifest
    assert second.usage is not None and second.usage.execution_groups == 6


def test_a_build_that_fails_the_drift_check_is_not_published(
    index_dir: Path, tmp_path: Path, embedder: Embedder, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = tmp_path / "policy.json"
    write_document(policy, demo_policy())
    store = FilePolicyStore(policy)
    log_execution(store, "q1", "ping the team", "Slack.SendMessage", int(datetime.now(UTC).timestamp()) + 3600)
    cold = load_latest(LocalIndexStore(index_dir), index_dir, embedder.fingerprint)
    golden = record(IndexEndpoint(cold, embedder), read_queries(QUERIES)[:6], "drift-check")
    before = latest(index_dir)

    # A golden recorded from another build: its first answer differs, so the new build would drift from it.
    moved = golden.model_copy(deep=True)
    moved.queries[0].expected = ["Stripe.RefundPayment", *moved.queries[0].expected[1:]]
    moved.queries[0].known_wrong = False
    with pytest.raises(DriftError, match="not published: the drift check failed"):
        refresh(str(index_dir), [], embedder, MODEL_ID, {}, usage=str(store.query_log_path), golden=moved)
    assert latest(index_dir) == before

    write_golden(tmp_path / "golden.json", golden)  # the build's own answers: the warm build keeps to them
    assert "published new build" in run_refresh(
        index_dir, store.query_log_path, capsys, "--golden", str(tmp_path / "golden.json")
    )
    assert latest(index_dir) != before
