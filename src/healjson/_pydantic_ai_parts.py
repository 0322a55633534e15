"""Parts of `healjson.pydantic_ai` that need no pydantic-ai import: the L1 target over a tool's
own validator (`ValidatorAdapter`), the envelope of a non-object output (`response_dict`), the
secrets of the model clients a run reaches (`model_secrets`), and diagnostics as a record keeps
them (`kept_diagnostics`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import is_dataclass
from typing import Any, Final

from pydantic import BaseModel
from pydantic_core import SchemaValidator, to_json, to_jsonable_python
from typing_extensions import TypedDict, is_typeddict

from ._core.diagnostic import Diagnostic
from ._core.redact import redact_data, redact_text, secrets_scope
from ._core.redact.places import read_attribute

__all__ = [
    "MAX_TARGETS",
    "ValidatorAdapter",
    "kept_diagnostics",
    "model_like",
    "model_secrets",
    "response_dict",
]

MAX_TARGETS: Final = 256  # validators remembered as L1 targets (tools and outputs), per capability
_MAX_MODELS: Final = 8  # models followed inside one (a fallback's, a wrapper's)


class ValidatorAdapter:
    """What L1 uses of a `TypeAdapter`, over a pydantic-core validator and its JSON schema (a
    tool's arguments have no Python type, only pydantic-ai's validator)."""

    __slots__ = ("_schema", "validator")

    def __init__(self, validator: SchemaValidator, schema: dict[str, Any]) -> None:
        self.validator = validator
        self._schema = schema

    def json_schema(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return self._schema

    def validate_json(self, data: Any, *, strict: bool | None = None, context: Any = None) -> Any:
        return self.validator.validate_json(data, strict=strict, context=context)

    def validate_python(
        self, data: Any, *, strict: bool | None = None, context: Any = None, **kwargs: Any
    ) -> Any:
        # `by_alias` / `by_name`: how a fixed value's check reads it (`_core.judge.fit`)
        names = {k: kwargs[k] for k in ("by_alias", "by_name") if k in kwargs}
        return self.validator.validate_python(data, strict=strict, context=context, **names)

    def dump_python(self, value: Any, *, mode: str = "python", **kwargs: Any) -> Any:
        by_alias = bool(kwargs.get("by_alias", True))
        return to_jsonable_python(value, by_alias=by_alias) if mode == "json" else value

    def dump_json(self, value: Any, **kwargs: Any) -> bytes:
        return to_json(value, by_alias=bool(kwargs.get("by_alias", True)))


def model_like(kind: Any) -> bool:
    """A type whose JSON schema is an object (how pydantic-ai decides not to wrap it)."""
    return isinstance(kind, type) and (
        issubclass(kind, BaseModel) or is_dataclass(kind) or is_typeddict(kind)
    )


_RESPONSE_TYPES: dict[Any, Any] = {}


def response_dict(kind: Any) -> Any:
    """`{"response": kind}` as a TypedDict: how pydantic-ai sends a non-object output."""
    try:
        found = _RESPONSE_TYPES.get(kind)
    except TypeError:  # an unhashable type expression: built each time
        return _wrapper(kind)
    if found is None:
        found = _wrapper(kind)
        if len(_RESPONSE_TYPES) < MAX_TARGETS:
            _RESPONSE_TYPES[kind] = found
    return found


def _wrapper(kind: Any) -> Any:
    fields: dict[str, Any] = {"response": kind}
    return TypedDict("response", fields)  # type: ignore[operator]


def model_secrets(model: Any) -> ExitStack:
    """A scope (`secrets_scope`) for the SDK client of each model a run's model is or holds
    (a wrapper's `wrapped`, a fallback's `models`; each model's public `client`): what
    healjson keeps or says inside it is redacted with those clients' keys too."""
    stack = ExitStack()
    for client in _clients(model):
        stack.enter_context(secrets_scope(client))
    return stack


def _clients(model: Any) -> Iterator[Any]:
    seen: set[int] = set()
    pending = [model]
    while pending and len(seen) < _MAX_MODELS:
        found = pending.pop()
        if found is None or id(found) in seen:
            continue
        seen.add(id(found))
        client = read_attribute(found, "client")
        if client is not None and not callable(client):
            yield client
        pending.append(read_attribute(found, "wrapped"))
        inner = read_attribute(found, "models")
        if isinstance(inner, list | tuple):
            pending.extend(inner)


def kept_diagnostics(diagnostics: tuple[Diagnostic, ...]) -> tuple[Diagnostic, ...]:
    """`diagnostics` as a record keeps them: each value and text through the redactor (the
    secrets known now: a record's `repr` is rendered later, outside the run's scope)."""
    return tuple(_kept(d) for d in diagnostics)


def _kept(diagnostic: Diagnostic) -> Diagnostic:
    value = redact_data(diagnostic.value, by_name=False, fields=True)
    constraint = redact_text(diagnostic.constraint)
    prescription = redact_text(diagnostic.prescription)
    extra = diagnostic.extra  # the values a rule involved: the model's too
    kept = redact_data(dict(extra), by_name=False, fields=True) if extra else extra
    if (
        constraint == diagnostic.constraint
        and prescription == diagnostic.prescription
        and _same(value, diagnostic.value)
        and _same(kept, extra)
    ):
        return diagnostic
    return dataclasses.replace(
        diagnostic, value=value, constraint=constraint, prescription=prescription, extra=kept
    )


def _same(a: Any, b: Any) -> bool:
    try:
        return a is b or bool(a == b)
    except Exception:  # a value whose comparison raises: kept as redacted
        return False
