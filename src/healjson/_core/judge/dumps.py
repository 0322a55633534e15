"""A value as the JSON data `changed_fields` compares (`answer_data`): every field, those the
value left at their default marked `Default`, and each object whose keys are data (`Keys`: a
map, a JSON Schema target's object) marked so that a key it no longer holds is a change
(`outcome.changes.changed_paths` reads both)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from healjson._core.sentinels import NOTHING
from healjson._core.target.json_schema import JsonSchema
from healjson._core.target.target import Target

if TYPE_CHECKING:
    from healjson._core.parse.shape import Shape

__all__ = ["Default", "Keys", "answer_data", "with_defaults"]


def answer_data(target: Target[Any], value: Any) -> Any:
    """`value` (of the target's kind) as JSON data, fields under their wire names: every field,
    each one it did not set marked `Default` (`with_defaults`), so that a field left at
    its default is compared too. The form `changed_fields` compares (NOTHING: a serializer
    that raises)."""
    dump = target.adapter.dump_python
    try:
        set_only = dump(value, mode="json", by_alias=True, exclude_unset=True)
        full = dump(value, mode="json", by_alias=True)
    except Exception:  # a serializer of the caller's that fails on this value
        return NOTHING
    from healjson._core.parse.shape import shape_of  # the parser, not at `import healjson`

    plain = isinstance(target.type_, JsonSchema)  # JSON data: every key is kept
    return _keyed(shape_of(target), with_defaults(set_only, full), plain, 0)


class Keys(dict[str, Any]):
    """An object of a dump whose keys are data (a map's, or any object of a JSON Schema
    target's value, which keeps the keys it was given): a key it lacks was removed. A model's
    object is a plain dict: a key only an earlier answer had was an extra key, ignored."""

    __slots__ = ()


_MAX_DEPTH = 200


def _keyed(shape: Shape | None, data: Any, plain: bool, depth: int) -> Any:
    """`data` with its objects whose keys are data marked `Keys`, along `shape`."""
    if depth > _MAX_DEPTH:
        return data
    if isinstance(data, Default):
        return Default(_keyed(shape, data.value, plain, depth + 1))
    if shape is not None and shape.branches and isinstance(data, dict | list):
        kind = "object" if isinstance(data, dict) else "array"  # `X | None`, `dict | list`
        fits = [branch for branch in shape.branches if kind in branch.kinds]
        shape = fits[0] if len(fits) == 1 else shape
    if shape is None or shape.branches or (isinstance(data, dict) and shape.free):
        # no schema here, or a union's branch that cannot be told: only JSON data's own
        # objects (a JSON Schema target's) are known to keep their keys
        return _all_keys(data, depth) if plain else data
    if isinstance(data, dict):
        props = shape.props or {}
        if not props and shape.extra is None:
            return _all_keys(data, depth) if plain else data
        out = {
            key: _keyed(props.get(key, shape.extra), value, plain, depth + 1)
            for key, value in data.items()
        }
        return Keys(out) if plain or not props else out
    if isinstance(data, list):
        return [
            _keyed(shape.prefix[i] if i < len(shape.prefix) else shape.items, v, plain, depth + 1)
            for i, v in enumerate(data)
        ]
    return data


class Default:
    """A field's value in a dump that the value did not set: it holds its default."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Default) and bool(other.value == self.value)

    def __hash__(self) -> int:  # pragma: no cover - never a key
        return 0

    def __repr__(self) -> str:
        return f"Default({self.value!r})"


def with_defaults(set_only: Any, full: Any) -> Any:
    """A value's dump with every field (`full`), where each field its dump of the fields it set
    (`set_only`) leaves out is marked `Default`: at any depth, in lists too (linear)."""
    if isinstance(set_only, dict) and isinstance(full, dict):
        merged = {
            key: with_defaults(set_only[key], value) if key in set_only else Default(value)
            for key, value in full.items()
        }
        for key, value in set_only.items():  # a dump that differs with `exclude_unset`
            merged.setdefault(key, value)
        return merged
    if isinstance(set_only, list) and isinstance(full, list) and len(set_only) == len(full):
        return [with_defaults(old, new) for old, new in zip(set_only, full, strict=True)]
    return set_only


def _all_keys(data: Any, depth: int) -> Any:
    """JSON data with every object marked `Keys`."""
    if depth > _MAX_DEPTH:
        return data
    if isinstance(data, dict):
        return Keys({key: _all_keys(value, depth + 1) for key, value in data.items()})
    if isinstance(data, list):
        return [_all_keys(value, depth + 1) for value in data]
    return data
