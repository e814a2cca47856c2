"""Fixtures for the tests that run the gateway app of ``gateway_app.py``: its real back ends on loopback (an HTTP
worker, an upstream MCP server, a dead port), the index and policy built for them, the app itself, and a client of it
served over HTTP.

Module-scoped, as each module had its own before: the back ends record calls, and a module's tests may read them.
A module that needs another app (say, one with a failing embedder) overrides ``gateway`` and still uses ``prepared``.
Registered for the whole suite by ``pytest_plugins`` in tests/conftest.py.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from handler.ranking.query import Embedder
from tests.support.gateway_app import Backends, GatewayApp, Prepared, gateway_app, prepare_for, running_backends
from tests.support.servers import serve


@pytest.fixture(scope="module")
def backends() -> Iterator[Backends]:
    with running_backends() as running:
        yield running


@pytest.fixture(scope="module")
def prepared(backends: Backends, embedder: Embedder, tmp_path_factory: pytest.TempPathFactory) -> Prepared:
    return prepare_for(tmp_path_factory.mktemp("gateway"), embedder, backends)


@pytest.fixture(scope="module")
def gateway(prepared: Prepared, embedder: Embedder) -> GatewayApp:
    return gateway_app(prepared, embedder)


@pytest.fixture(scope="module")
def api(gateway: GatewayApp) -> Iterator[httpx.Client]:
    """The gateway app served on loopback, and a client holding its API key."""
    with (
        serve(gateway.app) as base,
        httpx.Client(base_url=base, headers={"Authorization": f"Bearer {gateway.api_key}"}, timeout=30) as client,
    ):
        yield client
