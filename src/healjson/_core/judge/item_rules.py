"""Where the lists of a rule over items are: the value itself (`Healer(list[Item],
item_contracts=[rule])`), or a field inside it (`@contract(fields=("qty",), items="lines")` on
`def rule(line: Line)`: the list at `lines` of an `Invoice`).

An `items=` path is a dotted path of field names (a field's alias is read too); a segment
that reaches a list means each item of that list, so `items="invoices.lines"` on an order whose
`invoices` is a list judges every line of every invoice, and `items="lines"` on a `list[Invoice]`
target the lines of each invoice. `lists_at` finds every list a path reaches in a value, each at
its place (`invoices[0].lines`); a rule's violations sit under their item (`invoices[0].lines[1]
.qty`: `item_place`), so the failure policies know which item of which list broke it; `read_at`
/ `replaced_at` read and replace a list at its place in a model instance or plain data
(`"drop"` removes the item, an item `"fix"` corrects it there: `policies`).

`path_problem` checks a path against the target where a `Healer` (or `validate`) is built: a
segment that names no field of what it reaches (or a path that reaches no list) is refused
there, naming the segment, as an unknown `fields=` name is; a part of the target whose fields
cannot be known (`Any`, a mapping's keys, an open JSON Schema object) leaves the rest unchecked.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import re
import typing
from collections.abc import Mapping, Sequence
from types import NoneType, UnionType
from typing import Any, Final

from healjson._core.diagnostic import format_path
from healjson._core.target.json_schema import JsonSchema
from healjson._core.target.schema_refs import resolve_ref
from healjson._core.target.target import Target, list_item_type

__all__ = [
    "attribute_name",
    "item_index",
    "item_place",
    "list_path",
    "lists_at",
    "path_problem",
    "read_at",
    "replaced_at",
]

_NAME: Final = re.compile(r"[^.\[\]\s]+")
Loc = tuple[str | int, ...]
"""A place in a value: field names and list indices (`("invoices", 0, "lines")`)."""


def list_path(items: Any) -> tuple[str, ...]:
    """The parts of an `items=` path (`"lines"`, `"order.lines"`); TypeError for anything else."""
    if not isinstance(items, str):
        raise TypeError(
            f'items= names the list the rule judges the items of, e.g. items="lines"; got '
            f"{type(items).__name__}"
        )
    parts = tuple(items.split("."))
    if not all(_NAME.fullmatch(part) for part in parts):
        raise TypeError(
            f'items= must be a field name or a dotted path of names ("lines", "order.lines"), '
            f"got {items!r}"
        )
    return parts


def place(loc: Loc) -> str:
    """A list's place as a path (`invoices[0].lines`; "" for the value itself)."""
    return format_path(loc) if loc else ""


def item_index(path: str, at: str) -> int | None:
    """The index of the item of the list at `at` that a diagnostic's `path` lies under
    (`lines[3].qty` -> 3 for `lines`), None for a path elsewhere."""
    if not path.startswith(f"{at}["):
        return None
    digits = path[len(at) + 1 : path.find("]", len(at))]
    return int(digits) if digits.isdigit() and len(digits) <= 9 else None


def item_place(path: str, places: Mapping[str, Loc]) -> tuple[str, int] | None:
    """The list (its place, one of `places`) and the index of the item a diagnostic's `path`
    lies under (`invoices[0].lines[1].qty` -> (`invoices[0].lines`, 1)); None: under none."""
    start = 0
    while (bracket := path.find("[", start)) >= 0:
        at = path[:bracket]
        if at in places:
            index = item_index(path, at)
            if index is not None:
                return at, index
        start = bracket + 1
    return None


def attribute_name(node: Any, key: str) -> str:
    """The Python attribute for `key`, which may be a field's alias (`orderId` for `order_id`)."""
    fields = getattr(type(node), "model_fields", None)
    if isinstance(fields, Mapping) and key not in fields:
        for name, info in fields.items():
            if key in (getattr(info, "alias", None), getattr(info, "validation_alias", None)):
                return str(name)
    return key


def _child(node: Any, part: str | int) -> Any:
    """What `node` holds at one step (a key, an attribute, an index); None when nothing."""
    if isinstance(part, int):
        return node[part] if isinstance(node, list | tuple) and part < len(node) else None
    if isinstance(node, Mapping):
        return node.get(part)
    if isinstance(node, list | tuple | str | bytes):
        return None
    return getattr(node, attribute_name(node, part), None)


def read_at(value: Any, loc: Loc) -> Any:
    """What `value` holds at `loc` (a model's attribute, a mapping's key, a list's index); None
    when nothing is there."""
    node = value
    for part in loc:
        node = _child(node, part)
        if node is None:
            return None
    return node


def lists_at(value: Any, parts: Sequence[str]) -> list[tuple[Loc, list[Any] | tuple[Any, ...]]]:
    """Every list the path `parts` reaches in `value`, with its place, in the value's order: a
    segment that reaches a list goes on in each of its items (lists of lists included)."""
    nodes: list[tuple[Loc, Any]] = [((), value)]
    for part in parts:
        reached: list[tuple[Loc, Any]] = []
        for loc, node in _each_item(nodes):
            child = _child(node, part)
            if child is not None:
                reached.append(((*loc, part), child))
        nodes = reached
    return [(loc, node) for loc, node in nodes if isinstance(node, list | tuple)]


def _each_item(nodes: list[tuple[Loc, Any]]) -> list[tuple[Loc, Any]]:
    """The nodes with every list among them replaced by its items (at any depth), in order."""
    out: list[tuple[Loc, Any]] = []
    todo = list(reversed(nodes))
    while todo:
        loc, node = todo.pop()
        if isinstance(node, list | tuple):
            todo.extend(((*loc, index), item) for index, item in reversed(list(enumerate(node))))
        else:
            out.append((loc, node))
    return out


def replaced_at(value: Any, loc: Loc, new: Any) -> Any:
    """A copy of `value` whose place `loc` holds `new`, nothing in it validated again: models
    copied with the change (`model_copy`), dataclasses copied and the field set (their
    `__init__` would validate a pydantic dataclass's fields again, and run `__post_init__`),
    mappings and lists copied; TypeError for a container it cannot copy."""
    if not loc:
        return new
    head, rest = loc[0], loc[1:]
    child = replaced_at(_child(value, head), rest, new)
    if isinstance(head, int) and isinstance(value, list | tuple):
        items = list(value)
        items[head] = child
        return tuple(items) if isinstance(value, tuple) else items
    if isinstance(head, str):
        if isinstance(value, Mapping):
            return {**value, head: child}
        model_copy = getattr(value, "model_copy", None)
        if callable(model_copy):
            return model_copy(update={attribute_name(value, head): child})
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            copied = copy.copy(value)
            object.__setattr__(copied, head, child)  # a frozen dataclass's too
            return copied
    raise TypeError(f"cannot replace {head!r} in a {type(value).__name__}")


# -- the path checked against the target ------------------------------------------------------

_OPEN: Final = object()
"""A part of the target whose fields cannot be known: the rest of a path is not checked."""
_SCALARS: Final = (str, bytes, int, float, complex)


def path_problem(target: Target[Any], at: str, fields: tuple[str, ...]) -> str | None:
    """What is wrong with the items path `at` ("": the value is the list) of a rule over items
    that reads the item's `fields` (their first names), for `target`: a segment that names no
    field, a path that reaches no list, an item field the item does not have; None when
    nothing is (or the target cannot tell)."""
    return _problem(target, at, fields)


@functools.lru_cache(maxsize=256)
def _problem(target: Target[Any], at: str, fields: tuple[str, ...]) -> str | None:
    parts = tuple(at.split(".")) if at else ()
    if isinstance(target.type_, JsonSchema):
        root = target.json_schema
        walk: _Walk = _SchemaWalk(root)
        shapes: list[Any] = [root]
    else:
        walk, shapes = _TypeWalk(), [target.type_]
    what = target.name
    for index, part in enumerate(parts):
        reached: list[Any] = []
        names: set[str] = set()
        for shape in walk.members(shapes, lists=True):
            found = walk.field(shape, part)
            if found is _OPEN:
                return None
            if isinstance(found, set):
                names |= found
            else:
                reached.append(found)
        if not reached:
            known = f"; its fields are: {', '.join(sorted(names))}" if names else ""
            return f"names field {part!r} (items={at!r}), which {what} does not have{known}"
        shapes = reached
        what = f"{'.'.join(parts[: index + 1])} (in {target.name})"
    items: list[Any] = []
    for shape in walk.members(shapes, lists=False):
        item = walk.item(shape)
        if item is _OPEN:
            return None
        if item is not None:
            items.append(item)
    if not items:
        return f"items={at!r} names {what}, which is no list: items= names a list"
    return _item_fields_problem(walk, items, fields, at)


def _item_fields_problem(
    walk: _Walk, items: list[Any], fields: tuple[str, ...], at: str
) -> str | None:
    names: set[str] = set()
    for shape in walk.members(items, lists=False):
        found = walk.field(shape, "")
        if found is _OPEN or not isinstance(found, set):
            return None  # an item whose fields cannot be known: nothing to check
        names |= found
    for name in fields:
        head = name.split(".", 1)[0].split("[", 1)[0]
        if head and head not in names:
            known = ", ".join(sorted(names))
            where = f"the items at {at!r}" if at else "the items"
            return f"names field {name!r}, which {where} do not have; their fields are: {known}"
    return None


class _Walk(typing.Protocol):
    def members(self, shapes: list[Any], *, lists: bool) -> list[Any]: ...
    def field(self, shape: Any, name: str) -> Any: ...
    def item(self, shape: Any) -> Any: ...


class _TypeWalk:
    """A path through Python types: models, dataclasses, TypedDicts, mappings, lists."""

    def members(self, shapes: list[Any], *, lists: bool) -> list[Any]:
        """The types a value may be: `Annotated` unwrapped, unions split (None left out), and
        with `lists`, each list replaced by its item type."""
        out: list[Any] = []
        todo = list(reversed(shapes))
        while todo:
            shape = todo.pop()
            origin = typing.get_origin(shape)
            if origin is typing.Annotated:
                todo.append(typing.get_args(shape)[0])
            elif origin in (typing.Union, UnionType):
                todo.extend(reversed([a for a in typing.get_args(shape) if a is not NoneType]))
            elif lists and (item := list_item_type(shape)) is not None:
                todo.append(item)
            else:
                out.append(shape)
        return out

    def field(self, shape: Any, name: str) -> Any:
        """The type of field `name` of `shape` (`""`: none asked), the set of its field names
        when it has no such field, or `_OPEN`."""
        fields = _type_fields(shape)
        if not isinstance(fields, dict):
            return fields
        return fields.get(name, set(fields))

    def item(self, shape: Any) -> Any:
        found = list_item_type(shape)
        if found is None and _type_fields(shape) is _OPEN and not _is_mapping(shape):
            return _OPEN
        return found


def _is_mapping(shape: Any) -> bool:
    origin = typing.get_origin(shape) or shape
    return isinstance(origin, type) and issubclass(origin, Mapping)


def _is_typeddict(shape: Any) -> bool:
    """A `TypedDict` class (`typing`'s or `typing_extensions`')."""
    return isinstance(shape, type) and issubclass(shape, dict) and hasattr(shape, "__total__")


def _type_fields(shape: Any) -> Any:
    """A type's fields (name or alias -> type), `set()` for a type with none (a scalar, a
    list), or `_OPEN`."""
    if isinstance(shape, type) and hasattr(shape, "model_fields"):
        fields: dict[str, Any] = {}
        for name, info in shape.model_fields.items():
            fields[name] = info.annotation
            if isinstance(info.alias, str):
                fields[info.alias] = info.annotation
        return fields
    try:
        if dataclasses.is_dataclass(shape) or _is_typeddict(shape):
            hints = typing.get_type_hints(shape, include_extras=True)
            return {name: hint for name, hint in hints.items() if not name.startswith("_")}
    except Exception:  # a name the hints cannot resolve: not knowable here
        return _OPEN
    if typing.get_origin(shape) is typing.Literal or list_item_type(shape) is not None:
        return set()
    if isinstance(shape, type) and issubclass(shape, _SCALARS):
        return set()
    return _OPEN  # Any, a mapping (its keys are data), a type healjson cannot look into


class _SchemaWalk:
    """A path through a JSON Schema: `properties`, `items`, `$ref`s and `anyOf` branches."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.root = root

    def members(self, shapes: list[Any], *, lists: bool) -> list[Any]:
        out: list[Any] = []
        todo = list(reversed(shapes))
        seen = 0
        while todo and seen < 10_000:  # a schema's `$ref` cycle ends here
            seen += 1
            node = todo.pop()
            if not isinstance(node, dict):
                out.append(_OPEN if node is True else {"not": {}})
                continue
            node = resolve_ref(self.root, node)
            branches = node.get("anyOf") or node.get("oneOf") or node.get("allOf")
            if isinstance(branches, list):
                todo.extend(reversed(branches))
            elif node.get("type") == "null":
                continue
            elif lists and isinstance(node.get("items"), dict | bool):
                todo.append(node["items"])
            else:
                out.append(node)
        return out

    def field(self, shape: Any, name: str) -> Any:
        if shape is _OPEN:
            return _OPEN
        props = shape.get("properties")
        extra = shape.get("additionalProperties")
        if isinstance(props, dict) and name in props:
            return props[name]
        if isinstance(extra, dict):
            return extra
        if extra is True:  # other keys allowed: any name may be one
            return _OPEN
        if isinstance(props, dict):
            return set(props)
        kind = shape.get("type")
        return _OPEN if kind in (None, "object") and "items" not in shape else set()

    def item(self, shape: Any) -> Any:
        if shape is _OPEN:
            return _OPEN
        items = shape.get("items")
        if isinstance(items, dict | bool):
            return items if isinstance(items, dict) else {}
        return _OPEN if shape.get("type") is None and "properties" not in shape else None
