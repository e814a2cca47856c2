"""The one composition root: settings -> embedder, index store + holder, policy store -> the app.

Used by the Lambda entry module (once per cold start) and by ``toolrec serve``, so the local server and
the deployed function are wired by the same code. Clients can be injected (tests pass moto-backed ones).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import FastAPI

from handler import observability
from handler.app import create_app
from handler.aws import aws_client
from handler.index.holder import IndexHolder
from handler.index.store import open_store
from handler.inference.embedder import OnnxEmbedder
from handler.policy.cached import CachedPolicyStore
from handler.policy.file_store import FilePolicyStore
from handler.policy.store import PolicyStore
from handler.ranking.query import Embedder
from handler.services.policy_names import PolicyNameCheck
from handler.settings import Settings

if TYPE_CHECKING:
    from handler.policy.dynamodb_store import DynamoPolicyStore


def build_policy_store(settings: Settings, dynamodb_client: Any = None) -> PolicyStore:
    """DynamoDB behind the per-instance cache (a change applies within ``policy_cache_seconds``); the local file
    uncached: it re-reads itself when it changes at the cost of one stat per lookup, so a rule change or a key
    revocation made with ``toolrec policy`` applies from the next request on (docs/security.md)."""
    if settings.policy_backend == "file":
        assert settings.policy_file is not None
        store = FilePolicyStore(settings.policy_file)
        # A file that cannot be read or parsed stops the start, naming its fields; once serving, a later bad edit
        # leaves the last good policy in force (FilePolicyStore.document, PRODUCT.md §4).
        store.document()
        return store
    from handler.policy.dynamodb_store import DynamoPolicyStore, TableNames

    if dynamodb_client is None:
        dynamodb_client = aws_client("dynamodb", "serve")
    return CachedPolicyStore(DynamoPolicyStore(dynamodb_client, TableNames.of(settings)), settings.policy_cache_seconds)


def policy_name_check(store: PolicyStore, holder: IndexHolder) -> PolicyNameCheck | None:
    """The check of the names the policy holds against the served build (services/policy_names.py), run when either
    changes: the file store tells it of every new read, the holder of every new build; DynamoDB's gateways and rules
    are scanned for it at most once per ``policy_cache_seconds``, and only when /healthz asks (never at a cold start
    or in a request)."""
    if isinstance(store, FilePolicyStore):
        check = PolicyNameCheck(holder, store.document)
        store.on_change = lambda _: check.current()
    elif isinstance(store, CachedPolicyStore) and (dynamo := _dynamo(store.inner)) is not None:
        cache = store.cache
        check = PolicyNameCheck(holder, lambda: cache.get_or_load("policy_names", "", dynamo.gateways_and_rules))
    else:
        return None
    holder.on_load = check.index_loaded  # a new build: the policy last read is checked against it
    return check


def _dynamo(store: PolicyStore) -> DynamoPolicyStore | None:
    from handler.policy.dynamodb_store import DynamoPolicyStore  # boto3: not imported to serve a local file

    return store if isinstance(store, DynamoPolicyStore) else None


def build_app(
    settings: Settings | None = None,
    *,
    s3_client: Any = None,
    dynamodb_client: Any = None,
    embedder: Embedder | None = None,
) -> FastAPI:
    """Everything built once: a bad setting or a missing model fails here, at init, not in a request."""
    settings = settings or Settings()  # pydantic-settings reads the environment
    observability.configure(settings.log_level, settings.log_tasks)
    embedder = embedder or OnnxEmbedder(settings.model_dir, threads=settings.intra_op_threads)
    if s3_client is None and settings.index_location.startswith("s3://"):
        s3_client = aws_client("s3", "serve")
    if dynamodb_client is None and settings.policy_backend == "dynamodb":
        dynamodb_client = aws_client("dynamodb", "serve")
    holder = IndexHolder(
        open_store(settings.index_location, s3_client),
        settings.index_cache_dir,
        embedder.fingerprint,
        settings.index_refresh_seconds,
        learn_from_use=settings.learn_from_use,
        threads=settings.intra_op_threads,
        namespace=settings.mcp_namespace,
    )
    holder.load()  # a missing index is reported by /healthz and 503s, and retried; it does not fail the init
    policy_store = build_policy_store(settings, dynamodb_client)
    policy_names = policy_name_check(policy_store, holder)
    if isinstance(policy_store, FilePolicyStore) and policy_names is not None:
        policy_names.current()  # a name of the policy no tool or app holds is logged at start
    app = create_app(
        settings, index_holder=holder, embedder=embedder, policy_store=policy_store, policy_names=policy_names
    )
    # The clients made (or given) here, for the SnapStart hooks (handler/snapstart.py) to close before a snapshot.
    app.state.aws_clients = tuple(client for client in (s3_client, dynamodb_client) if client is not None)
    return app
