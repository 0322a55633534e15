"""`jsonschema`'s errors as pydantic's error details, so one translator (`schema_errors`) makes
the diagnostic triples for both kinds of target.

Each error keeps its place in the data (the JSON path as `loc`) and gets pydantic's error type
where one means the same (`missing` per absent required property, `extra_forbidden` per key
`additionalProperties: false` refuses, the bounds, lengths, `enum`, `const`, `pattern`,
`multipleOf`); any other keyword is `json_schema_<keyword>`, phrased "should ..." like
pydantic's messages. As pydantic reports a value's first failure, a value that breaks several
keywords gets one error: `enum` / `const` over `type` over the rest (in schema order).

An `anyOf` / `oneOf` that no branch satisfies reports every branch's error when they all fail
on the value itself, else the branch that came closest (the fewest errors, the deepest; then
`jsonschema`'s `best_match`) with all its errors; a `{"type": "null"}` branch is left out, as
pydantic leaves out `None` for an `Optional[X]` that is not null. The order is `jsonschema`'s,
which follows the schema (stable); repeats are dropped; at most `MAX_ERRORS` are reported (the
errors are produced lazily: the work stops there too).
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Iterable, Iterator
from typing import Any, Final

from pydantic_core import PydanticCustomError

from healjson._core.diagnostic import short_repr

from .patterns import PATTERN_BUDGET_S, TIMEOUT_KEYWORD, search

__all__ = ["MAX_ERRORS", "holds_infinity", "line_errors", "overflow_lines"]

MAX_ERRORS: Final = 100

_TYPE_WORDS: Final = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "a boolean",
    "object": "an object",
    "array": "an array",
    "null": "null",
}
_BOUNDS: Final = {
    "minimum": ("greater_than_equal", "ge"),
    "exclusiveMinimum": ("greater_than", "gt"),
    "maximum": ("less_than_equal", "le"),
    "exclusiveMaximum": ("less_than", "lt"),
}
_SCHEMA_CHARS: Final = 200


def line_errors(validator: Any, value: Any, errors: Iterable[Any] | None = None) -> list[Any]:
    """Pydantic's `InitErrorDetails` for `value`'s errors under `validator` (at least one):
    `errors`, its walk already begun, or a walk of its own."""
    out: list[Any] = []
    seen: set[tuple[Any, ...]] = set()
    placed: dict[tuple[Any, ...], tuple[int, int]] = {}  # loc -> (index in out, rank)
    found = validator.iter_errors(value) if errors is None else errors
    for error in itertools.islice(found, MAX_ERRORS):
        for rank, alternative, line in _lines(error, False):
            loc = line["loc"]
            if not alternative and rank < _ANY_KEY:
                # several keywords that one value breaks (`enum` and `type`): one error, the
                # one that says the most, as pydantic stops at a value's first failure
                known = placed.get(loc)
                if known is not None:
                    if rank < known[1]:
                        out[known[0]] = line
                        placed[loc] = (known[0], rank)
                    continue
                placed[loc] = (len(out), rank)
            kind = line["type"]
            key = (loc, kind if isinstance(kind, str) else kind.message())
            if key not in seen:
                seen.add(key)
                out.append(line)
        if len(out) >= MAX_ERRORS:
            break
    if not out:  # a validator that reports nothing it can name: still a failure
        out.append(_custom("json_schema", (), value, "satisfy the schema"))
    return out[:MAX_ERRORS]


def holds_infinity(value: Any) -> bool:
    """Whether JSON data holds an infinite float at any depth (iteratively: no depth limit)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float):
            if math.isinf(item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False


class _Written(str):
    """A number literal of the JSON text that a 64-bit float cannot hold, as it was written."""


def _float_or_written(literal: str) -> Any:
    number = float(literal)
    return _Written(literal) if math.isinf(number) else number


def overflow_lines(data: str | bytes | bytearray, value: Any) -> list[Any]:
    """One error per number of the JSON text `data` (parsed as `value`) too large for a 64-bit
    float (`1e400`, read as infinity), at its place, quoting the number as written."""
    try:  # the literals: the standard parser hands each decimal number over as written
        written: Any = json.loads(data, parse_float=_float_or_written)
    except (ValueError, RecursionError):  # parsed above, but too deep or too long for it
        written = value
    out: list[Any] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [((), written)]
    while stack and len(out) < MAX_ERRORS:
        loc, item = stack.pop()
        if isinstance(item, _Written) or (isinstance(item, float) and math.isinf(item)):
            shown = str.__str__(item) if isinstance(item, _Written) else item
            rule = f"be a number within range ({shown} is out of range for a 64-bit float)"
            out.append(_custom("json_schema_number_range", loc, shown, rule))
        elif isinstance(item, dict):
            stack.extend(((*loc, key), sub) for key, sub in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend(((*loc, index), sub) for index, sub in reversed(list(enumerate(item))))
    return out


_RANKS: Final = {"enum": 0, "const": 0, "type": 1}
_ANY_KEY: Final = 3  # errors named by their own key (a missing or extra property): all kept


def _lines(error: Any, alternative: bool) -> Iterator[tuple[int, bool, dict[str, Any]]]:
    """`(rank, alternative, line)` for each error detail: `alternative` for the errors of a
    union's branches (several at one place mean "one of these")."""
    keyword = error.validator
    if keyword in ("anyOf", "oneOf") and error.context:
        for inner in _closest(error):
            yield from _lines(inner, True)
        return
    loc = tuple(error.absolute_path)
    want, got = error.validator_value, error.instance
    if keyword == "required" and isinstance(got, dict) and isinstance(want, list):
        for name in want:
            if isinstance(name, str) and name not in got:
                yield _ANY_KEY, alternative, {"type": "missing", "loc": (*loc, name), "input": got}
        return
    if keyword == "dependentRequired" and isinstance(got, dict) and isinstance(want, dict):
        for present, needed in want.items():
            if present in got and isinstance(needed, list):
                for name in needed:
                    if isinstance(name, str) and name not in got:
                        line = {"type": "missing", "loc": (*loc, name), "input": got}
                        yield _ANY_KEY, alternative, line
        return
    if keyword == "additionalProperties" and want is False and isinstance(got, dict):
        for key in _extra_keys(error.schema, got):
            line = {"type": "extra_forbidden", "loc": (*loc, key), "input": got[key]}
            yield _ANY_KEY, alternative, line
        return
    yield _RANKS.get(keyword, 2), alternative, _line(keyword, loc, want, got, error)


def _line(keyword: Any, loc: tuple[Any, ...], want: Any, got: Any, error: Any) -> dict[str, Any]:
    if keyword in _BOUNDS:
        if keyword in ("minimum", "maximum") and _draft4_exclusive(error.schema, keyword):
            keyword = "exclusiveMinimum" if keyword == "minimum" else "exclusiveMaximum"
        kind, key = _BOUNDS[keyword]
        return {"type": kind, "loc": loc, "input": got, "ctx": {key: want}}
    if keyword == "minLength":
        return {"type": "string_too_short", "loc": loc, "input": got, "ctx": {"min_length": want}}
    if keyword == "maxLength":
        return {"type": "string_too_long", "loc": loc, "input": got, "ctx": {"max_length": want}}
    if keyword in ("minItems", "maxItems"):
        bound = "min_length" if keyword == "minItems" else "max_length"
        ctx = {"field_type": "List", bound: want, "actual_length": len(got)}
        kind = "too_short" if keyword == "minItems" else "too_long"
        return {"type": kind, "loc": loc, "input": got, "ctx": ctx}
    if keyword == TIMEOUT_KEYWORD:
        rule = (
            f"match the pattern {_json(want)}, which could not be checked within "
            f"{PATTERN_BUDGET_S} s (the pattern backtracks: the schema should use a simpler one)"
        )
        return _custom("json_schema_pattern_timeout", loc, got, rule)
    if keyword == "pattern":
        return {
            "type": "string_pattern_mismatch",
            "loc": loc,
            "input": got,
            "ctx": {"pattern": want},
        }
    if keyword == "enum" and isinstance(want, list):
        return {"type": "enum", "loc": loc, "input": got, "ctx": {"expected": _choices(want)}}
    if keyword == "const":
        return {"type": "literal_error", "loc": loc, "input": got, "ctx": {"expected": _json(want)}}
    if keyword == "multipleOf":
        return {"type": "multiple_of", "loc": loc, "input": got, "ctx": {"multiple_of": want}}
    return _custom(f"json_schema_{keyword or 'false'}", loc, got, _rule(keyword, want, error))


def _draft4_exclusive(schema: Any, keyword: str) -> bool:
    """Draft 4's `exclusiveMinimum: true` beside `minimum` (the bound itself is excluded)."""
    flag = "exclusiveMinimum" if keyword == "minimum" else "exclusiveMaximum"
    return isinstance(schema, dict) and schema.get(flag) is True


def _rule(keyword: Any, want: Any, error: Any) -> str:
    """What the value should do, for the keywords pydantic has no error type for."""
    if keyword == "type":
        kinds = [want] if isinstance(want, str) else want if isinstance(want, list) else []
        words = [_TYPE_WORDS.get(str(kind), str(kind)) for kind in kinds]
        return "be " + _or(words) if words else "have another type"
    if keyword == "uniqueItems":
        return "have unique items"
    if keyword in ("minProperties", "maxProperties"):
        word = "at least" if keyword == "minProperties" else "at most"
        return f"have {word} {want} properties"
    if keyword == "contains":
        return f"contain an item matching {_schema(want)}"
    if keyword in ("minContains", "maxContains"):
        word = "at least" if keyword == "minContains" else "at most"
        return f"contain {word} {want} items matching {_schema(error.schema.get('contains'))}"
    if keyword == "not":
        return f"not match {_schema(want)}"
    if keyword == "oneOf":
        return "match exactly one of the allowed forms (it matches several)"
    if keyword in ("unevaluatedProperties", "unevaluatedItems"):
        what = "properties" if keyword.endswith("Properties") else "items"
        return f"not hold {what} the schema does not define"
    if keyword == "propertyNames":
        return f"have property names matching {_schema(want)}"
    if keyword is None or want is False:
        return "not be here (the schema allows no value at this place)"
    return f"satisfy the schema keyword `{keyword}` = {_schema(want)}"


def _custom(kind: str, loc: tuple[Any, ...], got: Any, rule: str) -> dict[str, Any]:
    # the variable text goes in the context: a `{` in it is not read as a placeholder
    return {
        "type": PydanticCustomError(kind, "Input should {rule}", {"rule": rule}),
        "loc": loc,
        "input": got,
    }


def _closest(error: Any) -> list[Any]:
    """The errors to report for a failed `anyOf` / `oneOf`: every branch's when all fail on
    the value itself, else the errors of the branch that came closest: the fewest errors, the
    deepest, then the one `best_match` picks. A null branch's error is left out (the value is
    not null)."""
    from jsonschema.exceptions import best_match

    # `anyOf: [X, {"type": "null"}]` is how a schema says "X or null" (pydantic's
    # `Optional[X]`): a value that is not null is X gone wrong, reported as X's errors
    inner = [item for item in error.context if not _null_only(item)] or list(error.context)
    depth = len(error.absolute_path)
    if all(len(item.absolute_path) == depth for item in inner):
        return inner
    groups: dict[Any, list[Any]] = {}
    for item in inner:
        groups.setdefault(_branch(item), []).append(item)
    best = best_match(inner)
    favoured = _branch(best) if best is not None else None

    def closeness(branch: Any) -> tuple[int, int, bool]:
        found = groups[branch]
        return len(found), -max(len(item.absolute_path) for item in found), branch != favoured

    return groups[min(groups, key=closeness)]


def _null_only(error: Any) -> bool:
    """An error of the `{"type": "null"}` branch of a union."""
    return bool(error.validator == "type" and error.validator_value == "null")


def _branch(error: Any) -> Any:
    """Which branch of its `anyOf` / `oneOf` an error of its context belongs to."""
    path = error.relative_schema_path
    return path[0] if path else None


def _extra_keys(schema: Any, data: dict[str, Any]) -> list[str]:
    props = schema.get("properties") if isinstance(schema, dict) else None
    patterns = schema.get("patternProperties") if isinstance(schema, dict) else None
    names = props if isinstance(props, dict) else {}
    out = []
    for key in data:
        if key in names:
            continue
        if isinstance(patterns, dict) and any(_search(p, key) for p in patterns):
            continue
        out.append(key)
    return out


def _search(pattern: str, key: str) -> bool:
    """Whether `pattern` names `key` (one the bounded search could not check is not called an
    extra property: its own error says it was not checked)."""
    return search(pattern, key) is not False


def _choices(values: list[Any]) -> str:
    return _or([_json(value) for value in values])


def _or(words: list[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return f"{', '.join(words[:-1])} or {words[-1]}"


def _json(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = short_repr(value, _SCHEMA_CHARS)
    return text if len(text) <= _SCHEMA_CHARS else short_repr(value, _SCHEMA_CHARS)


def _schema(value: Any) -> str:
    return _json(value)
