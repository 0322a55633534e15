"""A JSON Schema's regular expressions run with a bound: a schema's `pattern` is untrusted code
over model text, and a backtracking one (`^(a|a)*$`) takes seconds per character added.

Patterns run in the `regex` package (Python `re`'s syntax and meaning) with its `timeout=`, out
of a time budget per validation: `PATTERN_BUDGET_S` for every pattern one value is checked
against, in all (`pattern_budget()` opens it; a search outside one gets a budget of its own). A
search the budget cuts short is neither a match nor a mismatch: `search` returns None, and the
keyword reports it as its own error (`pattern_timeout`, a diagnostic that names the pattern), so
a run still ends by its deadline however its schema's patterns backtrack. `regex`'s timeout is
checked while it works, so a search overshoots the budget by a few times at most.

The keywords here replace `jsonschema`'s own where a pattern meets the data: `pattern` (string
values), `patternProperties` and `additionalProperties` beside it (property names).
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any, Final

__all__ = [
    "PATTERN_BUDGET_S",
    "TIMEOUT_KEYWORD",
    "additional_properties_keyword",
    "pattern_budget",
    "pattern_keyword",
    "pattern_properties_keyword",
    "search",
]

PATTERN_BUDGET_S: Final = 0.1
"""Seconds of pattern matching one validation may spend, over all its patterns."""
TIMEOUT_KEYWORD: Final = "pattern_timeout"
"""The `validator` of the error a search cut short reports."""

# when the current validation's pattern budget runs out (a `time.monotonic()`), None: no budget
_ENDS: ContextVar[float | None] = ContextVar("healjson_pattern_budget", default=None)
_MIN_TIMEOUT_S: Final = 0.001


@contextlib.contextmanager
def pattern_budget() -> Iterator[None]:
    """Every pattern searched inside shares one budget of `PATTERN_BUDGET_S` (an enclosing
    budget already open is kept: a validation inside another spends the outer one)."""
    if _ENDS.get() is not None:
        yield
        return
    token = _ENDS.set(time.monotonic() + PATTERN_BUDGET_S)
    try:
        yield
    finally:
        _ENDS.reset(token)


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> Any:
    """`pattern` compiled by `regex` (None: it does not compile; `re` refuses it too, and the
    schema check has said so already where the schema says `format: regex`)."""
    import regex  # loaded with the first pattern

    try:
        return regex.compile(pattern)
    except (regex.error, ValueError, TypeError, OverflowError, RecursionError):
        return None


def search(pattern: str, text: str) -> bool | None:
    """Whether `pattern` matches somewhere in `text` (`re.search`'s meaning); None when the
    budget ran out first (nothing can be said). A search once cut short is not tried again for
    the same text (a value is validated several times while L1 reads it: each would spend its
    budget again)."""
    compiled = _compiled(pattern)
    if compiled is None:
        return False
    if (pattern, text) in _CUT_SHORT:
        return None
    ends = _ENDS.get()
    left = PATTERN_BUDGET_S if ends is None else ends - time.monotonic()
    if left <= 0:
        return None
    try:
        return compiled.search(text, timeout=max(left, _MIN_TIMEOUT_S)) is not None
    except TimeoutError:
        if len(_CUT_SHORT) >= _MAX_CUT_SHORT:
            _CUT_SHORT.clear()
        _CUT_SHORT[(pattern, text)] = None
        return None


# (pattern, text) searches the budget cut short, remembered (bounded; emptied when full)
_CUT_SHORT: dict[tuple[str, str], None] = {}
_MAX_CUT_SHORT: Final = 256


def _timed_out(what: str, pattern: str) -> Any:
    from jsonschema.exceptions import ValidationError

    return ValidationError(
        f"{what} could not be checked against the pattern {pattern!r} within {PATTERN_BUDGET_S} s",
        validator=TIMEOUT_KEYWORD,
        validator_value=pattern,
    )


def pattern_keyword(validator: Any, pattern: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """`pattern`, bounded: a string that does not match (or that the budget could not check)."""
    if not validator.is_type(instance, "string") or not isinstance(pattern, str):
        return
    found = search(pattern, instance)
    if found is None:
        yield _timed_out("the string", pattern)
    elif not found:
        from jsonschema.exceptions import ValidationError

        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def pattern_properties_keyword(
    validator: Any, patterns: Any, instance: Any, schema: Any
) -> Iterator[Any]:
    """`patternProperties`, bounded: each property whose name a pattern matches is checked
    against that pattern's schema."""
    if not validator.is_type(instance, "object") or not isinstance(patterns, dict):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            found = search(pattern, name)
            if found is None:
                yield _timed_out(f"the property name {name!r}", pattern)
            elif found:
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def additional_properties_keyword(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterator[Any]:
    """`additionalProperties`, its property names matched against `patternProperties` with the
    bound (without `patternProperties` it is `jsonschema`'s own)."""
    from jsonschema.exceptions import ValidationError
    from jsonschema.validators import Draft202012Validator

    patterns = schema.get("patternProperties") if isinstance(schema, dict) else None
    if not isinstance(patterns, dict) or not validator.is_type(instance, "object"):
        # jsonschema's own keyword (the same function in every draft's validator table)
        own = Draft202012Validator.VALIDATORS["additionalProperties"]
        yield from own(validator, additional, instance, schema)
        return
    known = schema.get("properties")
    names = known if isinstance(known, dict) else {}
    extras = []
    for name in instance:
        if name in names:
            continue
        matched = False
        for pattern in patterns:
            found = search(pattern, name)
            if found is None:
                yield _timed_out(f"the property name {name!r}", pattern)
                matched = True  # not checked: not reported as extra as well
                break
            if found:
                matched = True
                break
        if not matched:
            extras.append(name)
    if validator.is_type(additional, "object"):
        for name in extras:
            yield from validator.descend(instance[name], additional, path=name)
    elif additional is False and extras:
        listed = ", ".join(repr(name) for name in sorted(extras, key=str))
        shown = ", ".join(repr(pattern) for pattern in sorted(patterns))
        yield ValidationError(f"{listed} do not match any of the regexes: {shown}")


BOUNDED_KEYWORDS: Final = {
    "pattern": pattern_keyword,
    "patternProperties": pattern_properties_keyword,
    "additionalProperties": additional_properties_keyword,
}
"""The keywords that replace `jsonschema`'s (see the module)."""
