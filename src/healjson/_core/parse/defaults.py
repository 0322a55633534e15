"""Whether a validated value left a field at its default: the cheap test before the key check.

A validation that succeeds can still drop what the text says: pydantic ignores a key that is
not a field (`LIMIT` beside the field `limit`) and fills the field with its default. So after
every successful validation `align.settled` looks at the answer's keys for a spelling of such a
field (the rule is in `align.py`). That look is only needed where it can find something: an
object of the value that did not get every field from the text. This module answers that from
the value alone, without reading the text again:

- the target's shape says where a field may be left out at all (`Shape.defaults`, computed once
  per target); a target without such a place costs one look-up;
- a pydantic model knows which fields came from the input (`model_fields_set`): one comparison
  of two lengths per model instance on the way (a model that keeps extra keys: a subset test);
- a plain dict (a `TypedDict`, a JSON Schema target's value) is compared by its keys with the
  object's properties; lists, tuples and dict values are read item by item, and only along the
  properties and items whose shapes can hold a left-out field;
- anything else at an object node (a dataclass: no record of what was given) counts as left out,
  so the key check decides.
"""

from __future__ import annotations

import functools
from typing import Any

from pydantic import BaseModel, RootModel

from healjson._core.target import Target

from .shape import Shape, shape_of

__all__ = ["left_out"]


def left_out(target: Target[Any], instance: Any) -> bool:
    """Whether `instance` (validated against `target`) has an object that did not get one of
    its fields from the text, where a key could have been the field misspelled."""
    shape = shape_of(target)
    if not shape.defaults:
        return False
    try:
        return _left_out(shape, instance)
    except RecursionError:  # deeper than the walk goes: the key check decides
        return True


def _left_out(shape: Shape, value: Any) -> bool:
    if shape.branches:
        return any(_left_out(branch, value) for branch in shape.branches if branch.defaults)
    if isinstance(value, BaseModel):
        return _model_left_out(shape, value)
    if isinstance(value, dict):
        props = shape.props
        if props is not None:
            if shape.optional and not props.keys() <= value.keys():
                return True
            for name, sub in shape.deep:
                if name in value and _left_out(sub, value[name]):
                    return True
        extra = shape.extra
        return extra is not None and extra.defaults and _any_left_out(extra, value.values())
    if isinstance(value, list | tuple | set | frozenset):
        if shape.prefix and isinstance(value, list | tuple):
            for sub, item in zip(shape.prefix, value, strict=False):
                if sub.defaults and _left_out(sub, item):
                    return True
        items = shape.items
        return items is not None and items.defaults and _any_left_out(items, value)
    return (
        shape.props is not None and value is not None and not isinstance(value, str | int | float)
    )


def _any_left_out(shape: Shape, values: Any) -> bool:
    return any(_left_out(shape, value) for value in values)


def _model_left_out(shape: Shape, value: BaseModel) -> bool:
    if isinstance(value, RootModel):
        return _left_out(shape, value.root)
    if shape.optional:
        given = value.__pydantic_fields_set__
        fields = type(value).__pydantic_fields__
        if len(given) < len(fields):
            return True
        if value.__pydantic_extra__ and not given >= fields.keys():  # extra keys are in `given`
            return True
    if not shape.deep:
        return False
    names = _attributes(type(value))
    for name, sub in shape.deep:
        attribute = names.get(name)
        if attribute is None:
            return True  # a property the class does not name: the key check decides
        if _left_out(sub, getattr(value, attribute)):
            return True
    return False


@functools.lru_cache(maxsize=1024)
def _attributes(model: type[BaseModel]) -> dict[str, str]:
    """The attribute of each name the JSON may carry for a field: its name, alias, validation
    alias."""
    found: dict[str, str] = {}
    for name, info in model.__pydantic_fields__.items():
        for key in (name, info.alias, info.validation_alias):
            if isinstance(key, str):
                found.setdefault(key, name)
    return found
