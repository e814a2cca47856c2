"""Load, bounded: ``toolrec loadtest`` (the documented command; its full size is 10,000 requests at 32 concurrent)
run small against a real ``toolrec serve`` subprocess on loopback: no errors, flat memory, and the query log holds
exactly one record per request. Plus the query log's own guarantee: records beyond the in-memory cap are kept."""

from __future__ import annotations

import json
import socket
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

import handler.policy.file_store as file_store
from build_index.cli import main as toolrec
from build_index.ops.loadtest import run_loadtest, served
from handler.policy.file_store import FilePolicyStore, query_log_file
from handler.policy.keys import generate_key
from handler.policy.model import QueryRecord

HTTPX_KEEPALIVE_EXPIRY_S = 5.0  # httpx.Limits' default keepalive_expiry


@pytest.mark.slow
def test_small_load_run_has_no_errors_flat_memory_and_a_complete_query_log(tmp_path: Path) -> None:
    report = run_loadtest(requests=500, concurrency=16, root=tmp_path / "root")
    print("\n" + "\n".join(report.lines()))
    assert report.errors == 0 and report.statuses == {"200": 500}
    assert report.query_log["records"] == report.query_log["expected"] == 500 + 32  # with the warm-up
    assert report.query_log["missing"] == report.query_log["unexpected"] == report.query_log["duplicated"] == 0
    assert report.rss_growth_mb <= report.rss_bound_mb
    assert report.latency_ms["p50"] <= report.latency_ms["p99"]
    assert report.passed


def test_the_cli_refuses_a_run_too_small_to_measure(capsys: pytest.CaptureFixture[str]) -> None:
    assert toolrec(["loadtest", "--requests", "1", "--concurrency", "1", "--json"]) == 2
    assert "--requests >= 2" in capsys.readouterr().err


def test_the_local_query_log_keeps_records_beyond_the_memory_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(file_store, "MAX_LOGGED_QUERIES", 10)
    store = FilePolicyStore(tmp_path / "policy.json")
    now = datetime.now(UTC)
    for number in range(25):
        store.put_query(
            QueryRecord(
                query_id=f"q{number}",
                user_id="u",
                tasks=("t",),
                recommended=(("A.B",),),
                created_at=now,
                expires_at=int(now.timestamp()) + 60,
            )
        )
    lines = [json.loads(line) for line in query_log_file(tmp_path / "policy.json").read_text().splitlines()]
    assert [entry["record"]["query_id"] for entry in lines] == [f"q{n}" for n in range(25)]  # none lost
    assert len(store.queries(now.timestamp())) == 10  # memory stays bounded


def _get_healthz(connection: socket.socket) -> bytes:
    """One request on a kept-alive connection; the whole response (b"" when the server closed the connection)."""
    connection.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            return data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lengths = [int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")]
    length = lengths[0]
    while len(body) < length:
        body += connection.recv(65536)
    return data


@pytest.mark.slow
def test_toolrec_serve_keeps_an_idle_connection_longer_than_clients_do(tmp_path: Path) -> None:
    """The 10,000-request run lost one request to a reset: httpx reuses a pooled connection for up to 5 s of idle
    time, uvicorn closed it after exactly 5 s, and a request sent in that window met the close. The server must
    keep idle connections longer than clients (and proxies) do."""
    with served(tmp_path / "root", generate_key()) as (base, _):
        port = int(base.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as connection:
            assert _get_healthz(connection).startswith(b"HTTP/1.1 200")
            time.sleep(HTTPX_KEEPALIVE_EXPIRY_S + 1)
            assert _get_healthz(connection).startswith(b"HTTP/1.1 200")
