"""Numbers drawn as the schema means them: on the grid of a `multipleOf`, or of a `Decimal`'s
`decimal_places`, within the bounds.

A number with a step `m` (its `multipleOf`; for a `Decimal` with `decimal_places=p` and no
`multipleOf`, `10**-p`) is drawn as `k·m` for an integer `k` whose multiple lies within the
bounds, computed in decimal arithmetic (`3 * 0.1` is `0.3`, not `0.30000000000000004`): every
value the bounds allow is on the grid, so a threshold anywhere in the range is reached, and
the bounds themselves are among the values. A float step that binary floats cannot hold
exactly (`0.01`) is drawn where the nearest float to `k·m` stays within pydantic's tolerance
of a multiple (an absolute `1e-9` in pydantic-core 2.3x+, a relative one before): `|k·m|` up to
`2**20`, or anywhere when the bounds lie beyond. Without a step, floats are drawn within the
bounds as before.

pydantic leaves a `Decimal`'s `decimal_places` and `max_digits` out of the JSON schema (its
number branch says only the bounds, as floats), so the kit builds its own schema of the target
with `_KitJsonSchema`, which writes what the core schema holds — the exact bounds, step,
places and digits — under `DECIMAL` in each branch of a `Decimal`. Its string branch is drawn
as the same numbers, written as strings (`"12.50"`).

Hypothesis is imported when a strategy is built, never when this module is imported.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Context, Decimal, InvalidOperation
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from pydantic.json_schema import GenerateJsonSchema

from healjson._core.target.target import Target

if TYPE_CHECKING:
    from hypothesis.strategies import SearchStrategy
    from pydantic_core import core_schema

__all__ = ["DECIMAL", "kit_json_schema", "number_bounds", "numbers"]

DECIMAL = "x-healjson-decimal"
"""The key under which the kit's schema keeps a `Decimal`'s constraints (strings and ints)."""
_REACH = 2**20  # |k·m| up to which the nearest float is within 1e-9 of a multiple of m
_EDGE = 3  # multiples next to each bound drawn as often as any others (a third of the draws)
_EXACT_DIGITS = 15  # a decimal of at most this many digits survives the trip through a float
_NOTED = ("ge", "gt", "le", "lt", "multiple_of")
_EXACTLY = Context(prec=400)  # room for every digit of the products and quotients computed


class _KitJsonSchema(GenerateJsonSchema):
    """pydantic's JSON schema, with each `Decimal`'s constraints noted under `DECIMAL`."""

    def decimal_schema(self, schema: core_schema.DecimalSchema) -> Any:
        out = super().decimal_schema(schema)
        given: dict[str, Any] = dict(schema)
        note: dict[str, Any] = {
            key: str(given[key]) for key in _NOTED if given.get(key) is not None
        }
        for key in ("decimal_places", "max_digits"):
            if isinstance(given.get(key), int):
                note[key] = given[key]
        union = out.get("anyOf")
        for branch in union if isinstance(union, list) else [out]:
            if isinstance(branch, dict) and branch.get("type") in ("number", "string"):
                branch[DECIMAL] = note
        return out


def kit_json_schema(target: Target[Any]) -> dict[str, Any]:
    """The target's JSON schema (validation mode) as the kit draws from it: pydantic's own,
    with each `Decimal`'s constraints noted (`_KitJsonSchema`); the target's schema for a
    JSON Schema target, or when pydantic cannot build it this way."""
    from pydantic import TypeAdapter

    if isinstance(target.adapter, TypeAdapter):
        try:
            return target.adapter.json_schema(schema_generator=_KitJsonSchema)
        except Exception:  # a type with no JSON schema: the target says what it has ({})
            pass
    return target.json_schema


# --- the grid ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Grid:
    """The multiples `k·step` the node allows: `first <= k <= last` (None: unbounded)."""

    step: Decimal
    first: int | None
    last: int | None
    decimal: bool  # a `Decimal`: exact at any size as a string, as a JSON number while short

    def value(self, k: int) -> Decimal:
        return _EXACTLY.multiply(Decimal(k), self.step)

    def drawn(self) -> tuple[int | None, int | None]:
        """The range of `k` drawn: within the bounds, where every value validates."""
        if self.decimal:
            reach = int(_EXACTLY.divide(Decimal(10) ** _EXACT_DIGITS, self.step))
        elif Decimal(float(self.step)) == self.step:  # a dyadic step: exact while it fits
            reach = 2**53 // Fraction(float(self.step)).numerator
        else:
            reach = int(_EXACTLY.divide(Decimal(_REACH), self.step))
        first = -reach if self.first is None else max(self.first, -reach)
        last = reach if self.last is None else min(self.last, reach)
        return (first, last) if first <= last else (self.first, self.last)


def _grid(schema: dict[str, Any]) -> _Grid | None:
    """The grid of a number node with a step; None without one."""
    note = schema.get(DECIMAL)
    note = note if isinstance(note, dict) else {}
    places, digits = note.get("decimal_places"), note.get("max_digits")
    step = _exact(note.get("multiple_of"))
    if step is None:
        step = _exact(schema.get("multipleOf"))
    if step is None and isinstance(places, int):
        step = Decimal(1).scaleb(-places)
    if step is None and isinstance(digits, int):
        places = digits // 2  # some digits after the point, the rest before it
        step = Decimal(1).scaleb(-places)
    if step is None or step <= 0:
        return None
    low = _bound(note, schema, low=True)
    high = _bound(note, schema, low=False)
    first = None if low is None else _index(_EXACTLY.divide(low[0], step), low[1], up=True)
    last = None if high is None else _index(_EXACTLY.divide(high[0], step), high[1], up=False)
    if isinstance(digits, int):  # at most `digits` digits, `places` of them after the point
        whole = _EXACTLY.divide(
            Decimal(10) ** (digits - (places if isinstance(places, int) else 0)), step
        )
        first = _tighter(first, _index(-whole, True, up=True), max)
        last = _tighter(last, _index(whole, True, up=False), min)
    if first is not None and last is not None and first > last:
        return None  # no multiple within the bounds: the schema's floats are all there is
    return _Grid(step, first, last, decimal=DECIMAL in schema)


def _exact(raw: Any) -> Decimal | None:
    """A number as the schema writes it (`0.1` is one tenth), or None."""
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        return None
    try:
        value = Decimal(repr(raw) if isinstance(raw, float) else raw)
    except (InvalidOperation, ValueError):
        return None
    return value if value.is_finite() else None


_SIDES = {  # (inclusive, exclusive) keys: the core schema's, then the JSON schema's
    True: (("ge", "gt"), ("minimum", "exclusiveMinimum")),
    False: (("le", "lt"), ("maximum", "exclusiveMaximum")),
}


def _bound(
    note: dict[str, Any], schema: dict[str, Any], *, low: bool
) -> tuple[Decimal, bool] | None:
    """(value, exclusive) of the lower (`low`) or the upper bound: the exact one a `Decimal`
    notes, else the schema's."""
    for source, (inclusive, exclusive) in zip((note, schema), _SIDES[low], strict=True):
        for key, closed in ((exclusive, True), (inclusive, False)):
            value = _exact(source.get(key))
            if value is not None:
                return value, closed
    return None


def _index(ratio: Decimal, exclusive: bool, *, up: bool) -> int:
    """The least (`up`) or the greatest integer k at or beyond `ratio` (past it: `exclusive`)."""
    k = int(ratio.to_integral_value(rounding=ROUND_CEILING if up else ROUND_FLOOR))
    if exclusive and k == ratio:
        k += 1 if up else -1
    return k


def _tighter(bound: int | None, other: int, pick: Any) -> int:
    return other if bound is None else int(pick(bound, other))


# --- strategies and bounds -----------------------------------------------------------------------


def numbers(schema: dict[str, Any], *, text: bool = False) -> SearchStrategy[Any] | None:
    """The numbers of a number node on its grid (as strings for a `Decimal`'s string branch:
    `text`); None when it has no grid and is not a `Decimal` (the caller draws floats)."""
    from hypothesis import strategies as st

    grid = _grid(schema)
    if grid is None:
        if DECIMAL not in schema:
            return None
        floats = _floats(schema)  # a Decimal without a step: floats, as the number branch
        return floats.map(lambda f: str(Decimal(repr(f)))) if text else floats
    first, last = grid.drawn()
    # any k; a float snapped to the grid (spread over the range as floats are); the bounds'
    # neighbourhoods (the first and the last few multiples), where a threshold on them breaks
    spread = st.floats(
        min_value=None if first is None else float(grid.value(first)),
        max_value=None if last is None else float(grid.value(last)),
        allow_nan=False,
        allow_infinity=False,
    )
    edges = _edges(first, last)
    raw = st.integers(first, last) | spread
    raw = raw | st.sampled_from(edges) if edges else raw

    def multiple(drawn: int | float) -> Any:
        k = drawn if isinstance(drawn, int) else _snapped(grid, drawn, first, last)
        return str(grid.value(k)) if text else _as_json(grid.value(k), grid.decimal)

    # `builds`, not `map`: hypothesis draws a mapped number inside an object far less
    # variously (half of a price's draws were 0.0 beside a drawn string)
    return st.builds(multiple, raw)


def _edges(first: int | None, last: int | None) -> list[int]:
    """The first and the last `_EDGE` values of k in `first`..`last` (None: unbounded)."""
    near = [first + i for i in range(_EDGE)] if first is not None else []
    near += [last - i for i in range(_EDGE)] if last is not None else []
    return sorted(
        k for k in set(near) if (first is None or k >= first) and (last is None or k <= last)
    )


def _snapped(grid: _Grid, value: float, first: int | None, last: int | None) -> int:
    """The k of the multiple nearest to `value`, within `first`..`last`."""
    k = int(_EXACTLY.divide(Decimal(repr(value)), grid.step).to_integral_value())
    k = k if first is None else max(k, first)
    return k if last is None else min(k, last)


def _floats(schema: dict[str, Any]) -> SearchStrategy[float]:
    """Floats within a `Decimal`'s bounds (its string branch says them only in its note)."""
    from hypothesis import strategies as st

    note = schema.get(DECIMAL)
    note = note if isinstance(note, dict) else {}
    low = _bound(note, schema, low=True)
    high = _bound(note, schema, low=False)
    return st.floats(
        min_value=None if low is None else float(low[0]),
        max_value=None if high is None else float(high[0]),
        exclude_min=bool(low and low[1]),
        exclude_max=bool(high and high[1]),
        allow_nan=False,
        allow_infinity=False,
    )


def _as_json(value: Decimal, decimal: bool) -> int | float:
    """A multiple as a JSON number: an integer where it is whole (a `Decimal`'s places stay as
    the grid has them), else the float nearest to it (whose shortest form is the multiple)."""
    if decimal and value == value.to_integral_value():
        return int(value)
    return float(value)


def number_bounds(schema: dict[str, Any]) -> list[int | float] | None:
    """The smallest and the largest value a number node with a grid allows, where it sets them
    (for the changes `_sites` tries); None without a grid."""
    grid = _grid(schema)
    if grid is None:
        return None
    ends = [k for k in (grid.first, grid.last) if k is not None]
    return [_as_json(grid.value(k), grid.decimal) for k in dict.fromkeys(ends)]
