"""`changed_fields` when the rules' policies change the first answer: a fix (whole-value or
per item) or a drop on the model's first answer lists the fields whose value differs from what
that answer said, exactly those; a first answer accepted as it stands lists none."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel

from healjson import Healed, Healer, Violation, contract
from healjson.testing import ScriptedModel
from pinned import pinned


class Order(BaseModel):
    customer: str
    qty: int
    note: str = ""
    city: str = "Paris"


class Line(BaseModel):
    sku: str
    qty: int


class Invoice(BaseModel):
    number: str
    lines: list[Line]


def healed(healer: Healer[Any], answer: Any) -> Healed[Any]:
    """The outcome of one scripted run whose model answers `answer` (as JSON)."""
    model = ScriptedModel([json.dumps(answer)])
    outcome = healer.run(model, "q")
    assert isinstance(outcome, Healed)
    assert 1 == len(model.calls)
    return outcome


def test_a_fix_that_also_changes_another_field_shows_it_on_the_first_answer() -> None:
    """A fix of `qty` that quietly rewrites `customer` lists both (it listed none before); an
    answer the rule accepts as it stands lists none."""

    @contract(
        fields=("qty",),
        on_fail="fix",
        fix=lambda o: o.model_copy(update={"qty": 10, "customer": "Mallory"}),
    )
    def at_most_10(order: Order) -> Violation | None:
        return Violation("qty must be at most 10") if order.qty > 10 else None

    healer = Healer(Order, contracts=[at_most_10])
    assert ("customer", "qty") == healed(healer, {"customer": "Ada", "qty": 12}).changed_fields
    assert () == healed(healer, {"customer": "Ada", "qty": 3}).changed_fields  # as it stood


def test_an_item_fix_and_a_drop_are_listed_by_their_paths() -> None:
    """An item fix lists `lines[1].sku`; a drop lists the list it shortened."""

    @contract(
        fields=("sku",),
        on_fail="fix",
        items="lines",
        fix=lambda line: line.model_copy(update={"sku": line.sku.upper()}),
    )
    def upper(line: Line) -> Violation | None:
        return None if line.sku.isupper() else Violation("sku is upper case")

    @contract(fields=("qty",), on_fail="drop", items="lines")
    def positive(line: Line) -> Violation | None:
        return None if line.qty > 0 else Violation("qty is at least 1")

    lines = [{"sku": "A", "qty": 1}, {"sku": "b", "qty": 2}]
    fixed = healed(Healer(Invoice, contracts=[upper]), {"number": "1", "lines": lines})
    assert ("lines[1].sku",) == fixed.changed_fields
    lines = [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 0}]
    dropped = healed(Healer(Invoice, contracts=[positive]), {"number": "1", "lines": lines})
    assert ("lines",) == dropped.changed_fields


FIELDS = ("customer", "qty", "note", "city")


@pinned(max_examples=30)
@given(
    st.sets(st.sampled_from(("customer", "note", "city"))),
    st.sets(st.sampled_from(("note", "city"))),
)
@example({"customer"}, set())
@example(set(), {"note", "city"})
def test_changed_fields_lists_exactly_the_fields_a_fix_changed(
    changed: set[str], answered: set[str]
) -> None:
    """For any subset of fields a fix of `qty` changes besides it (the defaulted ones answered
    or not), on the first answer, `changed_fields` lists exactly `qty` and that subset."""
    first: dict[str, Any] = {"customer": "Ada", "qty": 12}
    first |= {name: f"{name} as answered" for name in answered}
    updates = {name: f"{name} changed" for name in changed}

    @contract(
        fields=("qty",), on_fail="fix", fix=lambda o: o.model_copy(update={**updates, "qty": 0})
    )
    def flagged(order: Order) -> Violation | None:
        return Violation("qty is flagged") if order.qty == 12 else None

    outcome = healed(Healer(Order, contracts=[flagged]), first)
    expected = changed | {"qty"}
    assert [name for name in FIELDS if name in expected] == list(outcome.changed_fields)
