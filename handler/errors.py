"""The exception hierarchy of toolrec. Adapters map these to HTTP status codes and MCP results in one place."""

from __future__ import annotations


class ToolrecError(Exception):
    """Base of every error toolrec raises on purpose; its message is safe to show a user."""


class ModelMissingError(ToolrecError):
    """The local model directory is absent or incomplete."""


class IntegrityError(ToolrecError):
    """A file does not match the sha256 recorded for it, or an index does not fit the model or schema."""


class IndexUnavailableError(ToolrecError):
    """No index could be loaded (not built yet, storage unreachable, or refused as corrupt)."""


class CatalogError(ToolrecError):
    """A catalog row is invalid; the message names the file and line."""


class PolicyUnavailableError(ToolrecError):
    """The policy storage (file or DynamoDB) could not be read or written."""


class RequestError(ToolrecError):
    """A request the service refuses; ``name`` and ``status`` are the API error it maps to."""

    name = "bad_request"
    status = 400


class UnauthorizedError(RequestError):
    name = "unauthorized"
    status = 401


class ForbiddenError(RequestError):
    name = "forbidden"
    status = 403


class NotFoundError(RequestError):
    name = "not_found"
    status = 404


class ServiceUnavailableError(RequestError):
    """A dependency failed for this request; a retry may succeed."""

    name = "service_unavailable"
    status = 503
