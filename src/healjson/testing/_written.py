"""The JSON a language model writes for a value: what `corrupted` renders and L1 reads back.

A model answering with a value writes every field of it, under the name validation reads, each
with its real value. Pydantic's own JSON dump is not that text: it masks a `SecretStr` (a
`SecretBytes`, a `Secret[...]`) as `"**********"` and leaves a `Field(exclude=True)` field out,
so that L1, reading the dump back, rightly gives the masked secret or the field's default, not the
value dumped. `written` starts from that dump (so that a field's serializer writes the field as
it writes it) and puts back what it hides: each secret's value, each excluded field under the
name validation reads. A part whose real value cannot be written as JSON (a secret of a type
JSON does not hold, an excluded field whose only names are alias paths) is left as the dump has
it, and `same_where_written` then compares two values by what was written of them only.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic import AliasChoices, BaseModel
from pydantic_core import to_jsonable_python

from healjson._core.judge.snapshot import SECRET_TYPES

__all__ = ["same_where_written", "written"]


def written(value: Any, dumped: Any) -> Any:
    """`dumped` (pydantic's JSON-mode dump of `value`, by alias) with what that dump hides put
    back: each secret's real value, each excluded field that holds a value (see the module)."""
    if isinstance(value, SECRET_TYPES):
        try:
            return to_jsonable_python(value.get_secret_value())
        except Exception:  # a secret JSON cannot hold: the dump's mask is what is written
            return dumped
    fields = _fields(value)
    if fields is not None and isinstance(dumped, dict):
        out = dict(dumped)
        for name, field in fields.items():
            if not hasattr(value, name):
                continue
            key = _dump_key(field, name)
            if key in out:
                out[key] = written(getattr(value, name), out[key])
            elif getattr(field, "exclude", None) is True:
                _put_excluded(out, field, name, getattr(value, name))
        return out
    if isinstance(value, list | tuple) and isinstance(dumped, list) and len(value) == len(dumped):
        return [written(item, data) for item, data in zip(value, dumped, strict=True)]
    if isinstance(value, dict) and isinstance(dumped, dict) and len(value) == len(dumped):
        return {
            key: written(item, data)
            for item, (key, data) in zip(value.values(), dumped.items(), strict=True)
        }
    return dumped


def same_where_written(expected: Any, got: Any) -> bool:
    """`got` (the `written` data of a value read back) holds `expected` (the data written):
    equal at every key and item written, whatever `got` holds besides (the default of a field
    whose value could not be written)."""
    if isinstance(expected, dict):
        return isinstance(got, dict) and all(
            key in got and same_where_written(item, got[key]) for key, item in expected.items()
        )
    if isinstance(expected, list):
        return (
            isinstance(got, list)
            and len(got) == len(expected)
            and all(same_where_written(a, b) for a, b in zip(expected, got, strict=True))
        )
    return bool(expected == got)


def _fields(value: Any) -> dict[str, Any] | None:
    """A model's (or a dataclass's) fields by name, with their `FieldInfo` where pydantic has
    one; None for a value that is neither."""
    if isinstance(value, BaseModel):
        return dict(type(value).__pydantic_fields__)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        pydantic_fields = getattr(type(value), "__pydantic_fields__", None)
        if pydantic_fields is not None:
            return dict(pydantic_fields)
        return {field.name: None for field in dataclasses.fields(value)}
    return None


def _dump_key(field: Any, name: str) -> str:
    """The key a dump by alias writes the field under."""
    if field is None:
        return name
    return str(field.serialization_alias or field.alias or name)


def _read_key(field: Any, name: str) -> str | None:
    """The key validation reads the field from; None when only an alias path reads it."""
    chosen = field.validation_alias
    if isinstance(chosen, AliasChoices):
        return next((c for c in chosen.choices if isinstance(c, str)), None)
    if isinstance(chosen, str):
        return chosen
    if chosen is not None:  # an `AliasPath`
        return None
    return str(field.alias or name)


def _put_excluded(out: dict[str, Any], field: Any, name: str, item: Any) -> None:
    """An excluded field written under the key validation reads (left out when it has none, or
    its value cannot be written as JSON)."""
    key = _read_key(field, name)
    if key is None or key in out:
        return
    try:
        out[key] = written(item, to_jsonable_python(item, by_alias=True))
    except Exception:  # a value JSON cannot hold: compared by what was written only
        return
