"""Turn pydantic validation errors into diagnostic triples a model can act on."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from pydantic_core import ErrorDetails

from healjson._core.diagnostic import Diagnostic, Source, format_path, short_repr
from healjson._core.sentinels import MISSING

__all__ = ["data_loc", "schema_diagnostics"]

_SHOULD = re.compile(
    r"^(Input|String|List|Value|Dictionary|Tuple|Set|Decimal|Data|Object|Number)\s+should\b"
)
_BOUNDS = {
    "greater_than": ("gt", "greater than"),
    "greater_than_equal": ("ge", "at least"),
    "less_than": ("lt", "less than"),
    "less_than_equal": ("le", "at most"),
}


def schema_diagnostics(errors: Sequence[ErrorDetails], data: Any) -> list[Diagnostic]:
    """One diagnostic per failing location (union branches for one location are merged)."""
    merged: dict[str, Diagnostic] = {}
    for error in errors:
        loc = data_loc(tuple(error.get("loc", ())), data, error.get("type") == "missing")
        diagnostic = _one(error, loc)
        previous = merged.get(diagnostic.path)
        if previous is None:
            merged[diagnostic.path] = diagnostic
        elif diagnostic.constraint not in previous.constraint:
            merged[diagnostic.path] = Diagnostic(
                path=previous.path,
                value=previous.value,
                constraint=f"{previous.constraint}, or {diagnostic.constraint}",
                prescription=f"Make `{previous.path}` satisfy one of the allowed forms.",
                source=Source.SCHEMA,
                rule="union",
            )
    return list(merged.values())


def _one(error: ErrorDetails, loc: tuple[str | int, ...]) -> Diagnostic:
    kind = error.get("type", "")
    ctx: dict[str, Any] = dict(error.get("ctx") or {})
    path = format_path(loc)
    value: Any = MISSING if kind == "missing" else error.get("input")
    msg = str(error.get("msg", "is invalid"))
    constraint = _constraint(msg)
    where = f"`{path}`"
    if kind == "missing":
        constraint = "is required"
        prescription = f"Add the required field {where} with a valid value."
    elif kind == "misnamed_keys":  # several keys spell one field left at its default
        constraint = msg
        field = ctx.get("field")
        prescription = (
            f"Write the one value meant once, under the key `{field}`, and remove the keys "
            f"{', '.join(f'`{key}`' for key in ctx.get('keys', ()))}."
            if field
            else "Write each field once, under its own name."
        )
    elif kind == "extra_forbidden":
        constraint = "is not a field of the schema"
        prescription = f"Remove {where}; the schema does not define it."
    elif kind in _BOUNDS:
        key, words = _BOUNDS[kind]
        constraint = f"must be {words} {ctx.get(key)}"
        prescription = (
            f"Set {where} to a value {words} {ctx.get(key)} (got {short_repr(value, 60)})."
        )
    elif kind in ("string_too_short", "too_short"):
        unit = "characters" if kind.startswith("string") else "items"
        need = ctx.get("min_length")
        constraint = f"must have at least {need} {unit}"
        prescription = f"Write {where} with at least {need} {unit}{_have(value, unit)}."
    elif kind in ("string_too_long", "too_long"):
        unit = "characters" if kind.startswith("string") else "items"
        need = ctx.get("max_length")
        constraint = f"must have at most {need} {unit}"
        prescription = f"Shorten {where} to at most {need} {unit}{_have(value, unit)}."
    elif kind == "string_pattern_mismatch":
        constraint = f"must match the pattern {ctx.get('pattern')}"
        prescription = f"Rewrite {where} so that it matches {ctx.get('pattern')} exactly."
    elif kind in ("enum", "literal_error"):
        constraint = f"must be one of {ctx.get('expected')}"
        prescription = f"Use exactly one of {ctx.get('expected')} for {where}."
    elif kind in ("value_error", "assertion_error"):
        constraint = re.sub(r"^(Value|Assertion) error,\s*", "", msg)
        fields = _involved(value, loc, constraint)
        if fields:  # a model-level validator: a rule across the fields of this object
            named = ", ".join(f"`{name}`" for name in fields)
            prescription = f"Change {named} so that: {constraint}. Any of these fields may change."
        else:
            prescription = f"Change {where} so that: {constraint}."
        return Diagnostic(path, value, constraint, prescription, Source.SCHEMA, fields, kind)
    else:
        prescription = f"Change {where}: it {constraint}."
    return Diagnostic(
        path=path,
        value=value,
        constraint=constraint,
        prescription=prescription,
        source=Source.SCHEMA,
        rule=kind or None,
    )


_MAX_INVOLVED = 12


def _involved(value: Any, loc: tuple[str | int, ...], message: str) -> tuple[str, ...]:
    """The fields a validator of a whole object speaks about: those its message names (as
    words), else every field the object has (at most 12). Empty for a value that is not an
    object: a field validator's message is about that one field."""
    if not isinstance(value, dict):
        return ()
    keys = [key for key in value if isinstance(key, str)]
    named = [key for key in keys if re.search(rf"(?<!\w){re.escape(key)}(?!\w)", message)]
    return tuple(format_path((*loc, key)) for key in (named or keys)[:_MAX_INVOLVED])


def _constraint(msg: str) -> str:
    if msg == "Field required":
        return "is required"
    return _SHOULD.sub("must", msg)


def _have(value: Any, unit: str) -> str:
    try:
        return f" (it has {len(value)} {unit})"
    except TypeError:
        return ""


def data_loc(loc: tuple[str | int, ...], data: Any, missing: bool) -> tuple[str | int, ...]:
    """Drop the union/validator tags pydantic puts in `loc` that are not keys of the data."""
    out: list[str | int] = []
    node = data
    for index, part in enumerate(loc):
        last = index == len(loc) - 1
        if isinstance(node, dict):
            if part in node:
                out.append(part)
                node = node[part]
                continue
            if last and missing:
                out.append(part)
            elif isinstance(part, str) and (
                _looks_like_tag(part) or (not last and loc[index + 1] in node)
            ):
                continue  # a union member tag such as `Cat` or `literal['a']`
            else:
                out.append(part)
                node = None
            continue
        if isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            out.append(part)
            node = node[part]
            continue
        if isinstance(part, str) and _looks_like_tag(part):
            continue
        out.append(part)
        node = None
    return tuple(out)


def _looks_like_tag(part: str) -> bool:
    return any(c in part for c in "[]()'\"") or part in {
        "str",
        "int",
        "float",
        "bool",
        "list",
        "dict",
        "none",
        "null",
        "tuple",
        "set",
        "decimal",
    }
