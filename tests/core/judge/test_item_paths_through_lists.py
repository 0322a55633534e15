"""An `items=` path through lists: `items="invoices.lines"` on an order whose `invoices` is a
list judges every line of every invoice (each at its place, `invoices[0].lines[1]`), under every
policy; a path that names no field, at any segment, is refused where the rule is given."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Healed, Healer, Violation, contract
from healjson.testing import ScriptedModel
from pinned import pinned


class Line(BaseModel):
    sku: str
    qty: int


class Invoice(BaseModel):
    lines: list[Line]


class Order(BaseModel):
    invoices: list[Invoice]


def positive(on_fail: Any = "drop", items: str = "invoices.lines", **more: Any) -> Any:
    """The rule "a line orders at least one unit" over the lines at `items`."""

    @contract(fields=("qty",), on_fail=on_fail, items=items, **more)
    def positive_qty(line: Line) -> Violation | None:
        return None if line.qty > 0 else Violation("qty must be at least 1")

    return positive_qty


def order(*invoices: list[int]) -> str:
    """An order's JSON: one invoice per list of quantities."""
    lines = [[{"sku": f"s{i}", "qty": qty} for i, qty in enumerate(qs)] for qs in invoices]
    return json.dumps({"invoices": [{"lines": each} for each in lines]})


def test_a_line_inside_a_list_of_invoices_is_judged_and_dropped() -> None:
    """The line with qty -5 of the first invoice is dropped (it came back Healed before)."""
    outcome = healjson.validate(order([1, -5], [2]), Order, contracts=[positive()])
    assert isinstance(outcome, Healed)
    assert [[1], [2]] == [[ln.qty for ln in inv.lines] for inv in outcome.value.invoices]
    (gone,) = outcome.dropped
    assert ("invoices[0].lines", 1, "invoices[0].lines[1]") == (
        gone.list_path,
        gone.index,
        gone.where,
    )
    assert "invoices[0].lines[1].qty" == gone.diagnostics[0].path


def test_a_warning_names_the_line_of_its_invoice() -> None:
    """A warn rule keeps the value and locates the violation under its invoice and line."""
    outcome = healjson.validate(order([1], [3, 0]), Order, contracts=[positive("warn")])
    assert isinstance(outcome, Healed)
    assert ["invoices[1].lines[1].qty"] == [warning.path for warning in outcome.warnings]


def test_an_item_fix_corrects_each_line_in_place() -> None:
    """A fix over lines corrects the failing line of every invoice, and nothing else."""
    rule = positive("fix", fix=lambda line: line.model_copy(update={"qty": 1}))
    outcome = healjson.validate(order([0, 2], [-1]), Order, contracts=[rule])
    assert isinstance(outcome, Healed)
    assert [[1, 2], [1]] == [[ln.qty for ln in inv.lines] for inv in outcome.value.invoices]
    assert ("positive_qty",) == outcome.fixed


def test_a_reask_names_the_line_of_its_invoice_to_the_model() -> None:
    """A reask rule asks the model again, its repair naming `invoices[0].lines[1].qty`."""
    model = ScriptedModel([order([1, -5]), order([1, 5])])
    outcome = Healer(Order, contracts=[positive("reask")]).run(model, "bill it")
    assert isinstance(outcome, Healed)
    assert 2 == len(model.calls)
    assert "invoices[0].lines[1].qty" in model.calls[1].last_user_text


def test_a_list_target_asks_again_for_the_invoice_whose_line_failed_alone() -> None:
    """On a `list[Invoice]` target, `items="lines"` judges the lines of each invoice, and the
    per-item repair asks for the failing invoice only."""
    bad = [{"lines": [{"sku": "a", "qty": 1}]}, {"lines": [{"sku": "b", "qty": 0}]}]
    good = [{"lines": [{"sku": "b", "qty": 4}]}]
    model = ScriptedModel([json.dumps(bad), json.dumps(good)])
    healer = Healer(list[Invoice], contracts=[positive("reask", items="lines")])
    outcome = healer.run(model, "bill it")
    assert isinstance(outcome, Healed)
    assert [1, 4] == [inv.lines[0].qty for inv in outcome.value]
    prompt = outcome.attempts[1].prompt
    assert prompt is not None
    assert (1,) == prompt.items


class Shelf(BaseModel):
    rows: list[list[Line]]


class Store(BaseModel):
    shelves: list[Shelf]


def test_lists_of_lists_are_gone_through_too() -> None:
    """`items="shelves.rows"` on shelves whose rows are lists of lines judges each row (a
    list), at `shelves[i].rows[j]`."""

    @contract(items="shelves.rows", on_fail="drop")
    def not_empty(row: list[Line]) -> Violation | None:
        return None if row else Violation("a row holds a line")

    text = json.dumps({"shelves": [{"rows": [[{"sku": "a", "qty": 1}], []]}]})
    outcome = healjson.validate(text, Store, contracts=[not_empty])
    assert isinstance(outcome, Healed)
    assert ["shelves[0].rows[1]"] == [gone.where for gone in outcome.dropped]


@pytest.mark.parametrize(
    ("items", "segment"),
    [
        ("nosuch", "'nosuch'"),
        ("invoices.nosuch", "'nosuch'"),
        ("invoices.lines.sku", "which is no list"),
        ("invoices.lines.qty.more", "'more'"),
    ],
)
@pytest.mark.parametrize("entry", ["Healer", "validate", "heal", "wrap_callable"])
def test_a_path_that_names_no_field_is_refused_by_every_entry_point(
    items: str, segment: str, entry: str
) -> None:
    """At any segment, a path that names no field (or no list) raises ValueError naming it,
    from `Healer`, `validate`, `@heal` and a wrapped client alike."""
    rule = positive(items=items)
    messages = [{"role": "user", "content": "q"}]
    build = {
        "Healer": lambda: Healer(Order, contracts=[rule]),
        "validate": lambda: healjson.validate(order([1]), Order, contracts=[rule]),
        "heal": lambda: healjson.heal(Order, contracts=[rule])(lambda messages: order([1])),
        "wrap_callable": lambda: healjson.wrap_callable(lambda **_: order([1]))(
            model="m", messages=messages, response_model=Order, contracts=[rule]
        ),
    }[entry]
    with pytest.raises(ValueError, match=segment):
        build()


def test_an_item_field_the_items_lack_is_refused() -> None:
    """A rule over lines that declares a field lines lack is refused as an unknown field is."""

    @contract(fields=("qtty",), items="invoices.lines")
    def rule(line: Line) -> None:
        return None

    with pytest.raises(ValueError, match="names field 'qtty'"):
        Healer(Order, contracts=[rule])


class Deep(BaseModel):
    lines: list[Line] = []
    nested: list[Deep] = []


def deep_data(draw: Any, depth: int) -> dict[str, Any]:
    """A `Deep` value: lines with quantities in -2..2, and nested values down to `depth`."""
    lines = draw(st.lists(st.integers(-2, 2), max_size=3))
    nested = [] if depth == 0 else draw(st.lists(st.integers(0, 1), max_size=2))
    return {
        "lines": [{"sku": f"s{i}", "qty": qty} for i, qty in enumerate(lines)],
        "nested": [deep_data(draw, depth - 1) for _ in nested],
    }


def failing_places(data: dict[str, Any], path: list[str], loc: str = "") -> list[str]:
    """The places of the lines with qty <= 0 that `path` reaches, in the value's order."""
    head, rest = path[0], path[1:]
    node = data[head]
    here = f"{loc}.{head}" if loc else head
    if not rest:
        return [f"{here}[{i}]" for i, line in enumerate(node) if line["qty"] <= 0]
    return [p for i, item in enumerate(node) for p in failing_places(item, rest, f"{here}[{i}]")]


@pinned(max_examples=30)
@given(st.data(), st.integers(0, 3))
@example(None, 1)
def test_an_item_rule_at_any_depth_judges_every_item(data: Any, depth: int) -> None:
    """For any nesting of lists of objects, `items="nested.nested...lines"` at any depth
    warns for exactly the lines at that depth with qty <= 0, each at its place."""
    value = (
        {"lines": [], "nested": [{"lines": [{"sku": "a", "qty": 0}], "nested": []}]}
        if data is None
        else deep_data(data.draw, 3)
    )
    path = ["nested"] * depth + ["lines"]
    rule = positive("warn", items=".".join(path))
    outcome = healjson.validate(json.dumps(value), Deep, contracts=[rule])
    assert isinstance(outcome, Healed)
    expected = failing_places(value, path)
    assert [f"{place}.qty" for place in expected] == [w.path for w in outcome.warnings]
