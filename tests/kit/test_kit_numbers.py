"""The kit draws numbers as the schema means them: a float with `multiple_of` as multiples of
its step, a `Decimal` with its `decimal_places` (which pydantic leaves out of the JSON schema),
so every drawn value validates and a threshold anywhere in the range is reached — by
`from_schema` and by the search that breaks a rule alone."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, create_model
from pydantic_core import to_json

from healjson import ContractPack, contract
from healjson._core.target.target import target_for
from healjson.testing import check_pack, from_schema
from healjson.testing._numbers import DECIMAL
from healjson.testing._schema_data import kit_schema, schema_strategies
from healjson.testing._sites import field_sites
from pinned import pinned

_DRAWS = 12  # field values drawn per generated field


# --- generated fields --------------------------------------------------------------------------


@st.composite
def grids(draw: st.DrawFn) -> tuple[Decimal, Decimal, Decimal, bool, bool]:
    """A step (as a decimal: `0.01`, `2.5`, `0.3`...) and bounds holding a few multiples of it:
    (step, low, high, low exclusive, high exclusive)."""
    step = Decimal(draw(st.integers(1, 99))).scaleb(-draw(st.integers(0, 4)))
    low = Decimal(draw(st.integers(-10_000, 10_000))).scaleb(-draw(st.integers(0, 3)))
    span = step * draw(st.integers(2, 400)) + Decimal(draw(st.integers(0, 99))).scaleb(-3)
    return step, low, low + span, draw(st.booleans()), draw(st.booleans())


def float_field(step: Decimal, low: Decimal, high: Decimal, gt: bool, lt: bool) -> Any:
    bounds = {"gt" if gt else "ge": float(low), "lt" if lt else "le": float(high)}
    return create_model("Priced", x=(float, Field(multiple_of=float(step), **bounds)))


def decimal_field(places: int, low: Decimal, high: Decimal, gt: bool, lt: bool) -> Any:
    bounds = {"gt" if gt else "ge": low, "lt" if lt else "le": high}
    return create_model("Priced", x=(Decimal, Field(decimal_places=places, **bounds)))


def drawn_values(model: Any, data: st.DataObject) -> list[Any]:
    """`_DRAWS` values of field `x` as the kit's schema strategy draws them, before any
    validation filters them."""
    builder = schema_strategies(target_for(model))
    strategy = builder.build(builder.root, 0)
    return [data.draw(strategy)["x"] for _ in range(_DRAWS)]


def site_bounds(model: Any, value: Any) -> list[Any]:
    """The values the threshold-breaking search tries at field `x` of a value holding it."""
    target = target_for(model)
    builder = schema_strategies(target)
    root = builder.resolve(builder.root)
    [site] = field_sites(builder, root["properties"], {"x"}, ["x"], {"x": value}, drawn=False)
    return list(site.fixed)


def accepts(model: Any, x: Any) -> bool:
    try:
        model.model_validate_json(to_json({"x": x}))
    except ValueError:
        return False
    return True


def nearest_multiples(
    step: Decimal, low: Decimal, high: Decimal, gt: bool, lt: bool
) -> set[Decimal]:
    """The first and the last multiple of `step` within the bounds."""
    first = (low / step).to_integral_value(rounding="ROUND_CEILING")
    if gt and first * step == low:
        first += 1
    last = (high / step).to_integral_value(rounding="ROUND_FLOOR")
    if lt and last * step == high:
        last -= 1
    return {first * step, last * step}


@pinned(max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(grid=grids(), data=st.data())
def test_every_drawn_float_multiple_validates_and_the_search_tries_both_ends(
    grid: tuple[Decimal, Decimal, Decimal, bool, bool], data: st.DataObject
) -> None:
    """A float field with bounds and `multiple_of`: every value the schema strategy draws
    validates unfiltered, and the search tries the first and last multiples inside the bounds."""
    model = float_field(*grid)
    values = drawn_values(model, data)
    assert all(accepts(model, x) for x in values), values
    ends = site_bounds(model, values[0])  # (a bound the value holds is no change)
    assert {Decimal(repr(x)) for x in [*ends, values[0]]} >= nearest_multiples(*grid)
    assert all(accepts(model, x) for x in ends)


@pinned(max_examples=30, suppress_health_check=[HealthCheck.too_slow])
@given(places=st.integers(0, 4), grid=grids(), data=st.data())
def test_every_drawn_decimal_validates_and_the_search_tries_both_ends(
    places: int, grid: tuple[Decimal, Decimal, Decimal, bool, bool], data: st.DataObject
) -> None:
    """A `Decimal` field with bounds and `decimal_places`: every value drawn (as a JSON number
    or a string) validates unfiltered, and the search tries the extreme values with that many
    places inside the bounds."""
    step = Decimal(1).scaleb(-places)
    _, low, _, gt, lt = grid
    high = low + step * (grid[2] - low) / grid[0]  # as many of these steps as the grid's
    bounds = (low, high, gt, lt)
    model = decimal_field(places, *bounds)
    values = drawn_values(model, data)
    assert all(accepts(model, x) for x in values), values
    ends = site_bounds(model, values[0])  # (a bound the value holds is no change)
    assert {Decimal(str(x)) for x in [*ends, values[0]]} >= nearest_multiples(step, *bounds)
    assert all(accepts(model, x) for x in ends)


@pytest.mark.parametrize(
    "field",
    [
        Field(multiple_of=0.01),
        Field(gt=0, multiple_of=0.3),
        Field(le=-5, multiple_of=0.07),
        Field(ge=0, le=1e12, multiple_of=0.5),
    ],
    ids=["unbounded", "above-zero", "below-minus-five", "wide-dyadic"],
)
@pinned(max_examples=15)
@given(data=st.data())
def test_a_step_with_an_open_or_wide_range_draws_values_that_validate(
    field: Any, data: st.DataObject
) -> None:
    """A float step with a side left open, or a range wider than floats hold multiples of
    `0.01` in, still draws only values pydantic's `multiple_of` check accepts."""
    model = create_model("Priced", x=(float, field))
    values = drawn_values(model, data)
    assert all(accepts(model, x) for x in values), values


def test_the_kit_schema_notes_what_pydantic_leaves_out_of_a_decimal() -> None:
    """The kit's schema keeps a `Decimal`'s places, digits and exact bounds in both branches,
    in nested models and optional fields too; a float's schema is pydantic's."""

    class Line(BaseModel):
        price: Decimal = Field(ge=Decimal("0.10"), le=100, decimal_places=2, max_digits=5)
        rate: float = Field(ge=0, le=1, multiple_of=0.05)

    class Order(BaseModel):
        lines: list[Line]
        discount: Decimal | None = Field(default=None, decimal_places=1)

    schema = kit_schema(target_for(Order))
    price = schema["$defs"]["Line"]["properties"]["price"]["anyOf"]
    note = {"ge": "0.10", "le": "100", "decimal_places": 2, "max_digits": 5}
    assert [branch[DECIMAL] for branch in price] == [note, note]
    assert DECIMAL not in schema["$defs"]["Line"]["properties"]["rate"]
    assert (
        schema["$defs"]["Line"]["properties"]["rate"]
        == (Line.model_json_schema()["properties"]["rate"])
    )
    discount = schema["properties"]["discount"]["anyOf"]
    assert any(DECIMAL in str(branch) and "decimal_places" in str(branch) for branch in discount)


@pytest.mark.parametrize("kind", ["float", "decimal"])
def test_from_schema_reaches_both_ends_and_the_middle_of_a_stepped_range(kind: str) -> None:
    """`from_schema` finds values within a step of either bound and past the middle of a
    [0, 100] range in steps of 0.01, not the denormals pydantic's float tolerance lets by."""
    field = (
        (float, Field(ge=0, le=100, multiple_of=0.01))
        if kind == "float"
        else (Decimal, Field(ge=0, le=100, decimal_places=2))
    )
    model = create_model("Priced", x=field)
    quick = settings(database=None, derandomize=True, max_examples=250)
    for wanted in (lambda x: 0 < x <= 0.01, lambda x: x >= 99.99, lambda x: 50 <= x < 60):
        found = find(from_schema(model), lambda v, wanted=wanted: wanted(v.x), settings=quick)
        assert Decimal(str(found.x)) == Decimal(str(found.x)).quantize(Decimal("0.01"))


# --- check_pack on a correct pack ----------------------------------------------------------------


def _priced_pack(field: Any) -> ContractPack:
    line = create_model(
        "Line",
        sku=(str, Field(min_length=1, max_length=10)),
        price=field,
        qty=(int, Field(ge=1, le=10)),
    )

    @contract(fields=("price", "qty"))
    def cheap_bulk(value: Any) -> str | None:
        """Bulk lines (qty > 5) cost under 50."""
        return (
            "bulk lines (qty > 5) must cost under 50"
            if value.qty > 5 and value.price >= 50
            else None
        )

    golden = {"sku": "A", "price": "1.25", "qty": 2}
    return ContractPack(line, (cheap_bulk,), (golden,), name="priced")


@pytest.mark.parametrize(
    "field",
    [
        (float, Field(ge=0, le=100, multiple_of=0.01)),
        (float, Field(gt=0, lt=100, multiple_of=0.05)),
        (Decimal, Field(ge=0, le=100, decimal_places=2)),
        (Decimal, Field(ge=0, le=100, max_digits=5, decimal_places=2)),
        (Decimal, Field(ge=0, le=100, multiple_of=Decimal("0.25"))),
    ],
    ids=["float-cents", "float-exclusive", "decimal-places", "decimal-digits", "decimal-step"],
)
def test_check_pack_passes_a_correct_pack_with_a_stepped_price(field: Any) -> None:
    """A threshold rule over a price in cents (a float `multiple_of`, a `Decimal` with places)
    is broken alone by the kit: the pack passes, as it does without the step."""
    report = check_pack(_priced_pack(field), max_examples=12)
    assert report.violating["cheap_bulk"] > 0
    assert report.schema_inputs > 0
