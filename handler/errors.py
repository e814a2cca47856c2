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
