"""``toolrec serve``: the app on the embedded default — a local index directory and a local policy file.

On first run it builds the index from the demo catalog (build_index/demo, the real build step, saying so) and
writes a default policy: gateway ``default`` allowing every tool, a rule letting every user use every tool, the
demo apps and a demo user's connections, and the bootstrap API key (bootstrap_key.py). With ``--index`` (one's own
catalog) a new policy file holds the bootstrap key only: the demo's gateway, rules, apps and connections describe
the demo's tools, not someone else's. The app is wired by handler/composition.py, exactly as the Lambda function is.
The port is taken before anything is built or announced, so a busy one is the first and only thing said; an
``--index`` folder that holds no published index is said next, and nothing starts.
"""

from __future__ import annotations

import errno
import json
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from build_index.ops.bootstrap_key import BootstrapKey, ensure_bootstrap_key, key_lines
from handler.errors import ToolrecError
from handler.index.format import BUILDS, LATEST, MANIFEST
from handler.policy.file_store import write_if_absent
from handler.policy.model import AccessRule, AppInfo, Connection, Gateway, PolicyDocument
from handler.ranking.query import Embedder

if TYPE_CHECKING:
    from fastapi import FastAPI

DEMO_DIR = Path(__file__).parents[1] / "demo"
DEFAULT_ROOT = Path(".toolrec")
DEMO_USER = "demo-user"
DEMO_CONNECTIONS = {
    "Slack": ("demo@toolrec.example", ("chat:write", "channels:read", "channels:history")),
    "GitHub": ("demo-toolrec", ("repo",)),
    "GoogleCalendar": ("demo@toolrec.example", ("calendar.events", "calendar.readonly")),
}
KEEP_ALIVE_SECONDS = 65
Announce = Callable[[str], None]


def _quiet(_: str) -> None:
    """The library callers' default: tests, the bench and the load test print nothing."""


@dataclass(frozen=True)
class EmbeddedDefault:
    index_location: str
    policy_file: Path
    key: BootstrapKey


def open_access() -> PolicyDocument:
    """Gateway ``default`` allowing every tool and a rule letting every user use every tool."""
    return PolicyDocument(
        gateways=[Gateway(gateway_id="default", allowed=("*",), recommendation="auto")],
        access_rules=[AccessRule(rule_id="everyone", subject="*", effect="allow", tools=("*",))],
    )


def demo_policy() -> PolicyDocument:
    """Open access plus the demo catalog's apps and the demo user's connections."""
    document = open_access()
    document.apps = [AppInfo.model_validate(a) for a in json.loads((DEMO_DIR / "apps.json").read_text())]
    document.connections = [
        Connection(user_id=DEMO_USER, app_id=app, account=account, scopes=scopes)
        for app, (account, scopes) in DEMO_CONNECTIONS.items()
    ]
    return document


def ensure_demo_index(index_dir: Path, embedder: Embedder, announce: Announce = _quiet) -> bool:
    """Build the demo catalog into ``index_dir`` unless it already holds a build made with this model; True
    when built now. A demo built with another model (an upgrade shipped a new one) is rebuilt, since the
    service would refuse it; the previous build stays in place until the new one is published."""
    existing = _latest_model_fingerprint(index_dir)
    if existing == embedder.fingerprint:
        return False
    from build_index.build import index_tools
    from build_index.ingest.catalog_files import read_catalogs
    from build_index.model_prepare import MODEL_ID
    from build_index.publish import publish

    tools = read_catalogs([DEMO_DIR / "tools.jsonl"])
    why = "first run" if existing is None else "the model changed"
    announce(f"building the demo index ({len(tools)} tools) in {index_dir} ({why}, a few seconds)...")
    started = time.perf_counter()
    publish(index_tools(tools, embedder, MODEL_ID, progress=False), str(index_dir))
    announce(f"built the demo index in {time.perf_counter() - started:.1f} s")
    return True


def _latest_model_fingerprint(index_dir: Path) -> str | None:
    from handler.index.format import MANIFEST, read_manifest
    from handler.index.store import LocalIndexStore

    store = LocalIndexStore(index_dir)
    try:
        build = store.fetch(store.latest_build_id(), index_dir)
        return read_manifest((build / MANIFEST).read_bytes()).model.fingerprint
    except (ToolrecError, OSError):
        return None  # no demo yet, or a damaged one: build it


class NoIndexError(ToolrecError):
    """``toolrec serve --index`` names a folder that holds no published index: it stops instead of serving 503s."""


def require_published_index(folder: Path) -> None:
    """NoIndexError unless ``folder`` holds what ``toolrec build --out FOLDER`` writes: ``LATEST`` and ``builds/``.
    A mistyped folder started a server that answered 503 to everything (issue 33 item 9)."""
    expected = f"the folder `toolrec build --out {folder}` writes, holding {LATEST} and {BUILDS}/"
    if (folder / MANIFEST).is_file() and folder.parent.name == BUILDS:
        raise NoIndexError(f"{folder} is one build; serve the folder that holds {LATEST}: --index {folder.parents[1]}")
    if not folder.is_dir():
        raise NoIndexError(f"no index at {folder}: no such folder (expected {expected})")
    if not (folder / LATEST).is_file():
        raise NoIndexError(f"no index at {folder}: it holds no {LATEST} (expected {expected})")


def ensure_policy(policy_file: Path, api_key: str | None, new_policy: PolicyDocument | None = None) -> BootstrapKey:
    """Write ``new_policy`` (default: the demo's) if the file is absent; make sure a bootstrap key works."""
    # Under the writer lock: a concurrent `toolrec policy` survives.
    write_if_absent(policy_file, demo_policy() if new_policy is None else new_policy)
    return ensure_bootstrap_key(policy_file, api_key)


def prepare_embedded_default(
    root: Path,
    embedder: Embedder,
    api_key: str | None,
    index: str | None = None,
    policy: Path | None = None,
    announce: Announce = _quiet,
) -> EmbeddedDefault:
    index_location = index or str(root / "index")
    if index is None:
        ensure_demo_index(Path(index_location), embedder, announce)
    elif not index.startswith("s3://"):
        require_published_index(Path(index))
    policy_file = policy or root / "policy.json"
    is_new = not policy_file.exists()
    key = ensure_policy(policy_file, api_key, None if index is None else PolicyDocument())
    if is_new and index is not None:
        edit = f"toolrec policy --file {policy_file}"
        announce(
            f"created {policy_file} with no gateways or rules: no user may use a tool until a rule allows it"
            f" ({edit} rule put --subject '*' --rule-id everyone --effect allow --tools '*'), and MCP serves a"
            f" gateway ({edit} gateway put default --allow '*')"
        )
    return EmbeddedDefault(index_location, policy_file, key)


def embedded_app(
    root: Path,
    api_key: str | None,
    index: str | None = None,
    policy: Path | None = None,
    announce: Announce = _quiet,
) -> tuple[FastAPI, EmbeddedDefault]:
    """The app ``toolrec serve`` runs, built by the same composition root as the Lambda function."""
    from handler.composition import build_app
    from handler.inference.embedder import OnnxEmbedder
    from handler.settings import Settings

    settings = Settings(  # explicit values beat TOOLREC_* variables; the others still come from the environment
        index_location=index or str(root / "index"),
        index_cache_dir=root / "cache",
        policy_backend="file",
        policy_file=policy or root / "policy.json",
    )
    if api_key is None and settings.api_key is not None:
        api_key = settings.api_key.get_secret_value()
    embedder = OnnxEmbedder(settings.model_dir, threads=settings.intra_op_threads)
    default = prepare_embedded_default(root, embedder, api_key, index, policy, announce)
    return build_app(settings, embedder=embedder), default


class PortTakenError(ToolrecError):
    """The address ``toolrec serve`` was asked to listen on is in use."""


def listen(host: str, port: int) -> socket.socket:
    """A socket listening on host:port, or PortTakenError saying how to pick another."""
    # IPPROTO_TCP, not the default 0: asyncio turns Nagle off only on sockets that say they are TCP, and without it
    # every answer waited ~40 ms for the client's delayed ACK (toolrec bench: one-action select 3.2 -> 48 ms).
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn: a restart need not wait out TIME_WAIT
    try:
        listener.bind((host, port))
        listener.listen()
    except OSError as exc:
        listener.close()
        if exc.errno != errno.EADDRINUSE:
            raise ToolrecError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
        other = _free_port_after(host, port)
        raise PortTakenError(
            f"{host}:{port} is already in use (another toolrec serve?): pick another port,"
            f" e.g. `make serve PORT={other}` or `toolrec serve --port {other}`"
        ) from exc
    return listener


def _free_port_after(host: str, port: int) -> int:
    for candidate in range(port + 1, min(port + 100, 65535)):
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
            if probe.connect_ex((host, candidate)) != 0:
                return candidate
    return port + 1


def serve(host: str, port: int, root: Path, index: str | None, policy: Path | None) -> None:
    import uvicorn

    from build_index.ops.serve_http import ErrorBodyH11Protocol

    listener = listen(host, port)
    app, default = embedded_app(root, None, index, policy, announce=lambda line: print(line, flush=True))
    # Where a client on this machine reaches it: a server on every interface answers on loopback too.
    url = f"http://{'127.0.0.1' if host in ('0.0.0.0', '::') else host}:{port}"  # noqa: S104 (compared, not bound)
    for line in key_lines(default.key, default.policy_file, url):
        print(line, flush=True)
    print(f"toolrec on http://{host}:{port}  index {default.index_location}  policy {default.policy_file}", flush=True)
    # uvicorn closes an idle connection after 5 s, exactly when httpx (and others) stop reusing one: a request sent
    # in that window is reset (1 in 3,000 at 32 concurrent, `toolrec loadtest`). Outlast clients and proxies
    # (an AWS ALB keeps idle connections 60 s).
    config = uvicorn.Config(
        app,
        log_level="warning",
        timeout_keep_alive=KEEP_ALIVE_SECONDS,
        http=ErrorBodyH11Protocol,  # a request uvicorn cannot parse still gets the one error body
    )
    uvicorn.Server(config).run(sockets=[listener])
