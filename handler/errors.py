"""The exception hierarchy of toolrec. Adapters map these to HTTP status codes and MCP results in one place."""

from __future__ import annotations


class ToolrecError(Exception):
    """Base of every error toolrec raises on purpose.

    Its message is for the operator (CLI output, the service log) and may name files, buckets, tables or a
    parser's position; a caller of the service is told ``public`` instead (``caller_message``), since a
    503 reaches callers whose key was never checked (issue 15 item 8). A RequestError's message is written
    for the caller.
    """

    public = "the service cannot answer right now; retry shortly"


class ModelMissingError(ToolrecError):
    """The local model directory is absent or incomplete."""

    public = "the embedding model is not installed"


class IntegrityError(ToolrecError):
    """A file does not match the sha256 recorded for it, or an index does not fit the model or schema."""

    public = "the published tool index (or the model) failed its integrity checks and is not served"


class IndexUnavailableError(ToolrecError):
    """No index could be loaded (not built yet, storage unreachable, or refused as corrupt)."""

    public = "no index is loaded: none is published yet, or its storage cannot be read"


class IndexNotPublishedError(IndexUnavailableError):
    """The index store holds no build yet (no LATEST)."""

    public = "no index is loaded: none is published yet (run `toolrec build`)"


class CatalogError(ToolrecError):
    """A catalog row is invalid; the message names the file and line."""

    public = "the tool catalog is invalid"


class PolicyUnavailableError(ToolrecError):
    """The policy storage (file or DynamoDB) could not be read or written."""

    public = "the policy store cannot be read or written; retry shortly"


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


def caller_message(exc: ToolrecError) -> str:
    """What a caller of the service is told about ``exc``; the operator's detail goes to the log."""
    return str(exc) if isinstance(exc, RequestError) else exc.public
