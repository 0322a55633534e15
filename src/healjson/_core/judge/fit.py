"""Whether a value the rules corrected (a fix's, a list after a drop) is of the schema's types
as it stands, and a fix's result taken as the value of its kind (see `policies`)."""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from collections.abc import Sequence
from typing import Any, Union

from pydantic import BaseModel, TypeAdapter

from healjson._core.diagnostic import describe_exception
from healjson._core.sentinels import NOTHING
from healjson._core.target.json_schema import JsonSchema
from healjson._core.target.target import Target

from .contracts import ContractContext

__all__ = ["Unfit", "as_answer_kind", "as_item_kind", "holds", "unheld"]


def holds(target: Target[Any], value: Any, ctx: ContractContext, answer: Any = NOTHING) -> bool:
    """Whether `value`, a value of the target's kind that healjson did not validate as it
    stands (a fix's, a list after a drop), is valid as it stands (`unheld` is None)."""
    return unheld(target, value, ctx, answer) is None


def unheld(
    target: Target[Any], value: Any, ctx: ContractContext, answer: Any = NOTHING
) -> str | None:
    """Why `value` (see `holds`) is not valid as it stands, None when it is: every model in it
    of a class its place declares (`_misplaced`: a model of another class with the same fields
    is not of the schema's types), dumped (the fields it set, a default left one, under the
    names validation reads) with pydantic's type check on, and that dump valid under pydantic's
    strict rules (`True` is no `int`, `5.0` no `int`, `"5"` no integer), unless the `answer`
    it came from, as validated, fails that check too (a validator of the caller's that returns
    another type, `use_enum_values`: then the JSON dump is validated as an answer is, strictly
    for a JSON Schema target). The validation is a check only: its result is thrown away."""
    misplaced = _misplaced(value, target.type_, "the value")
    if misplaced is not None:
        return misplaced
    strict = answer is NOTHING or _checked(target, answer, ctx, strict=True) is None
    return _checked(target, value, ctx, strict=strict)


def _checked(target: Target[Any], value: Any, ctx: ContractContext, *, strict: bool) -> str | None:
    """Why `value`'s dump fails the check (`unheld`), None when it passes; `strict`: the Python
    dump, typed, validated strictly (a bool stays a bool there: the JSON dump makes it `1`),
    else the JSON dump, untyped, validated laxly (strictly for a JSON Schema target)."""
    try:
        data = _dumped(target, value, typed=strict)
    except Exception as exc:  # a part of another type than declared, or a serializer that raises
        return describe_exception(exc)
    exact = True if strict or isinstance(target.type_, JsonSchema) else None
    try:
        target.adapter.validate_python(
            data, strict=exact, context=ctx.validation_context, by_alias=False, by_name=True
        )
    except Exception as exc:  # a validator that raises: not a valid value either
        return describe_exception(exc)
    return None


def _dumped(target: Target[Any], value: Any, *, typed: bool) -> Any:
    """`value` as data, fields under their names (validated by name: a field's serialization
    alias may differ from its validation alias); `typed`: as Python data, a part of another
    type than its place declares raising (the serializer's warnings as errors), else as JSON."""
    return target.adapter.dump_python(
        value,
        mode="python" if typed else "json",
        by_alias=False,
        exclude_unset=True,
        round_trip=True,  # a `Json[...]` field dumps as the JSON text it validates from
        warnings="error" if typed else False,
    )


def _misplaced(value: Any, declared: Any, where: str) -> str | None:
    """Where `value` holds a model (pydantic model or dataclass) of a class its place does not
    declare (None: nowhere): the serializer dumps a model of another class with the same
    fields without a warning, so the dump's check alone would take it for the declared one."""
    declared = _bare(declared)
    origin, args = typing.get_origin(declared), typing.get_args(declared)
    if origin in (Union, types.UnionType):
        found = [_misplaced(value, member, where) for member in args]
        return None if any(f is None for f in found) else found[0]
    if isinstance(declared, type) and _is_model(value):
        if not isinstance(value, declared):
            return f"{where} is a {type(value).__name__}, not the {declared.__name__} declared"
        for name, field in getattr(type(value), "__pydantic_fields__", {}).items():
            inner = _misplaced(getattr(value, name, None), field.annotation, f"{where}.{name}")
            if inner is not None:
                return inner
        return None
    if origin is tuple and isinstance(value, tuple) and args:
        kinds = [args[0]] * len(value) if len(args) == 2 and args[1] is ... else list(args)
    elif origin in (list, set, frozenset, Sequence) and len(args) == 1:
        if not isinstance(value, list | tuple | set | frozenset):
            return None
        kinds = [args[0]] * len(value)
    elif origin is dict and isinstance(value, dict) and len(args) == 2:
        return next(
            (m for k, v in value.items() if (m := _misplaced(v, args[1], f"{where}.{k}"))), None
        )
    else:
        return None
    for index, (item, kind) in enumerate(zip(value, kinds, strict=False)):
        inner = _misplaced(item, kind, f"{where}[{index}]")
        if inner is not None:
            return inner
    return None


def _bare(declared: Any) -> Any:
    """A declared type without its `Annotated` metadata."""
    while typing.get_origin(declared) is typing.Annotated:
        declared = typing.get_args(declared)[0]
    return declared


def _is_model(value: Any) -> bool:
    """Whether `value` is a model instance: a pydantic model's or a dataclass's."""
    return isinstance(value, BaseModel) or (
        dataclasses.is_dataclass(value) and not isinstance(value, type)
    )


def as_answer_kind(target: Target[Any], answer: Any, fixed: Any, ctx: ContractContext) -> Any:
    """A whole-value fix's result as the accepted value: itself when it is of the answer's
    kind (its type, or an instance of a model or dataclass class the target declares: what
    validation gives, never validated again), else data (a dict for a model, a model of
    another class with the same fields) validated once by the target (`Unfit` when that
    fails)."""
    if not _is_data(answer, fixed, (target.type_,)):
        return fixed
    return _validated(target.adapter, fixed, ctx)


def as_item_kind(item: Any, fixed: Any, ctx: ContractContext) -> Any:
    """An item fix's result: itself when it is of the item's kind (its class or a subclass),
    else data validated once by the item's class (a dict, or a model of another class, for a
    model item; `Unfit` when that fails); the list's own declarations (a bound on the item)
    are the check's (`holds`)."""
    kind: Any = type(item)
    if not _is_data(item, fixed, (kind,)):
        return fixed
    adapter = _adapter(kind)
    if adapter is None:
        return fixed  # a class pydantic cannot validate: the check decides
    return _validated(adapter, fixed, ctx)


def _validated(adapter: TypeAdapter[Any], fixed: Any, ctx: ContractContext) -> Any:
    """A fix's data validated once (a model of another class read by its attributes)."""
    try:
        return adapter.validate_python(
            fixed, context=ctx.validation_context, from_attributes=_is_model(fixed) or None
        )
    except Exception as exc:
        raise Unfit(exc) from exc


def _is_data(given: Any, fixed: Any, declared: tuple[Any, ...]) -> bool:
    """Whether a fix's result is data of another kind than the value it was `given`: not of
    its type, nor a model instance of a class `declared` (a union's member included)."""
    if type(fixed) is type(given):
        return False
    return not (_is_model(fixed) and any(_declares(kind, fixed) for kind in declared))


def _declares(declared: Any, value: Any) -> bool:
    """Whether `declared` (a type, a union) has a class `value` is an instance of."""
    declared = _bare(declared)
    if typing.get_origin(declared) in (Union, types.UnionType):
        return any(_declares(member, value) for member in typing.get_args(declared))
    return isinstance(declared, type) and isinstance(value, declared)


@functools.lru_cache(maxsize=128)
def _adapter(kind: Any) -> TypeAdapter[Any] | None:
    """pydantic's adapter for an item's class (None: a class it cannot validate)."""
    try:
        return TypeAdapter(kind)
    except Exception:  # not a type pydantic validates
        return None


class Unfit(Exception):
    """A fix returned data of another kind that fails the schema."""

    def __init__(self, exc: Exception) -> None:
        super().__init__(describe_exception(exc))
        self.reason = describe_exception(exc)
