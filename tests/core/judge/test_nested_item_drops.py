"""Rules over the items of a list inside the answer (an invoice's lines):
`@contract(fields=(...), items="lines")` on `def rule(line: Line)` judges each line alone, and
`on_fail="drop"` removes the lines that break it (`"fix"` corrects each), locally, the value
checked again; a list left too short is asked for again."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

import healjson
from healjson import Degraded, Flag, Healed, Healer, HealPolicy, Violation, contract
from healjson.testing import ScriptedModel


class Line(BaseModel):
    sku: str
    qty: int


class Invoice(BaseModel):
    number: str
    lines: list[Line] = Field(min_length=1)


class Order(BaseModel):
    invoice: Invoice


@contract(fields=("qty",), on_fail="drop", items="lines")
def positive_qty(line: Line) -> Violation | None:
    """A line orders at least one unit."""
    return None if line.qty > 0 else Violation("qty must be at least 1")


def invoice(*quantities: int) -> dict[str, Any]:
    lines = [{"sku": f"s{index}", "qty": qty} for index, qty in enumerate(quantities)]
    return {"number": "INV-1", "lines": lines}


def test_lines_that_break_a_drop_rule_are_removed_from_the_invoice() -> None:
    """The failing line is dropped from `lines` with no model call; `dropped` says which and
    where (`lines[1]`), and the outcome is flagged `items_dropped`."""
    model = ScriptedModel([json.dumps(invoice(2, 0, 5))])
    outcome = Healer(Invoice, contracts=[positive_qty]).run(model, "bill it")
    assert isinstance(outcome, Healed)
    assert [2, 5] == [line.qty for line in outcome.value.lines]
    assert 1 == len(model.calls)
    (gone,) = outcome.dropped
    assert ("lines", 1, "lines[1]") == (gone.list_path, gone.index, gone.where)
    assert {"sku": "s1", "qty": 0} == gone.item
    assert "lines[1].qty" == gone.diagnostics[0].path
    assert Flag.ITEMS_DROPPED in outcome.flags


def test_a_dotted_path_reaches_a_list_deeper_in() -> None:
    """`items="invoice.lines"` judges the lines of an order's invoice."""

    @contract(fields=("qty",), on_fail="drop", items="invoice.lines")
    def positive(line: Line) -> Violation | None:
        return None if line.qty > 0 else Violation("qty must be at least 1")

    text = json.dumps({"invoice": invoice(0, 3)})
    outcome = healjson.validate(text, Order, contracts=[positive])
    assert isinstance(outcome, Healed)
    assert [3] == [line.qty for line in outcome.value.invoice.lines]
    assert "invoice.lines[0]" == outcome.dropped[0].where


def test_an_item_fix_corrects_the_lines_in_place() -> None:
    """`on_fail="fix"` with `items=` corrects each failing line (`fix`: the line -> the line)."""

    @contract(
        fields=("sku",), on_fail="fix", items="lines", fix=lambda line: line.model_copy(
            update={"sku": line.sku.upper()}
        ),
    )  # fmt: skip
    def upper_sku(line: Line) -> Violation | None:
        return None if line.sku.isupper() else Violation("sku must be upper case")

    outcome = healjson.validate(json.dumps(invoice(1, 2)), Invoice, contracts=[upper_sku])
    assert isinstance(outcome, Healed)
    assert ["S0", "S1"] == [line.sku for line in outcome.value.lines]
    assert ("upper_sku",) == outcome.fixed


def test_dropping_every_line_is_asked_again() -> None:
    """Dropping leaves the list checked again: an invoice left with no line breaks
    `min_length=1`, so the model is asked again (and its better answer heals)."""
    model = ScriptedModel([json.dumps(invoice(0)), json.dumps(invoice(4))])
    outcome = Healer(Invoice, contracts=[positive_qty]).run(model, "bill it")
    assert isinstance(outcome, Healed)
    assert 2 == len(model.calls)
    assert "lines[0].qty" in model.calls[1].last_user_text


def test_a_json_schema_target_drops_from_its_list_too() -> None:
    """The same rule over a JSON Schema target's plain data."""
    schema = {
        "type": "object",
        "properties": {"lines": {"type": "array", "items": {"type": "object"}}},
        "required": ["lines"],
    }

    @contract(fields=("qty",), on_fail="drop", items="lines")
    def positive(line: dict[str, Any]) -> Violation | None:
        return None if line.get("qty", 0) > 0 else Violation("qty must be at least 1")

    outcome = healjson.validate(json.dumps(invoice(0, 7)), schema, contracts=[positive])
    assert isinstance(outcome, Healed)
    assert [{"sku": "s1", "qty": 7}] == outcome.value["lines"]


def test_the_rule_over_items_runs_over_the_whole_value_when_called() -> None:
    """Called on an invoice the rule judges each line; its function over one line is
    `rule.check.__wrapped__`."""
    found = positive_qty(Invoice.model_validate(invoice(1, 0)))
    assert ["lines[1].qty"] == [violation.path for violation in found]
    assert positive_qty.check.__wrapped__(Line(sku="x", qty=0)) is not None


def test_the_records_round_trip_the_list_path() -> None:
    """`to_dict` keeps where the dropped line was; `outcome_from_dict` reads it back."""
    outcome = healjson.validate(json.dumps(invoice(0, 1)), Invoice, contracts=[positive_qty])
    data = outcome.to_dict()
    assert "lines" == data["dropped"][0]["list_path"]
    assert outcome.dropped == healjson.outcome_from_dict(data, Invoice).dropped


@pytest.mark.parametrize(
    ("items", "error"),
    [(5, "items= names the list"), ("lines..x", "dotted path"), ("", "dotted path")],
)
def test_an_items_path_that_is_no_path_is_refused_where_it_is_written(
    items: Any, error: str
) -> None:
    """`items=` must be a field name or a dotted path of names."""
    with pytest.raises(TypeError, match=error):
        contract(fields=("qty",), on_fail="drop", items=items)


def test_a_rule_over_items_is_not_an_item_contract_of_a_list_target() -> None:
    """A rule that names its list already is refused as `item_contracts=` (where the list is
    the value itself), saying where it goes."""
    with pytest.raises(TypeError, match="give it in contracts="):
        Healer(list[Line], item_contracts=[positive_qty])


def test_a_path_whose_head_is_no_field_is_refused_by_the_healer() -> None:
    """The list's field must be one of the target's (as for any rule's fields)."""

    @contract(fields=("qty",), on_fail="drop", items="rows")
    def positive(line: Line) -> Violation | None:
        return None

    with pytest.raises(ValueError, match="names field 'rows"):
        Healer(Invoice, contracts=[positive])


@settings(max_examples=40, deadline=None, derandomize=True)
@given(st.lists(st.integers(min_value=-3, max_value=3), max_size=8))
@example([0])
@example([1, 0, 1, 0])
def test_exactly_the_failing_lines_are_dropped(quantities: list[int]) -> None:
    """For any invoice, the healed lines are the ones with qty >= 1, in order, the dropped
    indices are the others; an invoice with none left degrades (one attempt)."""
    outcome = healjson.validate(json.dumps(invoice(*quantities)), Invoice, contracts=[positive_qty])
    kept = [qty for qty in quantities if qty > 0]
    if not kept:
        assert isinstance(outcome, Degraded)
        return
    assert isinstance(outcome, Healed)
    assert kept == [line.qty for line in outcome.value.lines]
    gone = [index for index, qty in enumerate(quantities) if qty <= 0]
    assert gone == [item.index for item in outcome.dropped]
    assert all(item.list_path == "lines" for item in outcome.dropped)


def test_a_drop_rule_keeps_the_policy_default_of_one_repair_per_attempt() -> None:
    """With `max_attempts=1` a list left too short degrades as `invalid_output`."""
    outcome = Healer(Invoice, contracts=[positive_qty], policy=HealPolicy(max_attempts=1)).run(
        ScriptedModel([json.dumps(invoice(-1))]), "bill it"
    )
    assert isinstance(outcome, Degraded)
    assert "invalid_output" == outcome.reason
