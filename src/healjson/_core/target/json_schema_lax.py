"""The lax reading of a JSON Schema target: pydantic's lax conversions, where they are unambiguous.

For a model, alignment's `coerced` step is pydantic's lax mode (`"5"` → `5`). A JSON Schema
refuses `"5"` for an integer, so for a schema target that step is this reading, by the rule
alignment follows everywhere: a value is changed only when exactly one reading fits. Along the
schema (properties, `additionalProperties`, items, `prefixItems`, `allOf`, local `$ref`s), a
scalar that fits none of the JSON types its node allows is converted to the one type it can
be read as, the conversions pydantic's lax JSON mode makes:

- a numeric string to an integer (`"5"`, `" 5 "`, `"5.0"`) or a number (`"2.5"`): the
  number the same digits are when written bare (an integer literal an exact int, every digit
  kept; a decimal one a float, as JSON reads it);
- `"true"` / `"yes"` / `"on"` / `"1"` ... (and their opposites) to a boolean;
- a numeric string to the one number among an `enum` / `const`'s values.

A boolean is never read as a number, nor a number as a boolean (pydantic's lax mode reads
`true` as `1` and `0` as `false`): a boolean carries no quantity and a number no truth value,
and JSON Schema keeps the two apart, so `{"temperature": true}` for a number is refused.

A node that several types could take the value as (`"1"` where an integer or a boolean is
allowed), or a union whose branches read it differently, leaves it as written; a value that
fits a node (or a union branch) as written is never changed. The result is validated again:
the reading only decides what to try. Linear in the data: each data node is read once per
schema node that reaches it.
"""

from __future__ import annotations

import math
import re
from typing import Any, Final

from pydantic_core import to_json

from .schema_refs import resolve_ref

__all__ = ["lax"]

_AS_WRITTEN: Final = 0
_CONVERTED: Final = 1
_NO_FIT: Final = 2

_TRUE: Final = frozenset({"1", "on", "t", "true", "y", "yes"})
_FALSE: Final = frozenset({"0", "off", "f", "false", "n", "no"})
# ASCII digits only, as pydantic's lax mode reads numbers (`\d` would take any script's digits,
# Arabic-Indic or full-width ones, which `int()` reads too)
_INTEGER: Final = re.compile(r"[+-]?[0-9]{1,100}(?:\.0*)?")
_NUMBER: Final = re.compile(
    r"[+-]?(?:[0-9]{1,100}(?:\.[0-9]{0,100})?|\.[0-9]{1,100})(?:[eE][+-]?[0-9]{1,4})?"
)
_WHOLE: Final = re.compile(r"[+-]?[0-9]{1,100}")
_MAX_DEPTH: Final = 200


def lax(schema: dict[str, Any], data: Any) -> Any:
    """`data` read laxly along `schema` (see the module docstring); `data` itself when
    nothing changed."""
    value, _ = _Reader(schema).read(schema, data, 0)
    return value


class _Reader:
    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root

    def read(self, schema: Any, data: Any, depth: int) -> tuple[Any, int]:
        if depth > _MAX_DEPTH or not isinstance(schema, dict):
            return data, _AS_WRITTEN
        schema = resolve_ref(self.root, schema)
        status = _AS_WRITTEN
        every = schema.get("allOf")
        if isinstance(every, list):
            for sub in every:
                data, one = self.read(sub, data, depth + 1)
                status = max(status, one)
        data, one = self._node(schema, data, depth)
        status = max(status, one)
        branches = schema.get("anyOf") or schema.get("oneOf")
        if isinstance(branches, list) and branches:
            data, one = self._union(branches, data, depth)
            status = max(status, one)
        return data, status

    def _union(self, branches: list[Any], data: Any, depth: int) -> tuple[Any, int]:
        converted: dict[bytes, Any] = {}
        partial: dict[bytes, Any] = {}  # readings that converted part of a value that still fails
        for branch in branches:
            value, status = self.read(branch, data, depth + 1)
            if status == _AS_WRITTEN:
                return data, _AS_WRITTEN
            if status == _CONVERTED:
                converted.setdefault(_key(value), value)
            elif value is not data:
                partial.setdefault(_key(value), value)
        if len(converted) == 1:
            return next(iter(converted.values())), _CONVERTED
        if not converted and len(partial) == 1:  # the one branch it was meant for, as far as
            return next(iter(partial.values())), _NO_FIT  # it goes (the errors come from there)
        return data, _NO_FIT

    def _node(self, schema: dict[str, Any], data: Any, depth: int) -> tuple[Any, int]:
        if "enum" in schema or "const" in schema:
            choices = schema.get("enum") if "enum" in schema else [schema["const"]]
            return _choice(choices if isinstance(choices, list) else [], data)
        kind = schema.get("type")
        kinds = {kind} if isinstance(kind, str) else set(kind) if isinstance(kind, list) else set()
        if isinstance(data, dict) and (not kinds or "object" in kinds):
            return self._object(schema, data, depth)
        if isinstance(data, list) and (not kinds or "array" in kinds):
            return self._array(schema, data, depth)
        if not kinds or _fits(data, kinds):
            return data, _AS_WRITTEN
        readings = _readings(data, kinds)
        if len(readings) == 1:
            return readings[0], _CONVERTED
        return data, _NO_FIT

    def _object(self, schema: dict[str, Any], data: dict[str, Any], depth: int) -> tuple[Any, int]:
        props = schema.get("properties")
        props = props if isinstance(props, dict) else {}
        extra = schema.get("additionalProperties")
        out: dict[str, Any] = {}
        status = _AS_WRITTEN
        for key, value in data.items():
            sub = props.get(key, extra if isinstance(extra, dict) else None)
            if sub is None:
                out[key] = value
                continue
            read, one = self.read(sub, value, depth + 1)
            status = max(status, one)
            out[key] = read
        return (data if status == _AS_WRITTEN else out), status

    def _array(self, schema: dict[str, Any], data: list[Any], depth: int) -> tuple[Any, int]:
        prefix = schema.get("prefixItems")
        prefix = prefix if isinstance(prefix, list) else []
        items = schema.get("items")
        out: list[Any] = []
        status = _AS_WRITTEN
        for index, value in enumerate(data):
            sub = prefix[index] if index < len(prefix) else items
            if not isinstance(sub, dict):
                out.append(value)
                continue
            read, one = self.read(sub, value, depth + 1)
            status = max(status, one)
            out.append(read)
        return (data if status == _AS_WRITTEN else out), status


def _fits(data: Any, kinds: set[Any]) -> bool:
    """Whether a scalar is one of the JSON types as written (`5.0` is an integer, as JSON
    Schema counts)."""
    if data is None:
        return "null" in kinds
    if isinstance(data, bool):
        return "boolean" in kinds
    if isinstance(data, int):
        return bool(kinds & {"integer", "number"})
    if isinstance(data, float):
        return "number" in kinds or (
            "integer" in kinds and math.isfinite(data) and data.is_integer()
        )
    if isinstance(data, str):
        return "string" in kinds
    return False


def _readings(data: Any, kinds: set[Any]) -> list[Any]:
    """The values of the allowed types a scalar can be read as (pydantic's lax conversions)."""
    out: list[Any] = []
    if isinstance(data, str):
        text = data.strip()
        number = _numeric(text)
        if number is not None:
            whole = isinstance(number, int) or number.is_integer()
            if "integer" in kinds and whole and _INTEGER.fullmatch(text):
                # the value the same digits have written bare (`5.0` as `5`, the same value)
                out.append(
                    number if isinstance(number, int) or abs(number) >= 2**53 else int(number)
                )
            elif "number" in kinds:
                out.append(number)
        word = text.casefold()
        if "boolean" in kinds and (word in _TRUE or word in _FALSE):
            out.append(word in _TRUE)
    return out


def _choice(choices: list[Any], data: Any) -> tuple[Any, int]:
    """An enum or const: as written, or the one number a numeric string equals."""
    if any(_same(choice, data) for choice in choices):
        return data, _AS_WRITTEN
    number = _numeric(data.strip()) if isinstance(data, str) else None
    if number is None:
        return data, _NO_FIT
    found = [
        choice
        for choice in choices
        if isinstance(choice, int | float) and not isinstance(choice, bool) and choice == number
    ]
    return (found[0], _CONVERTED) if len(found) == 1 else (data, _NO_FIT)


def _same(a: Any, b: Any) -> bool:
    return isinstance(a, bool) == isinstance(b, bool) and type(a) is not dict and a == b


def _numeric(text: str) -> int | float | None:
    """The number a numeric string's digits are when written bare, as JSON reads them: an
    integer literal an exact int (`"12345678901234567891"` keeps every digit), a decimal one
    a float; None for any other text, or a number too large for a float."""
    if not _NUMBER.fullmatch(text):
        return None
    if _WHOLE.fullmatch(text):
        return int(text)
    number = float(text)
    return number if math.isfinite(number) else None


def _key(value: Any) -> bytes:
    try:
        return to_json(value)
    except Exception:  # not JSON: only the same object is the same reading
        return repr(id(value)).encode()
