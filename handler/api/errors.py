"""The one place errors become HTTP responses: every error, FastAPI's own included, gets the ErrorBody shape.

Routes never build an error response by hand: they (or the services) raise a ToolrecError. Validation
messages name the field and the rule, never the Python type or the submitted value.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from handler.api.schemas import ErrorBody, FieldError
from handler.errors import ToolrecError

log = logging.getLogger(__name__)
_NAMES_BY_STATUS = {
    400: "validation_error",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "validation_error",
    503: "service_unavailable",
}
# The body sections a FastAPI error location starts with; the field path is what follows.
_LOCATION_ROOTS = {"body", "query", "path", "header"}


def error_response(status: int, name: str, message: str, field_errors: list[FieldError] | None = None) -> JSONResponse:
    body = ErrorBody(name=name, message=message, field_errors=field_errors)
    return JSONResponse(body.model_dump(exclude_none=True), status_code=status, headers=_headers(status))


def _headers(status: int) -> dict[str, str] | None:
    return {"WWW-Authenticate": "Bearer"} if status == HTTPStatus.UNAUTHORIZED else None


# Another shape for the error body on some routes: given the request, the status, the body and its headers, a
# response, or None where the body is answered as it is. The MCP endpoint's is one (handler/mcp/route.py: a JSON-RPC
# error, whose message an MCP client shows its user, where the body alone shows "Server returned an error
# response"; PRODUCT.md §3); the app installs it, as this layer does not know that endpoint.
RefusalShape = Callable[[Request, int, dict[str, Any], dict[str, str] | None], Awaitable[Response | None]]


async def _refusal(request: Request, status: int, body: ErrorBody) -> Response:
    content, headers = body.model_dump(exclude_none=True), _headers(status)
    shapes: tuple[RefusalShape, ...] = request.app.state.refusal_shapes
    for shape in shapes:
        shaped = await shape(request, status, content, headers)
        if shaped is not None:
            return shaped
    return JSONResponse(content, status_code=status, headers=headers)


def field_errors(errors: Sequence[Any]) -> list[FieldError]:
    result = []
    for error in errors:
        location = [str(part) for part in error.get("loc", ())]
        if location and location[0] in _LOCATION_ROOTS:
            location = location[1:]
        if error.get("type") == "json_invalid":
            result.append(FieldError(field="body", message="the request body is not valid JSON"))
            continue
        if error.get("type") == "model_attributes_type" and location == []:
            result.append(
                FieldError(field="body", message="the body must be a JSON object (Content-Type: application/json)")
            )
            continue
        message = str(error.get("msg", "is invalid")).removeprefix("Value error, ")
        result.append(FieldError(field=".".join(location) or "body", message=message))
    return result


async def _validation(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    errors = field_errors(exc.errors())
    body = ErrorBody(name="validation_error", message="the request is invalid; see field_errors", field_errors=errors)
    return await _refusal(request, 400, body)


async def _http(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    status = exc.status_code
    name = _NAMES_BY_STATUS.get(status, HTTPStatus(status).phrase.lower().replace(" ", "_"))
    message = str(exc.detail)
    if status == HTTPStatus.NOT_FOUND:  # a path no route serves: say where the routes are
        message = f"no route {request.method} {request.url.path}; the API is described at /docs"
    return error_response(status, name, message)


async def _toolrec(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ToolrecError)
    # The detail (paths, buckets, a parser's position) goes to the log only: callers get `public`.
    if exc.status == HTTPStatus.SERVICE_UNAVAILABLE:
        log.warning("service unavailable: %s", exc)
    elif exc.status >= HTTPStatus.INTERNAL_SERVER_ERROR:
        log.error("toolrec error", exc_info=exc)
    fields = [FieldError(field=p.field, message=p.message) for p in exc.field_errors] or None
    return await _refusal(request, exc.status, ErrorBody(name=exc.name, message=exc.public, field_errors=fields))


async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
    log.error("unexpected error", exc_info=exc)
    return error_response(500, "internal_error", "an unexpected error occurred; it has been logged")


def install_error_handlers(app: FastAPI, shapes: Sequence[RefusalShape] = ()) -> None:
    """``shapes``: the routes whose refusals take another shape than the error body (first to answer wins)."""
    app.state.refusal_shapes = tuple(shapes)
    app.add_exception_handler(RequestValidationError, _validation)
    app.add_exception_handler(StarletteHTTPException, _http)
    app.add_exception_handler(ToolrecError, _toolrec)
    app.add_exception_handler(Exception, _unexpected)
