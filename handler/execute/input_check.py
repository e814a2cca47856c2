"""Check a call's input against the tool's ``input_schema`` and name the offending fields.

Field names are dotted paths from the input's root (``address.city``, ``items.0``), so an agent can fix the exact
argument; a missing required property is named as the field itself, not as its parent object.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from handler.catalog.json_limits import MAX_INPUT_DEPTH, json_problem, printable, schema_problems
from handler.errors import FieldProblem
from handler.execute.validation_budget import (
    VALIDATION_BUDGET_S,
    PatternTooSlowError,
    ValidationTooSlowError,
    bounded_validator_class,
    validation_budget,
)

if TYPE_CHECKING:
    from jsonschema.exceptions import ValidationError

MAX_FIELD_ERRORS = 20
_MAX_MESSAGE_CHARS = 300


def input_problems(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[FieldProblem]:
    """Every way ``arguments`` violates ``schema`` (at most MAX_FIELD_ERRORS), in a stable order.

    Never touches the network, and bounded: only references inside the schema resolve (issue 15: a remote ``$ref``
    was fetched, with no timeout, on every call), input past MAX_INPUT_DEPTH is refused before validation, the
    whole check runs under one time budget (validation_budget.py), and a schema that recurses without end is a
    refusal rather than a RecursionError.
    """
    # The build refuses these (build_index.build); an index written before it did may still hold one.
    unusable = schema_problems(schema)
    if unusable:
        return [
            FieldProblem("input", f"the tool's input_schema cannot be used: {p}; the call was not run")
            for p in unusable
        ]
    unsendable = json_problem(arguments, MAX_INPUT_DEPTH)
    if unsendable is not None:
        return [FieldProblem(_dotted(list(unsendable.path)), unsendable.reason)]
    try:
        errors = _validation_errors(schema, arguments)
    except _UnusableSchemaError as exc:
        return [FieldProblem("input", f"the tool's input_schema {exc}; the call was not run")]
    # dict.fromkeys: two keywords (say, allOf branches) may find the same problem; it is listed once.
    problems = dict.fromkeys(problem for error in _once_per_required(errors) for problem in _describe(error))
    return list(problems)[:MAX_FIELD_ERRORS]


class _UnusableSchemaError(Exception):
    """The tool's schema, not the caller's input, stops the check (the message says how)."""


def _validation_errors(schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> list[ValidationError]:
    # Imported here: jsonschema costs ~0.1 s of every cold start, and only an execute call needs it.
    from jsonschema import exceptions as schema_errors
    from jsonschema import validators
    from referencing.exceptions import Unresolvable

    validator_class = bounded_validator_class(validators.validator_for(schema))
    try:
        validator_class.check_schema(schema)
        validator = validator_class(schema, registry=_offline_registry(), format_checker=validator_class.FORMAT_CHECKER)
        with validation_budget():
            return sorted(validator.iter_errors(dict(arguments)), key=lambda e: (list(map(str, e.path)), e.message))
    except schema_errors.SchemaError:
        # A catalog schema the build let through but jsonschema cannot use: refuse rather than run unchecked.
        raise _UnusableSchemaError("is not a valid JSON Schema") from None
    except Unresolvable as exc:
        raise _UnusableSchemaError(
            f"has a $ref that does not resolve within it ({printable(str(exc.ref)[:200])})"
        ) from None
    except PatternTooSlowError as exc:
        raise _UnusableSchemaError(
            f"pattern {printable(str(exc)[:100])!r} took over {VALIDATION_BUDGET_S:g} s on this input"
        ) from None
    except ValidationTooSlowError:
        raise _UnusableSchemaError(f"took over {VALIDATION_BUDGET_S:g} s to check on this input") from None
    except RecursionError:
        # Only a schema can cause this now (the input is at most MAX_INPUT_DEPTH deep): references in a circle.
        raise _UnusableSchemaError("refers to itself without end") from None


def _once_per_required(errors: list[ValidationError]) -> Iterator[ValidationError]:
    """jsonschema reports a ``required`` keyword once per missing name, and _describe lists every missing name
    from one report: keep the first (issue 15: N missing fields were listed N times each)."""
    seen: set[tuple[str, ...]] = set()
    for error in errors:
        if error.validator == "required":
            keyword = (*map(str, error.absolute_path), "/", *map(str, error.absolute_schema_path))
            if keyword in seen:
                continue
            seen.add(keyword)
        yield error


@functools.cache
def _offline_registry() -> Any:
    """Where validation resolves references: the schema itself and the JSON Schema meta-schemas (jsonschema adds
    them); any other URI is refused, not fetched."""
    from referencing import Registry

    return Registry(retrieve=_refuse_retrieval)  # type: ignore[call-arg]


def _refuse_retrieval(uri: str) -> Any:
    from referencing.exceptions import NoSuchResource

    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # an attrs class mypy cannot read


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
