"""A complete toolrec app for execute and MCP tests: a real index built from a small catalog whose executors are
real local back ends (an HTTP worker and an upstream MCP server on loopback), a policy file, and an API key.

The catalog is built per test session because executor targets carry the workers' free ports.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastapi import FastAPI

from build_index.build import index_tools
from build_index.model_prepare import MODEL_ID
from build_index.ops.loopback import serve_subprocess
from build_index.publish import publish
from handler.catalog.tool import Executor, Requirements, Tool
from handler.composition import build_app
from handler.policy.keys import generate_key, hash_key
from handler.policy.store import PolicyStore
from handler.ranking.query import Embedder
from handler.services.container import Services
from handler.settings import Settings
from tests.support.servers import free_port, serve
from tests.support.workers import http_worker_app, upstream_mcp_app

USER = "alice"  # connected to Slack with chat:write; denied the Admin app
UNCONNECTED_USER = "bob"  # no Slack connection
UNDERSCOPED_USER = "carol"  # connected to Slack without chat:write
GATEWAY_ON, GATEWAY_OFF, GATEWAY_AUTO, GATEWAY_ADMIN = "assistant", "direct", "auto-small", "admin"
SLACK_AUTHORIZE_URL = "https://auth.example.test/connect/slack"
SHORT_TIMEOUT_S = 0.5


def _schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def catalog(worker_url: str, upstream_url: str, dead_url: str) -> list[Tool]:
    """Tools whose first description lines are distinct enough that each task below finds its tool."""

    def http(path: str, timeout_s: float = 5.0) -> Executor:
        return Executor(kind="http", target=f"{worker_url}/{path}", timeout_s=timeout_s)

    def mcp(remote: str, url: str = upstream_url) -> Executor:
        return Executor(kind="mcp", target=url, tool=remote, timeout_s=5.0)

    city = {"city": {"type": "string", "minLength": 1}, "days": {"type": "integer", "minimum": 1, "maximum": 7}}
    numbers = {"a": {"type": "integer"}, "b": {"type": "integer"}}
    return [
        Tool(
            name="Weather.GetForecast",
            app="Weather",
            description="Get the weather forecast for a city.",
            input_schema=_schema(city, ["city"]),
            executor=http("forecast"),
        ),
        Tool(
            name="Calculator.AddNumbers",
            app="Calculator",
            description="Add two integers and return the sum.",
            input_schema=_schema(numbers, ["a", "b"]),
            executor=mcp("add"),
        ),
        Tool(
            name="Text.Shout",
            app="Text",
            description="Convert a text to upper case letters.",
            input_schema=_schema({"text": {"type": "string"}}, ["text"]),
            executor=mcp("shout"),
        ),
        Tool(
            name="Printer.PrintDocument",
            app="Printer",
            description="Print a document on an office printer.",
            input_schema=_schema({"printer": {"type": "string"}}, ["printer"]),
            executor=http("fail"),
        ),
        Tool(
            name="Reports.RunQuarterlyReport",
            app="Reports",
            description="Run the quarterly finance report.",
            input_schema=_schema({}, []),
            executor=http("slow", timeout_s=SHORT_TIMEOUT_S),
        ),
        Tool(
            name="Archive.FetchRecord",
            app="Archive",
            description="Fetch a record from the legacy archive.",
            input_schema=_schema({"a": {"type": "integer"}, "b": {"type": "integer"}}, ["a", "b"]),
            executor=mcp("add", dead_url),
        ),
        Tool(
            name="Slack.SendMessage",
            app="Slack",
            description="Send a message to a Slack channel.",
            input_schema=_schema(
                {"channel_name": {"type": "string"}, "text": {"type": "string"}}, ["channel_name", "text"]
            ),
            executor=http("post"),
            requirements=Requirements(authorization="Slack", scopes=("chat:write",)),
        ),
        Tool(
            name="Admin.DeleteUser",
            app="Admin",
            description="Delete a user account from the directory.",
            input_schema=_schema({"user": {"type": "string"}}, ["user"]),
            executor=http("post"),
        ),
    ]


def policy_document(key: str) -> dict[str, Any]:
    everything = ["Weather.*", "Calculator.*", "Text.*", "Printer.*", "Reports.*", "Archive.*", "Slack.*", "Admin.*"]
    return {
        "version": 1,
        "gateways": [
            {"gateway_id": GATEWAY_ON, "allowed": everything, "recommendation": "on"},
            {"gateway_id": GATEWAY_OFF, "allowed": ["Weather.*", "Calculator.*", "Admin.*"], "recommendation": "off"},
            {"gateway_id": GATEWAY_AUTO, "allowed": ["Weather.*", "Text.*"], "recommendation": "auto"},
            {"gateway_id": GATEWAY_ADMIN, "allowed": ["Admin.*"], "recommendation": "on"},
        ],
        "access_rules": [
            {"rule_id": "everyone", "subject": "*", "effect": "allow", "tools": ["*"]},
            {"rule_id": "no-admin", "subject": USER, "effect": "deny", "tools": ["Admin.*"]},
        ],
        "apps": [{"app_id": "Slack", "name": "Slack", "authorize_url": SLACK_AUTHORIZE_URL}],
        "connections": [
            {
                "user_id": USER,
                "app_id": "Slack",
                "connected": True,
                "account": "alice@example.test",
                "scopes": ["chat:write"],
            },
            {
                "user_id": UNDERSCOPED_USER,
                "app_id": "Slack",
                "account": "carol@example.test",
                "scopes": ["channels:read"],
            },
        ],
        "api_keys": [{"key_id": "test", "key_hash": hash_key(key)}],
    }


@dataclass(frozen=True)
class Prepared:
    """A built index and a policy file on disk: what ``toolrec serve`` and the Lambda function start from."""

    index_dir: Path
    policy_file: Path
    api_key: str
    root: Path


def prepare(root: Path, embedder: Embedder, worker_url: str, upstream_url: str, dead_url: str) -> Prepared:
    index_dir, policy_file = root / "index", root / "policy.json"
    built = index_tools(catalog(worker_url, upstream_url, dead_url), embedder, MODEL_ID, progress=False)
    publish(built, str(index_dir))
    key = generate_key()
    policy_file.write_text(json.dumps(policy_document(key)), encoding="utf-8")
    return Prepared(index_dir, policy_file, key, root)


@dataclass(frozen=True)
class GatewayApp:
    app: FastAPI
    api_key: str

    @property
    def policy(self) -> PolicyStore:
        services: Services = self.app.state.services
        return services.policy


def gateway_app(prepared: Prepared, embedder: Embedder) -> GatewayApp:
    """The app as the real composition root (handler/composition.py) wires it for Lambda and ``toolrec serve``."""
    settings = Settings(
        index_location=str(prepared.index_dir),
        index_cache_dir=prepared.root / "cache",
        policy_backend="file",
        policy_file=prepared.policy_file,
        policy_cache_seconds=0,
    )
    return GatewayApp(build_app(settings, embedder=embedder), prepared.api_key)


@contextmanager
def toolrec_serve(prepared: Prepared, startup_timeout_s: float = 60.0) -> Iterator[str]:
    """``toolrec serve`` in a subprocess on a free loopback port, on the prepared index and policy."""
    paths = {"--root": prepared.root / "serve", "--index": prepared.index_dir, "--policy": prepared.policy_file}
    args = [part for option, path in paths.items() for part in (option, str(path))]
    with serve_subprocess(args, startup_timeout_s=startup_timeout_s) as (base, _):
        yield base


@dataclass(frozen=True)
class Backends:
    worker_url: str
    upstream_url: str
    dead_url: str  # a loopback port nothing listens on: an upstream MCP server that is down
    worker_calls: list[dict[str, Any]]


@contextmanager
def running_backends() -> Iterator[Backends]:
    calls: list[dict[str, Any]] = []
    with serve(http_worker_app(calls)) as worker, serve(upstream_mcp_app()) as upstream:
        yield Backends(worker, upstream + "/mcp", f"http://127.0.0.1:{free_port()}/mcp", calls)


def prepare_for(root: Path, embedder: Embedder, backends: Backends) -> Prepared:
    return prepare(root, embedder, backends.worker_url, backends.upstream_url, backends.dead_url)
