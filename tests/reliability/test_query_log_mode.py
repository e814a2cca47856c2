"""The local query log holds task texts and user ids: it is as private as the policy file beside it (issue 22
item 8: ``policy.queries.jsonl`` was created 0644 next to a 0600 policy file). ``toolrec serve`` creates it 0600,
and a log an older version left readable by others is narrowed to 0600 the next time a record is appended.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from build_index.ops.loadtest import served
from handler.policy.file_store import FilePolicyStore, query_log_file
from handler.policy.keys import generate_key
from handler.policy.model import QueryRecord

PRIVATE = 0o600


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def common_umask() -> Iterator[None]:
    """The usual umask (022), which the server inherits: what left the log world-readable before."""
    previous = os.umask(0o022)
    yield
    os.umask(previous)


@pytest.mark.slow
@pytest.mark.usefixtures("common_umask")
def test_toolrec_serve_creates_the_query_log_private_like_the_policy_file(tmp_path: Path) -> None:
    key = generate_key()
    with served(tmp_path, key) as (base, _):
        body = {"tasks": ["send a message to the team channel"], "user_id": "dana"}
        response = httpx.post(f"{base}/v1/tools/select", json=body, headers={"Authorization": f"Bearer {key}"})
        assert response.status_code == 200, response.text
    log = query_log_file(tmp_path / "policy.json")
    assert "send a message" in log.read_text(encoding="utf-8")
    assert _mode(tmp_path / "policy.json") == PRIVATE
    assert _mode(log) == PRIVATE, oct(_mode(log))


def test_a_query_log_left_readable_by_others_is_narrowed_on_the_next_record(tmp_path: Path) -> None:
    policy = tmp_path / "policy.json"
    log = query_log_file(policy)
    log.write_text("")
    log.chmod(0o644)  # as the previous version created it
    now = datetime.now(UTC)
    record = QueryRecord(
        query_id="q1", user_id="dana", tasks=("t",), recommended=((),), created_at=now, expires_at=int(now.timestamp())
    )
    FilePolicyStore(policy).put_query(record)
    assert _mode(log) == PRIVATE, oct(_mode(log))
    assert '"q1"' in log.read_text(encoding="utf-8")
