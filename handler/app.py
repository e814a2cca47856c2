"""The app factory: a FastAPI app over collaborators built elsewhere (composition.py, or a test).

Nothing expensive happens here or in a lifespan hook: Mangum runs the lifespan on every invocation,
so the index, model and clients are built once by the caller and passed in.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastapi import APIRouter, FastAPI
from starlette.types import ASGIApp, Receive, Scope, Send

import handler
from handler import observability
from handler.api.errors import install_error_handlers
from handler.api.limits import BodySizeLimit
from handler.api.routes import apps, console, docs, execute, health, tools, usage
from handler.api.schemas import MAX_BODY_BYTES, ErrorBody
from handler.execute.base import ToolExecutor
from handler.index.holder import IndexHolder
from handler.mcp import route as mcp
from handler.policy.store import PolicyStore
from handler.providers import routes as providers
from handler.ranking.query import Embedder
from handler.services.container import Services
from handler.services.policy_names import PolicyNameCheck
from handler.settings import Settings

# Every router, in one list: REST, the providers' search, each gateway's MCP endpoint, /docs and the console.
ROUTERS: tuple[APIRouter, ...] = (
    tools.router,
    execute.router,
    apps.router,
    usage.router,
    providers.router,
    health.router,
    mcp.router,
    docs.router,
    console.router,
)
# Routers outside the API's error contract: no auth, no error bodies documented.
_UNAUTHENTICATED = (health.router, docs.router, console.router)
_ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": description}
    for status, description in [
        (400, "validation_error: the request is invalid (see field_errors)"),
        (401, "unauthorized: missing or unknown API key"),
        (403, "forbidden"),
        (404, "not_found"),
        (503, "service_unavailable: a retry may succeed"),
    ]
}


def create_app(
    settings: Settings,
    *,
    index_holder: IndexHolder,
    embedder: Embedder,
    policy_store: PolicyStore,
    executors: Mapping[str, ToolExecutor] | None = None,
    policy_names: PolicyNameCheck | None = None,
) -> FastAPI:
    app = FastAPI(
        title="toolrec",
        version=handler.version(),
        description=(
            "Tool recommendation for AI agents: select the few tools that fit a task, search them by keyword, list "
            "the apps a user can act on, execute the chosen tool, each gateway as an MCP server, and answers for "
            "the model providers' own tool search (PRODUCT.md §2, §3, §7)."
        ),
        docs_url=None,  # served by routes/docs.py from local files; FastAPI's loads them from a CDN
        redoc_url=None,  # ReDoc loads from a CDN too, and nothing names it
    )
    app.state.services = Services.build(settings, index_holder, embedder, policy_store, executors, policy_names)
    for router in ROUTERS:
        responses = {} if router in _UNAUTHENTICATED else _ERROR_RESPONSES
        app.include_router(router, responses=responses)
    install_error_handlers(app, shapes=[mcp.refused])
    app.add_middleware(BodySizeLimit, max_bytes=MAX_BODY_BYTES)
    app.add_middleware(FreshLogKeys)
    _exact_openapi(app)
    return app


class FreshLogKeys:
    """Each request logs with its own query_id/gateway_id, never the ones a previous request bound."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            observability.unbind_request()
        await self.app(scope, receive, send)


def _exact_openapi(app: FastAPI) -> None:
    """Drop FastAPI's generated 422 responses: validation errors are 400 with the ErrorBody shape."""
    generate = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = generate()
            for path in schema.get("paths", {}).values():
                for operation in path.values():
                    operation.get("responses", {}).pop("422", None)
            for name in ("HTTPValidationError", "ValidationError"):
                schema.get("components", {}).get("schemas", {}).pop(name, None)
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
