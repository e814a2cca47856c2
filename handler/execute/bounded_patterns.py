"""JSON Schema's regular-expression keywords under one time budget per call.

A catalog schema (copied verbatim from an upstream MCP server by ``build --from-mcp``) may carry a pattern that
backtracks catastrophically ("(a+)+$"), and Python's ``re`` has no timeout: one input would hold the worker, and
with it every request, for minutes (issue 15 item 1: validation bounded in time). These keywords run the same
checks as jsonschema's own with the ``regex`` module, whose searches take a timeout, against a deadline shared
by the whole call.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from typing import Any

PATTERN_BUDGET_S = 0.25  # every pattern check of one call together; a sane pattern takes microseconds


class PatternTooSlowError(Exception):
    """The schema's patterns took longer than the budget on this input."""


_deadline: ContextVar[float] = ContextVar("pattern_deadline")


@contextlib.contextmanager
def pattern_budget(seconds: float = PATTERN_BUDGET_S) -> Iterator[None]:
    """Every pattern check inside shares one deadline, ``seconds`` from now."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


@functools.cache
def bounded_validator_class(validator_class: Any) -> Any:
    """``validator_class`` with pattern, patternProperties and additionalProperties checked under the budget
    of the enclosing ``pattern_budget`` (made once per class: extending one costs ~0.5 ms)."""
    import regex
    from jsonschema import validators
    from jsonschema.exceptions import ValidationError

    def search(pattern: str, text: str) -> bool:
        remaining = _deadline.get() - time.monotonic()
        if remaining <= 0:
            raise PatternTooSlowError(pattern)
        try:
            return regex.search(pattern, text, timeout=remaining) is not None
        except TimeoutError:
            raise PatternTooSlowError(pattern) from None

    def pattern(validator: Any, expected: str, instance: Any, schema: Any) -> Iterator[Any]:
        if validator.is_type(instance, "string") and not search(expected, instance):
            yield ValidationError(f"{instance!r} does not match {expected!r}")

    def pattern_properties(validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        for expected, subschema in patterns.items():
            for key, value in instance.items():
                if search(expected, key):
                    yield from validator.descend(value, subschema, path=key, schema_path=expected)

    def additional_properties(validator: Any, allowed: Any, instance: Any, schema: Any) -> Iterator[Any]:
        if not validator.is_type(instance, "object"):
            return
        known = schema.get("properties", {})
        patterns = list(schema.get("patternProperties", {}))
        extras = [k for k in instance if k not in known and not any(search(p, k) for p in patterns)]
        if validator.is_type(allowed, "object"):
            for extra in extras:
                yield from validator.descend(instance[extra], allowed, path=extra)
        elif not allowed and extras:
            shown = ", ".join(repr(e) for e in sorted(extras, key=str))
            yield ValidationError(f"Additional properties are not allowed ({shown} unexpected)")

    keywords = {"pattern": pattern, "patternProperties": pattern_properties}
    keywords["additionalProperties"] = additional_properties
    return validators.extend(validator_class, keywords)
