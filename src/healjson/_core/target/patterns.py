"""A JSON Schema's regular expressions run with a bound: a schema's `pattern` is untrusted code
over model text, and a backtracking one (`^(a|a)*$`) takes seconds per character added.

Patterns run in the `regex` package (Python `re`'s syntax and meaning) with its `timeout=`, out
of a time budget per validation: `PATTERN_BUDGET_S` for every pattern one value is checked
against, in all (`pattern_budget()` opens it; a search outside one gets a budget of its own). A
search the budget cuts short is neither a match nor a mismatch: `search` returns None, and the
keyword reports it as its own error (`pattern_timeout`, a diagnostic that names the pattern), so
a run still ends by its deadline however its schema's patterns backtrack. `regex`'s timeout is
checked while it works, so a search overshoots the budget by a few times at most.

A search cut short fails the whole value wherever it happens: a keyword that reads a
subschema's verdict (`not`, `oneOf`, `anyOf`, `if`, `contains`, `unevaluated*`) and saw one
reports the timeout instead of its own verdict (`not` would turn the unchecked pattern into a
pass); `cut_short_count()` tells a caller (the fast path) that one happened.

`re`'s meaning is kept where `regex` (its VERSION0) reads the same text differently
(`regex_pattern`): inside a character class a `[` is a literal (`[[:alpha:]]` is no POSIX
class), a `{` that is no `re` quantifier is a literal (`a{e<=1}` is no fuzzy match), and `\\s`
is `str.isspace()`'s set; a pattern `re` cannot compile matches nothing.

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
    "cut_short_count",
    "pattern_budget",
    "pattern_keyword",
    "pattern_properties_keyword",
    "regex_pattern",
    "search",
]

PATTERN_BUDGET_S: Final = 0.1
"""Seconds of pattern matching one validation may spend, over all its patterns."""
TIMEOUT_KEYWORD: Final = "pattern_timeout"
"""The `validator` of the error a search cut short reports."""

# when the current validation's pattern budget runs out (a `time.monotonic()`), None: no budget
_ENDS: ContextVar[float | None] = ContextVar("healjson_pattern_budget", default=None)
_MIN_TIMEOUT_S: Final = 0.001
# searches cut short so far in this context, and the last one's pattern
_CUTS: ContextVar[tuple[int, str]] = ContextVar("healjson_pattern_cuts", default=(0, ""))


def cut_short_count() -> int:
    """How many searches the budget has cut short in this context so far (a count that grows
    while a validation runs means its verdict cannot be trusted)."""
    return _CUTS.get()[0]


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
    import re
    import warnings

    import regex  # loaded with the first pattern

    try:
        with warnings.catch_warnings():  # `re`'s FutureWarning on set-like syntax: not ours
            warnings.simplefilter("ignore")
            re.compile(pattern)
        return regex.compile(regex_pattern(pattern), regex.VERSION0)
    except (re.error, regex.error, ValueError, TypeError, OverflowError, RecursionError):
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
        return _cut_short(pattern)
    ends = _ENDS.get()
    left = PATTERN_BUDGET_S if ends is None else ends - time.monotonic()
    if left <= 0:
        return _cut_short(pattern)
    try:
        return compiled.search(text, timeout=max(left, _MIN_TIMEOUT_S)) is not None
    except TimeoutError:
        if len(_CUT_SHORT) >= _MAX_CUT_SHORT:
            _CUT_SHORT.clear()
        _CUT_SHORT[(pattern, text)] = None
        return _cut_short(pattern)


def _cut_short(pattern: str) -> bool | None:
    """None (a search cut short), counted (`cut_short_count`)."""
    _CUTS.set((_CUTS.get()[0] + 1, pattern))
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


_JUDGING: Final = ("not", "oneOf", "anyOf", "if", "contains")
_JUDGING_MORE: Final = ("unevaluatedProperties", "unevaluatedItems")
"""The keywords that read a subschema's verdict instead of passing its errors on."""


@functools.lru_cache(maxsize=64)
def _own_keywords(meta_schema_id: str) -> Any:
    """The keyword functions of the `jsonschema` draft whose meta-schema is `meta_schema_id`."""
    from jsonschema import Draft202012Validator, validators

    found = validators.validator_for({"$schema": meta_schema_id}, default=Draft202012Validator)
    return found.VALIDATORS


def _judging(keyword: str) -> Any:
    """`keyword` as the validator's draft defines it (nothing where the draft has no such
    keyword), reporting a search cut short inside it as the value's error."""

    def bounded(validator: Any, value: Any, instance: Any, schema: Any) -> Iterator[Any]:
        meta = validator.META_SCHEMA if isinstance(validator.META_SCHEMA, dict) else {}
        own = _own_keywords(str(meta.get("$schema", ""))).get(keyword)
        if own is None:
            return
        before = _CUTS.get()[0]
        errors = list(own(validator, value, instance, schema) or ())
        count, pattern = _CUTS.get()
        if count == before:
            yield from errors
            return
        timed_out = [error for error in errors if error.validator == TIMEOUT_KEYWORD]
        yield from timed_out or [_timed_out("the value", pattern)]

    bounded.__name__ = f"bounded_{keyword}"
    return bounded


BOUNDED_KEYWORDS: Final = {
    "pattern": pattern_keyword,
    "patternProperties": pattern_properties_keyword,
    "additionalProperties": additional_properties_keyword,
    **{keyword: _judging(keyword) for keyword in (*_JUDGING, *_JUDGING_MORE)},
}
"""The keywords that replace `jsonschema`'s (see the module)."""


_QUANTIFIER_END: Final = frozenset("0123456789,")
_SPACE: Final = "\\s\\x1c-\\x1f"  # `re`'s `\s` is str.isspace(): these four besides


def regex_pattern(pattern: str) -> str:
    """`pattern` (one `re` compiles) written so that `regex` (VERSION0) reads what `re` reads:
    a `[` inside a character class and a `{` that starts no `re` quantifier escaped, `\\s`
    and `\\S` outside a class spelled as `re`'s sets. One pass, linear in the pattern."""
    out: list[str] = []
    spaces = {} if _ascii(pattern) else {"\\s": f"[{_SPACE}]", "\\S": f"[^{_SPACE}]"}
    verbose = [_starts_verbose(pattern)]
    size = len(pattern)
    at = 0
    while at < size:
        char = pattern[at]
        if char == "\\":
            pair = pattern[at : at + 2]
            out.append(spaces.get(pair, pair))
            at += 2
        elif char == "[":
            at = _char_class(pattern, at, out)
        elif char == "{":
            end = _quantifier_end(pattern, at)
            out.append(pattern[at:end] if end else "\\{")
            at = end or at + 1
        elif char == "#" and verbose[-1]:  # a comment: to the end of the line
            end = pattern.find("\n", at)
            end = size if end < 0 else end
            out.append(pattern[at:end].replace("[", "\\[").replace("{", "\\{"))
            at = end
        else:
            if char == "(":
                verbose.append(_group_verbose(pattern, at, verbose[-1]))
            elif char == ")" and len(verbose) > 1:
                verbose.pop()
            out.append(char)
            at += 1
    return "".join(out)


def _char_class(pattern: str, at: int, out: list[str]) -> int:
    """Copy the class opening at `at` (as `re` reads it: a `]` first is a literal, a `[`
    anywhere is one), escaping each `[` inside; where it ends."""
    out.append("[")
    at += 1
    if pattern.startswith("^", at):
        out.append("^")
        at += 1
    first = True
    while at < len(pattern):
        char = pattern[at]
        if char == "\\":
            out.append(pattern[at : at + 2])
            at += 2
        elif char == "]" and not first:
            out.append("]")
            return at + 1
        else:
            out.append("\\[" if char == "[" else "\\]" if char == "]" else char)
            at += 1
        first = False
    return at


def _quantifier_end(pattern: str, at: int) -> int:
    """Where the `re` quantifier `{m}`, `{m,}`, `{,n}`, `{m,n}` (`{,}`) opening at `at` ends;
    0: the `{` is a literal."""
    end = at + 1
    commas = 0
    while end < len(pattern) and pattern[end] in _QUANTIFIER_END:
        commas += pattern[end] == ","
        end += 1
    if end == at + 1 or commas > 1 or not pattern.startswith("}", end):
        return 0
    return end + 1


def _ascii(pattern: str) -> bool:
    """Whether some inline flag group of `pattern` names ASCII (`(?a)`, `(?a:...)`)."""
    at = pattern.find("(?")
    while at >= 0:
        end = at + 2
        while end < len(pattern) and pattern[end].isalpha():
            end += 1
        if "a" in pattern[at + 2 : end] and pattern.startswith((")", ":", "-"), end):
            return True
        at = pattern.find("(?", end)
    return False


def _starts_verbose(pattern: str) -> bool:
    """Whether the pattern's global flags (`(?x)` at its start) turn VERBOSE on."""
    if not pattern.startswith("(?"):
        return False
    end = pattern.find(")", 2)
    flags = pattern[2:end] if end > 0 else ""
    return flags.isalpha() and "x" in flags


def _group_verbose(pattern: str, at: int, verbose: bool) -> bool:
    """Whether VERBOSE holds inside the group opening at `at` (`(?x:...)`, `(?-x:...)`)."""
    if not pattern.startswith("(?", at):
        return verbose
    end = at + 2
    while end < len(pattern) and (pattern[end].isalpha() or pattern[end] == "-"):
        end += 1
    if not pattern.startswith(":", end) or end == at + 2:
        return verbose
    on, _, off = pattern[at + 2 : end].partition("-")
    return ("x" in on or verbose) and "x" not in off
