"""Execution safety: an executor reaches only the endpoint the catalog registered for the tool; nothing from the
request (URL, header, path, query, stray fields) steers it; responses and logs never carry the API key.

Real servers on loopback: toolrec (the real composition root, so the real JSON logging), a spy HTTP worker that
records every request it receives, and an upstream MCP server behind a recording middleware.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse
from starlette.routing import Route

from build_index.build import index_tools
from build_index.model_prepare import MODEL_ID
from build_index.publish import publish
from handler.catalog.tool import Executor, Tool
from handler.composition import build_app
from handler.policy.keys import hash_key
from handler.ranking.query import Embedder
from tests.support.servers import serve
from tests.support.serving import file_settings
from tests.support.workers import upstream_mcp_app

KEY = "trk_execution-safety-SECRET-0123456789abcdef"
WRONG_KEY = "trk_not-a-key-but-still-SECRET-fedcba987654"
USER = "erin"
OPEN_SCHEMA: dict[str, Any] = {"type": "object"}  # any input passes, so a smuggled field reaches the executor


@dataclass
class Seen:
    requests: list[dict[str, Any]]


def spy_worker(seen: Seen) -> Starlette:
    async def record(request: Request) -> dict[str, Any]:
        entry = {
            "path": request.url.path,
            "query": request.url.query,
            "headers": {k.lower(): v for k, v in request.headers.items()},
            "body": await request.body(),
        }
        seen.requests.append(entry)
        return entry

    async def run(request: Request) -> JSONResponse:
        entry = await record(request)
        return JSONResponse({"received": json.loads(entry["body"])["input"]})

    async def redirect(request: Request) -> RedirectResponse:
        await record(request)
        return RedirectResponse("/elsewhere", status_code=307)

    routes = [Route("/run", run, methods=["POST"]), Route("/redirect", redirect, methods=["POST"])]
    routes.append(Route("/elsewhere", run, methods=["POST"]))
    return Starlette(routes=routes)


def recording(app: Any, seen: Seen) -> Any:
    async def middleware(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
            seen.requests.append({"path": scope["path"], "query": scope["query_string"].decode(), "headers": headers})
        await app(scope, receive, send)

    return middleware


@dataclass
class Setup:
    base: str
    worker: Seen
    upstream: Seen
    targets: tuple[str, ...]  # the registered executor endpoints: internal, never shown to callers


@pytest.fixture(scope="module")
def setup(embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    root = tmp_path_factory.mktemp("safety")
    worker, upstream = Seen([]), Seen([])
    with serve(spy_worker(worker)) as worker_url, serve(recording(upstream_mcp_app(), upstream)) as upstream_url:
        tools = [
            Tool(name="Spy.Run", app="Spy", description="Run the spy worker.", input_schema=OPEN_SCHEMA,
                 executor=Executor(kind="http", target=f"{worker_url}/run", timeout_s=5)),
            Tool(name="Spy.Redirect", app="Spy", description="Call a worker that redirects.", input_schema=OPEN_SCHEMA,
                 executor=Executor(kind="http", target=f"{worker_url}/redirect", timeout_s=5)),
            Tool(name="Math.Add", app="Math", description="Add two integers upstream.", input_schema=OPEN_SCHEMA,
                 executor=Executor(kind="mcp", target=f"{upstream_url}/mcp", tool="add", timeout_s=5)),
        ]  # fmt: skip
        publish(index_tools(tools, embedder, MODEL_ID, progress=False), str(root / "index"))
        policy = {
            "version": 1,
            "gateways": [{"gateway_id": "g", "allowed": ["*"], "recommendation": "on"}],
            "access_rules": [{"rule_id": "all", "subject": "*", "effect": "allow", "tools": ["*"]}],
            "api_keys": [{"key_id": "safety", "key_hash": hash_key(KEY)}],
        }
        (root / "policy.json").write_text(json.dumps(policy))
        settings = file_settings(str(root / "index"), root / "policy.json", root / "cache", log_level="DEBUG")
        with serve(build_app(settings, embedder=embedder)) as base:
            yield Setup(base, worker, upstream, (worker_url, upstream_url))


@pytest.fixture
def logs() -> Iterator[list[str]]:
    """Every record the app logs, formatted with the app's own JSON formatter (exceptions included)."""
    logger = logging.getLogger("handler")
    formatter = logger.handlers[0].formatter
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(formatter.format(record) if formatter else record.getMessage())

    collector = Collect(level=logging.DEBUG)
    logger.addHandler(collector)
    yield lines
    logger.removeHandler(collector)


SMUGGLED_HEADERS = {
    "X-Forwarded-Host": "evil.example",
    "X-Original-URL": "/elsewhere",
    "X-Rewrite-URL": "/elsewhere",
    "X-Toolrec-Target": "http://127.0.0.1:9/steal",
    "Forwarded": "host=evil.example",
    "Cookie": "session=SECRET-cookie",
}


def test_the_request_cannot_steer_an_http_executor(setup: Setup) -> None:
    smuggled = {"url": "http://127.0.0.1:9/steal", "path": "/elsewhere", "headers": {"Authorization": "x"}}
    before = len(setup.worker.requests)
    response = httpx.post(
        f"{setup.base}/v1/tools/execute?target=http://127.0.0.1:9/steal&path=/elsewhere",
        json={"tool_name": "Spy.Run", "input": smuggled, "user_id": USER},
        headers={"Authorization": f"Bearer {KEY}", **SMUGGLED_HEADERS},
    )
    assert response.status_code == 200, response.text
    assert response.json()["output"] == {"received": smuggled}  # the smuggled fields travel as data, nothing more
    [seen] = setup.worker.requests[before:]
    assert seen["path"] == "/run" and seen["query"] == ""
    assert json.loads(seen["body"]) == {"tool_name": "Spy.Run", "input": smuggled, "user_id": USER}
    forwarded = {k for k in seen["headers"] if k.startswith("x-") or k in {"authorization", "cookie", "forwarded"}}
    assert forwarded == set(), seen["headers"]


def test_a_redirect_is_not_followed(setup: Setup) -> None:
    before = len(setup.worker.requests)
    response = httpx.post(
        f"{setup.base}/v1/tools/execute",
        json={"tool_name": "Spy.Redirect", "input": {}, "user_id": USER},
        headers={"Authorization": f"Bearer {KEY}"},
    )
    assert response.status_code == 200 and response.json()["success"] is False
    assert [r["path"] for r in setup.worker.requests[before:]] == ["/redirect"]


def test_the_request_cannot_steer_an_mcp_executor(setup: Setup) -> None:
    before = len(setup.upstream.requests)
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "Toolrec_UseTool", "arguments": {"tool_name": "Math.Add", "inputs": {"a": 2, "b": 3}}},
    }
    response = httpx.post(
        f"{setup.base}/mcp/g",
        json=message,
        headers={"Authorization": f"Bearer {KEY}", "X-Toolrec-User": USER, **SMUGGLED_HEADERS},
    )
    result = response.json()["result"]
    assert not result["isError"], result
    assert result["structuredContent"]["output"] == {"sum": 5}
    reached = setup.upstream.requests[before:]
    assert reached and {r["path"] for r in reached} == {"/mcp"}
    for request in reached:
        leaked = {k for k in request["headers"] if k in {"authorization", "cookie", "forwarded", "x-toolrec-user"}}
        assert leaked == set() and not any(k.startswith("x-forwarded") for k in request["headers"]), request


def test_responses_and_logs_never_carry_the_api_key(setup: Setup, logs: list[str]) -> None:
    bodies: list[str] = []
    auth = {"Authorization": f"Bearer {KEY}"}
    with httpx.Client(base_url=setup.base, timeout=30) as client:
        calls = [
            ("POST", "/v1/tools/select", {"tasks": ["run the spy"], "user_id": USER}, auth),
            ("POST", "/v1/tools/search", {"query": "spy", "user_id": USER}, auth),
            ("GET", "/v1/apps?user_id=erin", None, auth),
            ("POST", "/v1/tools/execute", {"tool_name": "Spy.Redirect", "input": {}, "user_id": USER}, auth),
            ("POST", "/v1/tools/execute", {"tool_name": "Spy.Run", "input": {"k": KEY}, "user_id": USER}, auth),
            ("POST", "/v1/tools/execute", {"tool_name": "Nope.Tool", "user_id": USER}, auth),
            ("POST", "/v1/tools/select", {"tasks": [""], "user_id": USER}, auth),
            ("POST", "/v1/tools/select", {"tasks": ["x"], "user_id": USER}, {"Authorization": f"Bearer {WRONG_KEY}"}),
            ("POST", f"/v1/tools/select?api_key={WRONG_KEY}", {"tasks": ["x"], "user_id": USER}, {}),
            ("POST", "/mcp/g", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, {**auth, "X-Toolrec-User": USER}),
            (
                "POST",
                "/mcp/g",
                {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                {"Authorization": f"Bearer {WRONG_KEY}"},
            ),
            ("GET", "/healthz", None, auth),
        ]
        for method, path, body, headers in calls:
            response = client.request(method, path, json=body, headers=headers)
            assert response.status_code < 500, response.text
            bodies.append(response.text + json.dumps(dict(response.headers)))
    secrets = (KEY, WRONG_KEY, hash_key(KEY), hash_key(WRONG_KEY))
    # Input the caller sent is theirs to get back (Spy.Run echoes {"k": KEY}); nothing else may contain the key.
    echoed = [b for b in bodies if '"received"' in b]
    assert len(echoed) == 1
    assert not [s for s in secrets for b in bodies if b not in echoed and s in b]
    assert not [t for t in setup.targets for b in bodies if t in b]
    assert logs, "the app logged nothing: the capture is broken"
    assert not [line for line in logs for s in secrets if s in line]
