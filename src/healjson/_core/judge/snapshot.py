"""What a value holds, every field's real value, to tell whether a contract changed it.

A JSON dump cannot: it leaves out a field declared `exclude=True`, shows a field with a custom
serializer as the serializer writes it, and masks a `SecretStr`. `snapshot` walks the value
itself instead, once, iteratively (linear in the value's size, whatever its depth), into a flat
list of immutable tokens, so that two snapshots are equal exactly when nothing the walk can see
changed in between:

- a pydantic model by its `__dict__` (every field, excluded ones included, and anything else
  set on it but a `cached_property`'s value, which reading the property stores there), its
  `__pydantic_extra__` and its private attributes (`__pydantic_private__`);
- a `SecretStr`, a `SecretBytes` or a `Secret[...]` by its secret value;
- a dataclass by its fields; a dict, a list, a tuple (a named one too), a deque by their items,
  a set or a frozenset as the set of its items' snapshots; a `bytearray` by its bytes;
- a str, bytes, int, bool, None or float by its value and exact type (a float by its `hex()`,
  so that a NaN is the same NaN); an enum member, a date, a time, a `Decimal`, a UUID, a path,
  an URL by its value and type (an aware datetime with its offset);
- anything else, which it cannot walk, by identity (a replaced object is a change) and by its
  JSON dump, the one the comparison used before (`to_json`, else its `repr`).

An object met twice (shared, or a cycle) is walked once; later meetings name the first.
Nothing is copied but leaves, which are immutable.

The walk is Python, and costs more than a dump (about 7 µs per thousand leaves): a dump cannot
stand in for it, even where it shows every field, as it writes a tuple and a list, an enum
member and its value, `1` and `1.0` alike, and reads a computed field (which may change between
two reads without any contract's doing). It runs only when the target has contracts.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import fractions
import ipaddress
import pathlib
import uuid
from collections import deque
from functools import cached_property
from typing import Any, Final

from pydantic import BaseModel, SecretBytes, SecretStr
from pydantic_core import MultiHostUrl, Url, to_json

try:  # pydantic >= 2.7
    from pydantic import Secret as _Secret
except ImportError:  # pragma: no cover - an older pydantic has no generic `Secret`
    _Secret = SecretStr  # type: ignore[misc,assignment]

__all__ = ["SECRET_TYPES", "same_snapshot", "snapshot"]

_EXACT = frozenset({str, bytes, int, bool, type(None), range})
_VALUES = (
    enum.Enum,
    uuid.UUID,
    pathlib.PurePath,
    fractions.Fraction,
    datetime.timedelta,
    datetime.timezone,
    ipaddress.IPv4Address,
    ipaddress.IPv6Address,
    ipaddress.IPv4Network,
    ipaddress.IPv6Network,
    ipaddress.IPv4Interface,
    ipaddress.IPv6Interface,
    Url,
    MultiHostUrl,
)
SECRET_TYPES: Final = (SecretStr, SecretBytes, _Secret)
"""pydantic's secret types: a value a JSON dump masks (`get_secret_value()` reads it)."""
_CONTAINERS = frozenset({dict, list, tuple})
"""The kinds met most, which go to the container walk with no other check."""
_END = object()
"""Closes a walked container: its items end here (no two shapes give the same tokens)."""


class _Same:
    """An object the walk cannot look into: equal to a token of the very same object only
    (its snapshot keeps it alive, so its identity is not reused while the snapshot lives)."""

    __slots__ = ("obj",)

    def __init__(self, obj: Any) -> None:
        self.obj = obj

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Same) and other.obj is self.obj

    def __hash__(self) -> int:
        return id(self.obj)


class _Seen:
    """A container met before in the same walk: the position of its first meeting."""

    __slots__ = ("at",)

    def __init__(self, at: int) -> None:
        self.at = at

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Seen) and other.at == self.at

    def __hash__(self) -> int:
        return hash(("seen", self.at))


def snapshot(value: Any) -> list[Any]:
    """`value`'s tokens: equal for two calls exactly when nothing in it changed (see the
    module's rules). Never raises: a part that fails to be read is compared by identity."""
    out: list[Any] = []
    seen: dict[int, int] = {}
    keep: list[Any] = []  # the walked containers stay alive, so that their ids stay theirs
    stack: list[Any] = [value]
    append, pop = out.append, stack.pop
    while stack:
        node = pop()
        kind = type(node)
        if kind in _EXACT:  # the most frequent nodes first, with no call
            append(kind)
            append(node)
        elif kind is float:
            append(float)
            append(node.hex())
        elif node is _END:
            append(_END)
        else:
            try:
                _step(node, out, stack, seen, keep)
            except Exception:  # a property or a secret that raises: compared by identity
                append(_Same(node))
    return out


def same_snapshot(before: list[Any], after: list[Any]) -> bool:
    """The two snapshots are equal (False when comparing them raises: an `__eq__` of the
    caller's, called only on tokens that are not the very same object, that is on a change)."""
    try:
        return bool(before == after)
    except Exception:
        return False


def _step(
    node: Any, out: list[Any], stack: list[Any], seen: dict[int, int], keep: list[Any]
) -> None:
    """One node: its tokens into `out`, its children (last first) onto `stack`."""
    kind = type(node)
    if (
        kind not in _CONTAINERS
        and not isinstance(node, BaseModel)
        and _leaf(node, kind, out, stack)
    ):
        return
    first = seen.get(id(node))
    if first is not None:
        out.append(_Seen(first))
        return
    seen[id(node)] = len(out)
    keep.append(node)
    children = _children(node)
    if children is None:
        out.append(_Same(node))
        if not hasattr(kind, "__next__"):  # an iterator is not dumped: that would consume it
            out.append(_dump(node))
        return
    if isinstance(children, frozenset):
        out.append(kind)
        out.append(children)
        return
    out.append(kind)
    stack.append(_END)
    stack.extend(reversed(children))


def _leaf(node: Any, kind: type, out: list[Any], stack: list[Any]) -> bool:
    """A node the walk reads as a value (its tokens into `out`, a secret's value onto
    `stack`): True; False for a container or an object the walk does not look into."""
    if isinstance(node, _VALUES):  # before the kinds an enum may derive from (`IntEnum`)
        out.append(kind)
        out.append(node)
        return True
    if isinstance(node, float):
        out.append(kind)
        out.append(float.hex(node))
        return True
    if isinstance(node, str | bytes | int):  # a subclass: by its plain value
        out.append(kind)
        out.append(_plain(node))
        return True
    if isinstance(node, decimal.Decimal | complex):  # by text: a NaN is the same NaN
        out.append(kind)
        out.append(str(node))
        return True
    if isinstance(node, datetime.date | datetime.time):  # a datetime is a date
        out.append(kind)
        out.append(node.isoformat())
        return True
    if isinstance(node, SECRET_TYPES):
        out.append(kind)
        stack.append(node.get_secret_value())
        return True
    if isinstance(node, bytearray):
        out.append(kind)
        out.append(bytes(node))
        return True
    return False


def _children(node: Any) -> list[Any] | frozenset[Any] | None:
    """What `node` holds, in order (dict keys beside their values), a set's items' snapshots
    as a frozenset, or None for an object the walk does not look into."""
    if isinstance(node, BaseModel):
        fields = type(node).__pydantic_fields__
        held = [
            item
            for key, field in node.__dict__.items()
            if key in fields or not isinstance(getattr(type(node), key, None), cached_property)
            for item in (key, field)
        ]
        held += (_END, node.__pydantic_extra__, getattr(node, "__pydantic_private__", None))
        return held
    if isinstance(node, dict):
        return [item for pair in node.items() for item in pair]
    if isinstance(node, list | tuple | deque):
        return list(node)
    if isinstance(node, set | frozenset):
        return frozenset(tuple(snapshot(item)) for item in node)
    if dataclasses.is_dataclass(node) and not isinstance(node, type):
        return [getattr(node, field.name) for field in dataclasses.fields(node)]
    return None


def _plain(node: str | bytes | int) -> str | bytes | int:
    """A str, bytes or int subclass's value as the plain type."""
    if isinstance(node, str):
        return str.__str__(node)
    if isinstance(node, bytes):
        return bytes(node)
    return int(node)


def _dump(node: Any) -> bytes:
    """The JSON dump of an object the walk does not look into, else its repr."""
    try:
        return to_json(node, serialize_unknown=True)
    except Exception:
        try:
            return repr(node).encode("utf-8", "replace")
        except Exception:
            return b""
