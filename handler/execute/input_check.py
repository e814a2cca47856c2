"""Check a call's input against the tool's ``input_schema`` and name the offending fields.

Field names are dotted paths from the input's root (``address.city``, ``items.0``), so an agent can fix the exact
argument; a missing required property is named as the field itself, not as its parent object.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

MAX_FIELD_ERRORS = 20
_MAX_MESSAGE_CHARS = 300


@dataclass(frozen=True)
class FieldProblem:
    field: str
    message: str


def input_problems(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[FieldProblem]:
    """Every way ``arguments`` violates ``schema`` (at most MAX_FIELD_ERRORS), in a stable order."""
    # Imported here: jsonschema costs ~0.1 s of every cold start, and only an execute call needs it.
    from jsonschema import exceptions as schema_errors
    from jsonschema import validators

    validator_class = validators.validator_for(schema)
    try:
        validator_class.check_schema(schema)
    except schema_errors.SchemaError:
        # A catalog schema the build let through but jsonschema cannot use: refuse rather than run unchecked.
        return [FieldProblem("input", "the tool's input_schema is not a valid JSON Schema; the call was not run")]
    validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
    errors = sorted(validator.iter_errors(dict(arguments)), key=lambda e: (list(map(str, e.path)), e.message))
    problems = [problem for error in errors for problem in _describe(error)]
    return problems[:MAX_FIELD_ERRORS]


def _describe(error: ValidationError) -> list[FieldProblem]:
    path = [str(part) for part in error.absolute_path]
    if error.validator == "required" and isinstance(error.instance, dict):
        missing = [name for name in error.validator_value if name not in error.instance]
        return [FieldProblem(_dotted([*path, name]), "is required") for name in missing]
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties", {}) if isinstance(error.schema, dict) else {}
        extra = sorted(name for name in error.instance if name not in known)
        if extra:
            return [FieldProblem(_dotted([*path, name]), "is not an accepted argument") for name in extra]
    return [FieldProblem(_dotted(path), error.message[:_MAX_MESSAGE_CHARS])]


def _dotted(path: list[str]) -> str:
    return ".".join(path) if path else "input"
