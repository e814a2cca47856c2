"""The whole check of one call's input against its tool's schema, under one time budget (issue 22 item 3).

A catalog schema (copied verbatim from an upstream MCP server by ``build --from-mcp``) decides how much work its
check costs, and a caller decides the input: a pattern that backtracks without end ("(a+)+$"; Python's ``re`` has
no timeout, issue 15), jsonschema's pairwise ``uniqueItems`` (a 59 KB body took 49 s of CPU) or plain breadth (300
``anyOf`` branches for each of 5,000 items, 25 s) would each hold a worker, and with it every request. So every
keyword checks a deadline shared by the whole call before it runs, patterns run with the ``regex`` module's
timeout against the same deadline, and ``uniqueItems`` sorts (json_equality.py) instead of comparing pairs.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

from handler.execute.json_equality import first_duplicate

# The whole check of one call. An ordinary input takes microseconds; one filling the 64 KB body with 12,000 bounded
# integers or 2,000 objects takes 0.1-0.2 s of CPU on a loaded 2-core machine (measured), so this leaves it 5×.
VALIDATION_BUDGET_S = 1.0

Keyword = Callable[[Any, Any, Any, Any], Any]


class ValidationTooSlowError(Exception):
    """Checking this input against the schema took longer than the budget."""


class PatternTooSlowError(ValidationTooSlowError):
    """A pattern of the schema used up the budget on this input (the pattern is the argument)."""


_deadline: ContextVar[float] = ContextVar("validation_deadline")


@contextlib.contextmanager
def validation_budget(seconds: float = VALIDATION_BUDGET_S) -> Iterator[None]:
    """Every keyword checked inside shares one deadline, ``seconds`` from now."""
    token = _deadline.set(time.monotonic() + seconds)
    try:
        yield
    finally:
        _deadline.reset(token)


def _remaining() -> float:
    return _deadline.get() - time.monotonic()


@functools.cache
def bounded_validator_class(validator_class: Any) -> Any:
    """``validator_class`` with every keyword checked under the enclosing ``validation_budget``, and its pattern
    and uniqueItems keywords replaced by bounded ones (made once per class: extending one costs ~0.5 ms)."""
    from jsonschema import validators

    keywords = {**validator_class.VALIDATORS, **_bounded_keywords()}
    return validators.extend(validator_class, {name: _within_budget(check) for name, check in keywords.items()})


def _within_budget(check: Keyword) -> Keyword:
    def checked(validator: Any, value: Any, instance: Any, schema: Any) -> Any:
        if _remaining() <= 0:
            raise ValidationTooSlowError
        return check(validator, value, instance, schema)

    return checked


def _bounded_keywords() -> dict[str, Keyword]:
    """The same checks as jsonschema's own, with the regex module's timeouts and a sorting uniqueItems."""
    return {
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
        "uniqueItems": _unique_items,
    }


# jsonschema and regex are imported inside: only an execute call needs them, and a cold start does not pay for them.
def _search(pattern: str, text: str) -> bool:
    import regex

    remaining = _remaining()
    if remaining <= 0:
        raise PatternTooSlowError(pattern)
    try:
        return regex.search(pattern, text, timeout=remaining) is not None
    except TimeoutError:
        raise PatternTooSlowError(pattern) from None


def _pattern(validator: Any, expected: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not _search(expected, instance):
        yield ValidationError(f"{instance!r} does not match {expected!r}")


def _pattern_properties(validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for expected, subschema in patterns.items():
        for key, value in instance.items():
            if _search(expected, key):
                yield from validator.descend(value, subschema, path=key, schema_path=expected)


def _additional_properties(validator: Any, allowed: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    known = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [k for k in instance if k not in known and not any(_search(p, k) for p in patterns)]
    if validator.is_type(allowed, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], allowed, path=extra)
    elif not allowed and extras:
        shown = ", ".join(repr(e) for e in sorted(extras, key=str))
        yield ValidationError(f"Additional properties are not allowed ({shown} unexpected)")


def _unique_items(validator: Any, unique: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if unique and validator.is_type(instance, "array") and (pair := first_duplicate(instance)) is not None:
        yield ValidationError(f"has non-unique elements (items {pair[0]} and {pair[1]} are equal)")
