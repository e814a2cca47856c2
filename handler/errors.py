"""The exception hierarchy of toolrec, each error with its API ``name`` and HTTP ``status`` by class.

The adapters map these in one place each (REST: handler/api/errors.py; MCP: a tool result with ``isError``), and
read only what a class says: the status, the name, ``public`` (what a caller is told) and ``field_errors``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class FieldProblem:
    """One field of a request (or of a tool's input) and what is wrong with it."""

    field: str
    message: str


class ToolrecError(Exception):
    """Base of every error toolrec raises on purpose.

    Its message is for the operator (CLI output, the service log) and may name files, buckets, tables or a
    parser's position; a caller of the service is told ``public`` instead, since a 503 reaches callers whose key
    was never checked (issue 15 item 8): the class's ``default_public`` unless the raiser gives one.
    """

    name = "internal_error"
    status = 500
    default_public = "the service cannot answer right now; retry shortly"
    field_errors: tuple[FieldProblem, ...] = ()

    def __init__(self, message: str = "", *, public: str | None = None) -> None:
        super().__init__(message)
        self._public = public

    @property
    def public(self) -> str:
        return self._public or self.default_public


class CatalogError(ToolrecError):
    """A catalog row is invalid; the message names the file and line."""

    default_public = "the tool catalog is invalid"


class ServiceUnavailableError(ToolrecError):
    """A dependency is missing, unreadable or refused for this request; a retry may succeed."""

    name = "service_unavailable"
    status = 503


class ModelMissingError(ServiceUnavailableError):
    """The local model directory is absent or incomplete."""

    default_public = "the embedding model is not installed"


class IntegrityError(ServiceUnavailableError):
    """A file does not match the sha256 recorded for it, or an index does not fit the model or schema."""

    default_public = "the published tool index (or the model) failed its integrity checks and is not served"


class IndexUnavailableError(ServiceUnavailableError):
    """No index could be loaded (not built yet, storage unreachable, or refused as corrupt)."""

    default_public = "no index is loaded: none is published yet, or its storage cannot be read"


class IndexNotPublishedError(IndexUnavailableError):
    """The index store holds no build yet (no LATEST)."""

    default_public = "no index is loaded: none is published yet (run `toolrec build`)"


class PolicyUnavailableError(ServiceUnavailableError):
    """The policy storage (file or DynamoDB) could not be read or written."""

    default_public = "the policy store cannot be read or written; retry shortly"


class RequestError(ToolrecError):
    """A request the service refuses; its message is written for the caller."""

    name = "bad_request"
    status = 400

    @property
    def public(self) -> str:
        return str(self)


class UnauthorizedError(RequestError):
    name = "unauthorized"
    status = 401


class ForbiddenError(RequestError):
    name = "forbidden"
    status = 403


class NotFoundError(RequestError):
    name = "not_found"
    status = 404


class InputInvalidError(RequestError):
    """The input does not match the tool's input_schema (or a meta-tool's arguments); each field is named."""

    name = "validation_error"

    def __init__(self, message: str, field_errors: Sequence[FieldProblem] = ()) -> None:
        super().__init__(message)
        self.field_errors = tuple(field_errors)


class AuthorizationRequiredError(RequestError):
    """The tool needs an app connection (or scopes) the user has not granted; nothing ran."""

    name = "authorization_required"
    status = 403

    def __init__(self, message: str, app_id: str, authorize_url: str | None, missing_scopes: tuple[str, ...]) -> None:
        super().__init__(message)
        self.app_id = app_id
        self.authorize_url = authorize_url
        self.missing_scopes = missing_scopes


# A run that failed: the tool ran (or may have), so these become a result with success false, never an HTTP error.
class ExecutionError(ToolrecError):
    """A run that did not produce an output. ``name`` is the stable error name shown to callers."""

    name = "execution_failed"


class ToolFailedError(ExecutionError):
    """The tool ran and reported an error of its own."""

    name = "tool_error"


class ExecutorTimeoutError(ExecutionError):
    """No answer within the tool's ``timeout_s``. The call may have run: it is never retried."""

    name = "executor_timeout"


class ExecutorUnavailableError(ExecutionError):
    """The executor could not be reached or answered with something that is not a result."""

    name = "executor_unavailable"


class OutputUnreturnableError(ExecutorUnavailableError):
    """The tool ran, but what it answered cannot be sent back as JSON (nested too deep, NaN, a lone surrogate)."""

    def __init__(self, tool_name: str, why: str) -> None:
        # Says that it ran: a caller that retries on this repeats the tool's side effect.
        super().__init__(f"{tool_name} ran, but its output cannot be returned: {why}")
