"""`changed_fields` compares the first answer and the healed value over both their fields: a
field the healed value left at its default is changed where the first answer said otherwise
(a repair that left it out reset it), at any depth, in lists too; a field both left out, or
one the first answer gave its default, is no change."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel

from healjson import Healed, Healer, Violation, contract
from healjson._core.judge.policies import answer_data
from healjson._core.outcome.changes import changed_paths
from healjson._core.target.target import target_for
from healjson.testing import ScriptedModel
from pinned import pinned


class Line(BaseModel):
    sku: str
    qty: int = 1


class Ship(BaseModel):
    city: str = ""
    express: bool = False


class Order(BaseModel):
    qty: int
    discount_pct: int = 0
    ship: Ship = Ship()
    lines: list[Line] = []


def _optional(entries: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """A JSON object holding any subset of `entries`."""
    return st.fixed_dictionaries({}, optional=entries)


LINES = st.lists(
    st.fixed_dictionaries({"sku": st.sampled_from("ab")}, optional={"qty": st.integers(1, 2)}),
    max_size=2,
)
ANSWERS = st.fixed_dictionaries(
    {"qty": st.integers(0, 1)},
    optional={
        "discount_pct": st.integers(0, 1),
        "ship": _optional({"city": st.sampled_from(["", "x"]), "express": st.booleans()}),
        "lines": LINES,
    },
)


def _expected(first: Any, final: Any, old: Any, new: Any, path: str = "") -> set[str]:
    """The oracle, over validated values: a field the final answer set and the first left out
    is changed; any other field either answer set is changed where the two validated values
    differ (the first answer's value read in full, its defaults included)."""
    if isinstance(old, list) or isinstance(new, list):
        if len(old) != len(new):
            return {path}
        return set().union(
            *(
                _expected(
                    first[i] if first is not None else None,
                    final[i] if final is not None else None,
                    old[i],
                    new[i],
                    f"{path}[{i}]",
                )
                for i in range(len(new))
            )
        )
    if not isinstance(new, dict):
        return set() if (old, type(old)) == (new, type(new)) else {path}
    out: set[str] = set()
    for key in new:
        here = f"{path}.{key}" if path else key
        said_first = first is not None and key in first
        said_final = final is not None and key in final
        if said_final and not said_first:
            out.add(here)
        elif said_first:
            sub_final = final[key] if said_final else None
            out |= _expected(first[key], sub_final, old[key], new[key], here)
    return out


@pinned(max_examples=150)
@given(first=ANSWERS, final=ANSWERS)
@example(first={"qty": 9, "discount_pct": 30}, final={"qty": 1})
@example(first={"qty": 1, "ship": {"city": "x"}}, final={"qty": 1})
@example(
    first={"qty": 1, "lines": [{"sku": "a", "qty": 2}]}, final={"qty": 1, "lines": [{"sku": "a"}]}
)
@example(first={"qty": 1, "lines": [{"sku": "a"}]}, final={"qty": 1})
def test_a_field_left_at_its_default_is_compared_with_what_the_first_answer_said(
    first: dict[str, Any], final: dict[str, Any]
) -> None:
    """For any first and final answer, each leaving out any fields at any depth, the changed
    paths are exactly the oracle's: a field the final value left at its default is listed when
    the first answer said another value, and never when both left it out."""
    old, new = Order.model_validate(first), Order.model_validate(final)
    wanted = _expected(first, final, old.model_dump(mode="json"), new.model_dump(mode="json"))

    assert wanted == set(changed_paths(first, answer_data(target_for(Order), new)))


@contract(fields=("qty",))
def qty_small(order: Order) -> Violation | None:
    """`qty` must be under 5."""
    return Violation("qty must be < 5") if order.qty >= 5 else None


def test_a_repair_that_resets_a_field_to_its_default_lists_it() -> None:
    """The probe's repro: a repair that leaves out `discount_pct: 30` (so it is reset to its
    default 0) lists it beside `qty`."""
    model = ScriptedModel(['{"qty": 9, "discount_pct": 30}', '{"qty": 1}'])

    outcome = Healer(Order, contracts=[qty_small]).run(model, "order")

    assert isinstance(outcome, Healed)
    assert 0 == outcome.value.discount_pct
    assert ("qty", "discount_pct") == outcome.changed_fields


def test_a_repair_that_resets_a_nested_field_lists_it_and_not_the_defaults_both_left() -> None:
    """A repair that leaves out the nested `ship.city` and an item's `qty` the first answer
    gave lists those paths, and no field both answers left at its default."""
    first = '{"qty": 9, "ship": {"city": "x"}, "lines": [{"sku": "a", "qty": 2}]}'
    model = ScriptedModel([first, '{"qty": 1, "lines": [{"sku": "a"}]}'])

    outcome = Healer(Order, contracts=[qty_small]).run(model, "order")

    assert isinstance(outcome, Healed)
    assert ("qty", "ship.city", "lines[0].qty") == outcome.changed_fields


def test_a_fix_that_resets_a_field_to_its_default_lists_it() -> None:
    """A rule's fix that builds a new value without `discount_pct` (so at its default) lists it
    beside the `qty` it capped."""

    @contract(fields=("qty",), on_fail="fix", fix=lambda order: Order(qty=4))
    def capped(order: Order) -> Violation | None:
        return Violation("qty must be < 5") if order.qty >= 5 else None

    model = ScriptedModel(['{"qty": 9, "discount_pct": 30}'])

    outcome = Healer(Order, contracts=[capped]).run(model, "order")

    assert isinstance(outcome, Healed)
    assert ("qty", "discount_pct") == outcome.changed_fields
