"""The places a change can go in a value, and the changes tried there (`violating` and `valid`).

A *site* is a top-level field of a value, or, inside a list or an object, one of its items or
properties (`tasks`, `tasks[0]`, `tasks[0].title`). Each has *fixed* changes, which cost nothing
to make and are tried on every draw, and may have a *fresh* change, a value drawn from its
schema. The fixed changes are the ones that break or mend ordinary rules:

- another value of a small enum, the other boolean, null, the field left out (and for a
  field that is null or left out: the values of a small enum, a boolean, a number's bounds);
- a number at each of its bounds (a multiple of its step, for a float or a `Decimal` too: the
  first and the last multiple within them);
- an empty string;
- for a list: emptied, shortened at either end, its first or last item repeated at the end, and
  reversed (so rules of emptiness, counts, uniqueness and order are reached);
- inside a list: an item, or a property of an item, given its neighbour's value (two tasks with
  the same title, two legs in the same city).

A fresh change is drawn from a strategy built once per schema node (for a list: also the list
with a fresh item put in at a drawn place), so sites can be listed for a value drawn at run time
as cheaply as for a golden example.

Hypothesis is imported when a strategy is built, never when this module is imported.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from ._internals import MISSING
from ._numbers import DECIMAL, number_bounds
from ._schema_data import SchemaStrategies, memo

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy

__all__ = ["Edit", "Path", "Site", "field_sites", "fresh_edit"]

_NESTING = 3  # sites reach this many levels below a top-level field (`lines[1].price`)
_ITEMS = 8  # a list's first this many items are sites of their own
_CHOICES = 8  # an enum of at most this many values has each other value tried on every draw

Path = tuple[str | int, ...]
Edit = tuple[Path, Any]  # the value at that path in the data (MISSING: left out)
_VALUE, _INSERT = "value", "insert"


@dataclass(frozen=True, slots=True)
class Site:
    """One place a change can go in one value."""

    path: Path
    current: Any  # what the value holds there (MISSING: left out)
    fixed: tuple[Any, ...]  # tried on every draw
    fresh: SearchStrategy[tuple[str, Any]] | None  # drawn: ("value", v) or ("insert", (i, item))


def field_sites(
    builder: SchemaStrategies,
    properties: dict[str, Any],
    required: set[str],
    names: Sequence[str],
    data: dict[str, Any],
    *,
    drawn: bool = True,
) -> list[Site]:
    """The sites of the top-level fields `names` of `data`; with `drawn=False`, with their
    fixed changes only."""
    return [
        site
        for name in names
        for site in _sites(
            builder,
            (name,),
            properties[name],
            data.get(name, MISSING),
            depth=1,
            required=name in required,
            drawn=drawn,
        )
    ]


def fresh_edit(site: Site, drawn: tuple[str, Any]) -> Edit | None:
    """The change a value drawn from `site.fresh` makes; None when it is no change at all."""
    kind, value = drawn
    if kind == _INSERT:
        index, item = value
        items = list(site.current) if isinstance(site.current, list) else []
        spot = min(index, len(items))
        return (site.path, [*items[:spot], item, *items[spot:]])
    return None if value == site.current else (site.path, value)


def _sites(
    builder: SchemaStrategies,
    path: Path,
    raw: Any,
    current: Any,
    *,
    depth: int,
    required: bool,
    drawn: bool,
    neighbour: Any = MISSING,
) -> list[Site]:
    """The site at `path` (where the data holds `current`, and the same place in the
    neighbouring item holds `neighbour`) and, inside a list or an object, the sites of its
    items and properties."""
    schema = builder.resolve(raw)
    fixed = _fixed(builder, schema, current)
    if neighbour is not MISSING and neighbour != current and neighbour not in fixed:
        fixed.append(neighbour)
    if not required and current is not MISSING:
        fixed.append(MISSING)
    fresh = None
    if drawn and not _all_fixed(schema):
        fresh = _fresh(builder, raw, schema, depth)
    out = [Site(path, current, tuple(fixed), fresh)] if fixed or fresh is not None else []
    if depth > _NESTING:
        return out
    # key, schema, value, required, the neighbour's value
    inner: list[tuple[str | int, Any, Any, bool, Any]] = []
    if isinstance(current, list):
        items = _branch(builder, schema, "array").get("items")
        if isinstance(items, dict):
            inner = [
                (index, items, item, True, _neighbour(current, index))
                for index, item in enumerate(current[:_ITEMS])
            ]
    elif isinstance(current, dict):
        obj = _branch(builder, schema, "object")
        props = obj.get("properties")
        if isinstance(props, dict):
            wanted = set(obj.get("required", ()))
            other = neighbour if isinstance(neighbour, dict) else {}
            inner = [
                (name, sub, current.get(name, MISSING), name in wanted, other.get(name, MISSING))
                for name, sub in props.items()
            ]
    for key, sub, value, needed, beside in inner:
        out.extend(
            _sites(
                builder,
                (*path, key),
                sub,
                value,
                depth=depth + 1,
                required=needed,
                drawn=drawn,
                neighbour=beside,
            )
        )
    return out


def _neighbour(items: list[Any], index: int) -> Any:
    """The item next to `items[index]` (the second one for the first)."""
    if len(items) < 2:
        return MISSING
    return items[1] if index == 0 else items[index - 1]


def _all_fixed(schema: dict[str, Any]) -> bool:
    """Every other value is among the fixed changes (a small enum, a boolean, a constant)."""
    enum = schema.get("enum")
    small = isinstance(enum, list) and len(enum) <= _CHOICES + 1
    return small or "const" in schema or schema.get("type") == "boolean"


def _fixed(builder: SchemaStrategies, schema: dict[str, Any], current: Any) -> list[Any]:
    """The changes tried on every draw (see the module's docstring)."""
    out: list[Any] = []
    enum = schema.get("enum")
    if isinstance(enum, list) and len(enum) <= _CHOICES + 1:
        out.extend(value for value in enum if value != current)
    kind = schema.get("type")
    if kind == "boolean" and isinstance(current, bool):
        out.append(not current)
    if current is not None and _allows_null(builder, schema):
        out.append(None)
    numeric = _numeric(builder, schema)
    if numeric is not None and _is_number(current, numeric):
        integer = numeric.get("type") == "integer"
        out.extend(bound for bound in _bounds(numeric, integer) if not _same(bound, current))
    plain = not ({"pattern", "format", "enum", "minLength"} & set(schema))
    if kind == "string" and current and plain:
        out.append("")
    if current is None or current is MISSING:
        out.extend(value for value in _filled(builder, schema) if value not in out)
    if isinstance(current, list) and current:
        out.extend(_list_changes(builder.resolve(_branch(builder, schema, "array")), current))
    return out


def _filled(builder: SchemaStrategies, schema: dict[str, Any]) -> list[Any]:
    """Values for a field that is null or left out, where its type has a few obvious ones:
    the values of a small enum, both booleans, a number's bounds (or 0 without any)."""
    branches = [schema]
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            branches = [builder.resolve(branch) for branch in schema[key]]
    out: list[Any] = []
    for branch in branches:
        kind = branch.get("type")
        enum = branch.get("enum")
        if isinstance(enum, list) and len(enum) <= _CHOICES + 1:
            out.extend(enum)
        elif kind == "boolean":
            out.extend((True, False))
        elif kind in ("integer", "number"):
            out.extend(_bounds(branch, kind == "integer") or [0])
    return out


def _list_changes(array: dict[str, Any], current: list[Any]) -> list[list[Any]]:
    """Emptied, shortened at either end, the first or the last item repeated at the end,
    reversed: within the list's length bounds, each different from `current`."""
    low = array.get("minItems")
    low = low if isinstance(low, int) else 0
    high = array.get("maxItems")
    out: list[list[Any]] = []
    if low == 0:
        out.append([])
    if len(current) > max(low, 1):
        out.extend((current[:-1], current[1:]))
    if not (isinstance(high, int) and len(current) >= high) and not array.get("uniqueItems"):
        out.append([*current, current[-1]])
        if len(current) > 1:
            out.append([*current, current[0]])
    backwards = current[::-1]
    if backwards != current:
        out.append(backwards)
    return out


def _numeric(builder: SchemaStrategies, schema: dict[str, Any]) -> dict[str, Any] | None:
    """The schema, or its `anyOf`/`oneOf` branch, of a number (`float | None`, a `Decimal`)."""
    for kind in ("integer", "number"):
        branch = _branch(builder, schema, kind)
        if branch.get("type") == kind:
            return branch
    return None


def _is_number(current: Any, numeric: dict[str, Any]) -> bool:
    """The value is a number, or a `Decimal` written as a string (as its JSON dump has it)."""
    if isinstance(current, bool):
        return False
    if isinstance(current, int | float):
        return True
    return isinstance(current, str) and DECIMAL in numeric


def _same(bound: float, current: Any) -> bool:
    try:
        return Decimal(repr(bound)) == Decimal(str(current))
    except (InvalidOperation, ValueError):
        return False


def _bounds(schema: dict[str, Any], integer: bool) -> list[int | float]:
    """The smallest and the largest value the schema allows, where it sets them (for a number
    with a step, or a `Decimal` with places: the first and the last multiple within them)."""
    low, high = schema.get("minimum"), schema.get("maximum")
    step = schema.get("multipleOf")
    if not integer:
        on_grid = number_bounds(schema)
        if on_grid is not None or step is not None:
            return on_grid or []
        return [b for b in (low, high) if isinstance(b, int | float) and not isinstance(b, bool)]
    first = _edge(low, schema.get("exclusiveMinimum"), 1)
    last = _edge(high, schema.get("exclusiveMaximum"), -1)
    if isinstance(step, int) and step > 0:
        first = None if first is None else -(-first // step) * step
        last = None if last is None else last // step * step
    elif step is not None:
        return []
    return [bound for bound in (first, last) if bound is not None]


def _edge(inclusive: Any, exclusive: Any, inward: int) -> int | None:
    """An integer bound: the inclusive one rounded inwards, else next to the exclusive one."""
    if _number(inclusive):
        return int(math.ceil(inclusive) if inward > 0 else math.floor(inclusive))
    if _number(exclusive):
        return int(math.floor(exclusive) + 1 if inward > 0 else math.ceil(exclusive) - 1)
    return None


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fresh(
    builder: SchemaStrategies, raw: Any, schema: dict[str, Any], depth: int
) -> SearchStrategy[tuple[str, Any]]:
    """Another value of the schema at a site, built once per schema node and depth; for a list,
    also a fresh item to put in (`fresh_edit` makes the change)."""
    return memo("fresh", (builder, raw, depth), lambda: _make_fresh(builder, raw, schema, depth))


def _make_fresh(
    builder: SchemaStrategies, raw: Any, schema: dict[str, Any], depth: int
) -> SearchStrategy[tuple[str, Any]]:
    from hypothesis import strategies as st

    enum = schema.get("enum")
    values = st.sampled_from(enum) if isinstance(enum, list) else builder.build(raw, depth)
    fresh = values.map(lambda value: (_VALUE, value))
    array = _branch(builder, schema, "array")
    items = array.get("items")
    if array.get("type") != "array" or not isinstance(items, dict):
        return fresh
    added = st.tuples(st.integers(0, _ITEMS), builder.build(items, depth + 1))
    return fresh | added.map(lambda pair: (_INSERT, pair))


def _branch(builder: SchemaStrategies, schema: dict[str, Any], kind: str) -> dict[str, Any]:
    """The schema itself, or its `anyOf`/`oneOf` branch of that JSON type (`list[X] | None`)."""
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list):
            for branch in branches:
                resolved = builder.resolve(branch)
                if resolved.get("type") == kind:
                    return resolved
    return schema


def _allows_null(builder: SchemaStrategies, schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if schema.get("nullable") is True:
        return True
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and any(
            builder.resolve(branch).get("type") == "null" for branch in branches
        ):
            return True
    return False
