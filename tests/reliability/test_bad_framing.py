"""Requests whose HTTP framing is broken (a Content-Length of ``-1`` or ``abc``, a garbled request line) get the one
error body, not uvicorn's plain-text ``Invalid HTTP request received.`` (issue 15, item 11): sent as raw bytes over
a socket to a real ``toolrec serve`` on loopback. The Lambda side, where an API Gateway event can hand such a header
to the app, is in tests/functional/test_lambda_errors_apps.py.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.reliability.conftest import assert_error_body
from tests.support.gateway_app import USER, Prepared, toolrec_serve

BODY = json.dumps({"tasks": ["get the weather"], "user_id": USER}).encode()
READ_TIMEOUT_S = 10.0


@pytest.fixture(scope="module")
def served(prepared: Prepared) -> Iterator[tuple[str, int]]:
    with toolrec_serve(prepared) as base:
        address = urlsplit(base)
        assert address.hostname is not None and address.port is not None
        yield address.hostname, address.port


def exchange_raw(address: tuple[str, int], request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``request`` as is and read the answer until the server closes the connection."""
    with socket.create_connection(address, timeout=READ_TIMEOUT_S) as sock:
        sock.sendall(request)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {name.strip().lower(): value.strip() for name, _, value in (h.partition(":") for h in header_lines)}
    return int(status_line.split()[1]), headers, body


def select_request(api_key: str, content_length: bytes) -> bytes:
    return (
        b"POST /v1/tools/select HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\n"
        b"Authorization: Bearer " + api_key.encode() + b"\r\nContent-Length: " + content_length + b"\r\n\r\n" + BODY
    )


def assert_the_error_body(status: int, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    assert status == 400, (status, body)
    assert headers.get("content-type", "").startswith("application/json"), headers
    parsed = json.loads(body)
    assert_error_body(status, parsed)
    assert parsed["name"] == "validation_error", parsed
    return dict(parsed)


@pytest.mark.parametrize("content_length", [b"-1", b"abc", b"1.5", b"12 34", b""])
def test_a_content_length_that_is_not_a_whole_number_gets_the_error_body(
    served: tuple[str, int], prepared: Prepared, content_length: bytes
) -> None:
    status, headers, body = exchange_raw(served, select_request(prepared.api_key, content_length))
    assert "Content-Length" in assert_the_error_body(status, headers, body)["message"]


def test_a_garbled_request_line_gets_the_error_body(served: tuple[str, int]) -> None:
    assert_the_error_body(*exchange_raw(served, b"GET /healthz HTTP/1.1 extra\r\nHost: x\r\n\r\n"))


def test_a_well_framed_request_on_the_same_server_is_answered(served: tuple[str, int], prepared: Prepared) -> None:
    status, _, body = exchange_raw(served, select_request(prepared.api_key, str(len(BODY)).encode()))
    assert status == 200 and json.loads(body)["results"], body
