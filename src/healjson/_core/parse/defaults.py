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

from typing import Any, Final, NamedTuple

from pydantic import BaseModel
from pydantic_core import ErrorDetails

from healjson._core.target.target import Target

from .meter import charge
from .shape import Shape, key_form, shape_of

__all__ = ["Clash", "clash_errors", "left_out", "misspelled", "shared_key"]


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
    cls = type(value)
    model = _MODELS.get(cls, _UNKNOWN)
    if model is _UNKNOWN:
        model = _model_facts(cls)
    if model is not None:
        return _model_left_out(shape, value, model)
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
    for value in values:  # noqa: SIM110 (a loop: cheaper than a generator)
        if _left_out(shape, value):
            return True
    return False


def misspelled(shape: Shape, data: Any) -> bool:
    """Whether an object of the JSON `data` that may leave a field out holds a key that is not
    a property but has the key form of one it does not hold (`key_form`): the one case the key
    rule (`align.settled`) can change; only the keys are read, along `Shape.deep`."""
    if shape.branches:
        return any(misspelled(branch, data) for branch in shape.branches if branch.defaults)
    if isinstance(data, dict):
        props = shape.props
        if props is not None:
            if shape.optional:
                for key in data:
                    if key not in props and isinstance(key, str):
                        name = shape.forms.get(key_form(key))
                        if name is not None and name not in data:
                            return True
                if shape.shared and shared_key(shape, data) is not None:
                    return True
            for name, sub in shape.deep:
                if name in data and misspelled(sub, data[name]):
                    return True
        extra = shape.extra
        if extra is not None and extra.defaults:
            for value in data.values():
                if misspelled(extra, value):
                    return True
        return False
    if isinstance(data, list):
        for sub, item in zip(shape.prefix, data, strict=False):
            if sub.defaults and misspelled(sub, item):
                return True
        items = shape.items
        if items is not None and items.defaults:
            for item in data[len(shape.prefix) :]:
                if misspelled(items, item):
                    return True
    return False


class _Model(NamedTuple):
    """What the walk needs of a model class, read once (a pydantic class attribute is slow to
    read: its metaclass looks it up)."""

    root: bool
    fields: frozenset[str]
    attributes: dict[str, str]  # the JSON names of each field (name, aliases) → attribute


_UNKNOWN: Final[Any] = object()
_MODELS: dict[type, _Model | None] = {}
_MAX_MODELS: Final = 4096


def _model_facts(cls: type) -> _Model | None:
    """The facts of a model class, None for any other class (remembered either way)."""
    fields = getattr(cls, "__pydantic_fields__", None) if issubclass(cls, BaseModel) else None
    facts = None
    if isinstance(fields, dict):
        facts = _Model(bool(getattr(cls, "__pydantic_root_model__", False)), frozenset(fields), {})
        for name, info in fields.items():
            for key in (name, info.alias, info.validation_alias):
                if isinstance(key, str):
                    facts.attributes.setdefault(key, name)
    if len(_MODELS) >= _MAX_MODELS:
        _MODELS.clear()
    _MODELS[cls] = facts
    return facts


def _model_left_out(shape: Shape, value: Any, model: _Model) -> bool:
    if model.root:
        return _left_out(shape, value.root)
    if shape.optional:
        given = value.__pydantic_fields_set__
        if len(given) < len(model.fields):
            return True
        if value.__pydantic_extra__ and not given >= model.fields:  # extra keys are in `given`
            return True
    if not shape.deep:
        return False
    names = model.attributes
    for name, sub in shape.deep:
        attribute = names.get(name)
        if attribute is None:
            return True  # a property the class does not name: the key check decides
        if _left_out(sub, getattr(value, attribute)):
            return True
    return False


# -- keys that settle nothing ------------------------------------------------------------------


class Clash(NamedTuple):
    """An object's keys that settle nothing: several keys spelling one `field` left at its
    default (`keys`), or one key (`keys`, alone) spelling several fields (`fields`), one of
    them left out: which field it is cannot be told."""

    field: str
    keys: tuple[str, ...]
    fields: tuple[str, ...] = ()


def shared_key(shape: Shape, data: dict[str, Any]) -> Clash | None:
    """The first key of `data` that is not a property but spells several of `shape`'s
    properties (`Shape.shared`), one of which `data` leaves out; else None."""
    props = shape.props or {}
    for key in data:
        if key not in props and isinstance(key, str):
            names = shape.shared.get(key_form(key))
            if names is not None and not data.keys() >= set(names):
                return Clash("", (key,), names)
    return None


def clash_errors(data: Any, clashes: dict[int, Clash]) -> tuple[ErrorDetails, ...]:
    """The errors of a reading that cannot be settled, one per object of `clashes` (located by
    a walk of the data: linear)."""
    errors: list[ErrorDetails] = []
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), data)]
    while stack and len(errors) < len(clashes):
        loc, node = stack.pop()
        charge(1)
        if isinstance(node, dict):
            clash = clashes.get(id(node))
            if clash is not None:
                errors.append(_clash(loc, node, clash))
            stack.extend(((*loc, key), value) for key, value in node.items())
        elif isinstance(node, list):
            stack.extend(((*loc, index), value) for index, value in enumerate(node))
    if not errors:  # several readings of a union renamed different keys
        errors.append(
            {
                "type": "misnamed_keys",
                "loc": (),
                "msg": "holds keys that are not fields but spell fields left out, in more than "
                "one way the schema allows",
                "input": data,
            }
        )
    return tuple(errors)


def _clash(loc: tuple[str | int, ...], node: dict[str, Any], clash: Clash) -> ErrorDetails:
    if clash.fields:
        (key,) = clash.keys
        named = ", ".join(f"`{name}`" for name in clash.fields)
        return {
            "type": "misnamed_keys",
            "loc": (*loc, key),
            "msg": f"is not a field, and spells several fields alike ({named}): which one it "
            "is cannot be told, so none is taken",
            "input": node[key],
            "ctx": {"keys": clash.keys, "fields": clash.fields},
        }
    named = ", ".join(f"`{key}`" for key in clash.keys)
    return {
        "type": "misnamed_keys",
        "loc": (*loc, clash.field),
        "msg": f"is written under several keys that are not its name ({named})",
        "input": {key: node[key] for key in clash.keys},
        "ctx": {"keys": clash.keys, "field": clash.field},
    }
