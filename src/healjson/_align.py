"""Schema-aligned recovery: fit recovered JSON data to the target type, recording every change.

Strict validation first (nothing changed); then pydantic's lax coercions (`"5"` → `5`), whose
locations are exactly the strict errors; then healjson's own rewrites — case-insensitive enum
values, a single-key wrapper object around the real answer, JSON double-encoded as a string.
Every rewrite is a `Coercion` and a flag. The verdict stays with pydantic: a rewrite is kept only
if the result validates.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails, from_json, to_json

from ._diagnostic import describe_exception, format_path
from ._flags import Flag
from ._lenient import NOTHING
from ._schema_errors import data_loc
from ._target import Target

__all__ = ["Alignment", "Coercion", "align"]

_NORMALISE = re.compile(r"[\s\-_]+")


@dataclass(frozen=True, slots=True)
class Coercion:
    """One value healjson or pydantic changed to fit the schema."""

    path: str
    before: Any
    after: Any
    flag: Flag


@dataclass(frozen=True, slots=True)
class Alignment:
    """The outcome of fitting data to a target: an instance, or the errors of the best attempt."""

    instance: Any
    data: Any
    flags: tuple[Flag, ...] = ()
    coercions: tuple[Coercion, ...] = ()
    errors: tuple[ErrorDetails, ...] = field(default=())

    @property
    def ok(self) -> bool:
        """True when the data validated."""
        return self.instance is not NOTHING


def align(target: Target[Any], data: Any, *, nested: bool = False) -> Alignment:
    """Validate `data` against `target`, trying the recorded rewrites if plain validation fails."""
    plain = _validate(target, data)
    if plain.ok:
        return plain
    best = plain
    fixed, changes = _fix_enum_case(target, data, plain.errors)
    if changes:
        retried = _validate(target, fixed, (Flag.ENUM_CASE,), changes)
        if retried.ok:
            return retried
        if len(retried.errors) < len(best.errors):
            best = retried
    if nested:
        return best
    if isinstance(data, str):
        try:
            inner = from_json(data.strip())
        except (ValueError, TypeError):  # TypeError: a lone surrogate cannot be encoded
            inner = NOTHING
        if isinstance(inner, dict | list):
            decoded = align(target, inner, nested=True)
            if decoded.ok:
                return _with(decoded, Flag.DOUBLE_ENCODED)
    if isinstance(data, dict) and len(data) == 1:
        ((key, inner),) = data.items()
        names = target.field_names
        # a scalar inside {"value": ...} is the strict-mode envelope for non-object targets
        wrapped = isinstance(inner, dict | list) or not target.expects_object
        if wrapped and (names is None or key not in names):
            unwrapped = align(target, inner, nested=True)
            if unwrapped.ok:
                return _with(unwrapped, Flag.UNWRAPPED)
    return best


def _with(result: Alignment, flag: Flag) -> Alignment:
    return Alignment(
        result.instance, result.data, (flag, *result.flags), result.coercions, result.errors
    )


def _validate(
    target: Target[Any],
    data: Any,
    flags: tuple[Flag, ...] = (),
    changes: tuple[Coercion, ...] = (),
) -> Alignment:
    try:
        raw = to_json(data, inf_nan_mode="constants")
    except Exception as exc:  # e.g. a lone surrogate that no JSON encoder accepts
        return Alignment(NOTHING, data, flags, changes, (_crash(exc),))
    try:
        return Alignment(target.adapter.validate_json(raw, strict=True), data, flags, changes)
    except ValidationError as strict:
        strict_errors = strict.errors()
    except Exception:  # a validator that raises something else is a schema failure, not a crash
        strict_errors = []
    try:
        instance = target.adapter.validate_json(raw)
    except ValidationError as lax:
        return Alignment(NOTHING, data, flags, changes, tuple(lax.errors()))
    except Exception as exc:
        return Alignment(NOTHING, data, flags, changes, (_crash(exc),))
    coerced = _coercions(target, instance, data, strict_errors)
    extra = (Flag.COERCED,) if coerced else ()
    return Alignment(instance, data, (*flags, *extra), (*changes, *coerced))


def _crash(exc: Exception) -> ErrorDetails:
    return {
        "type": "value_error",
        "loc": (),
        "msg": f"Value error, the value could not be checked ({describe_exception(exc)})",
        "input": None,
    }


def _coercions(
    target: Target[Any], instance: Any, data: Any, strict_errors: Sequence[ErrorDetails]
) -> tuple[Coercion, ...]:
    if not strict_errors:
        return ()
    try:
        dumped = target.adapter.dump_python(instance, mode="json")
    except Exception:  # a custom serializer failing only costs us the "after" value
        dumped = NOTHING
    out: list[Coercion] = []
    for error in strict_errors:
        loc = data_loc(tuple(error.get("loc", ())), data, False)
        out.append(Coercion(format_path(loc), error.get("input"), _get(dumped, loc), Flag.COERCED))
    return tuple(out)


def _fix_enum_case(
    target: Target[Any], data: Any, errors: Sequence[ErrorDetails]
) -> tuple[Any, tuple[Coercion, ...]]:
    changes: list[Coercion] = []
    fixed = data
    for error in errors:
        received = error.get("input")
        if error.get("type") not in ("enum", "literal_error") or not isinstance(received, str):
            continue
        loc = data_loc(tuple(error.get("loc", ())), data, False)
        wanted = _NORMALISE.sub("_", received.strip().casefold())
        matches = {
            choice
            for choice in target.choices_at(loc)
            if isinstance(choice, str) and _NORMALISE.sub("_", choice.casefold()) == wanted
        }
        if len(matches) != 1:
            continue
        (choice,) = matches
        if not loc:
            fixed = choice
            changes.append(Coercion(format_path(loc), received, choice, Flag.ENUM_CASE))
            continue
        if fixed is data:
            fixed = copy.deepcopy(data)
        if _set(fixed, loc, choice):
            changes.append(Coercion(format_path(loc), received, choice, Flag.ENUM_CASE))
    return fixed, tuple(changes)


def _get(node: Any, loc: tuple[str | int, ...]) -> Any:
    for part in loc:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def _set(node: Any, loc: tuple[str | int, ...], value: Any) -> bool:
    if not loc:
        return False
    parent = _get(node, loc[:-1])
    try:
        parent[loc[-1]] = value
    except (KeyError, IndexError, TypeError):
        return False
    return True
