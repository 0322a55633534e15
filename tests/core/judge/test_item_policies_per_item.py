"""Item fix rules judged per item: an item whose fixed form holds keeps its fix, an item whose
fixed form breaks another rule is re-asked alone, naming the rule that refused it; and after a
drop, a re-ask of the whole value names the list-level rule that fails and the items removed."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Flag, Healer, contract
from healjson.testing import ScriptedModel
from pinned import pinned


class L(BaseModel):
    sku: str


@contract(
    fields=("sku",),
    on_fail="fix",
    fix=lambda line: line.model_copy(update={"sku": line.sku.upper()}),
)
def upper(line: L) -> str | None:
    return "sku must be upper case" if line.sku != line.sku.upper() else None


@contract(fields=("sku",))
def not_x(line: L) -> str | None:
    return "sku X is retired" if line.sku == "X" else None


class Inv(BaseModel):
    lines: list[L]


@contract(
    fields=("sku",),
    on_fail="fix",
    items="lines",
    fix=lambda line: line.model_copy(update={"sku": line.sku.upper()}),
)
def upper_line(line: L) -> str | None:
    return "sku must be upper case" if line.sku != line.sku.upper() else None


@contract(fields=("sku",), items="lines")
def not_x_line(line: L) -> str | None:
    return "sku X is retired" if line.sku == "X" else None


def _answer(skus: list[str]) -> str:
    return json.dumps([{"sku": sku} for sku in skus])


def test_fixable_item_kept_and_only_the_refused_one_reasked_naming_its_rule() -> None:
    """The probe's repro: `b` is fixed locally, only `x` is re-asked, with `not_x` named."""
    model = ScriptedModel([_answer(["A", "b", "x"]), '{"sku": "Y"}'])
    outcome = Healer(list[L], item_contracts=[upper, not_x]).run(model, "list skus")
    assert outcome.ok
    assert ["A", "B", "Y"] == [line.sku for line in outcome.value]
    assert Flag.CONTRACT_FIXED in outcome.flags
    request = outcome.attempts[1].messages[-1]["content"]
    assert "1 of them ([2])" in request
    assert "sku X is retired" in request
    assert '`[1].sku` = "b"' not in request


def test_items_path_refuses_only_the_item_whose_fix_breaks_a_rule() -> None:
    """With `items="lines"`, only `lines[2]` fails, once as answered and once as fixed."""
    text = '{"lines": [{"sku": "A"}, {"sku": "b"}, {"sku": "x"}]}'
    outcome = healjson.validate(text, Inv, contracts=[upper_line, not_x_line])
    assert not outcome.ok
    assert {"lines[2].sku"} == {d.path for d in outcome.errors}
    assert "not_x_line" in {d.rule for d in outcome.errors}


def test_list_rule_broken_by_a_drop_is_named_and_the_dropped_item_said_removed() -> None:
    """After a drop, the re-ask names the list-level rule and says which item is removed."""

    class Line(BaseModel):
        sku: str
        qty: int

    @contract(fields=("qty",), on_fail="drop")
    def positive(line: Line) -> str | None:
        return "qty must be positive" if line.qty <= 0 else None

    @contract(fields=())
    def needs_two(lines: list[Line]) -> str | None:
        return "the list needs at least 2 lines" if len(lines) < 2 else None

    first = '[{"sku": "A", "qty": 0}, {"sku": "B", "qty": 1}]'
    second = '[{"sku": "B", "qty": 1}, {"sku": "C", "qty": 1}]'
    healer = Healer(list[Line], item_contracts=[positive], contracts=[needs_two])
    outcome = healer.run(ScriptedModel([first, second]), "list")
    assert outcome.ok
    request = outcome.attempts[1].messages[-1]["content"]
    assert "the list needs at least 2 lines" in request
    assert "qty must be positive" not in request
    assert "The item at [0] breaks a rule that removes it" in request


_KINDS = st.lists(st.sampled_from(["fine", "fixable", "refused"]), min_size=2, max_size=8)
_SKU = {"fine": "A{}", "fixable": "b{}", "refused": "x"}


@pinned(max_examples=30)
@given(kinds=_KINDS)
def test_fixes_exactly_the_fixable_items_and_reasks_exactly_the_refused(kinds: list[str]) -> None:
    """Per item: fixable ones fixed, refused ones re-asked naming `not_x`, no item lost or made."""
    skus = [_SKU[kind].format(index) for index, kind in enumerate(kinds)]
    refused = [index for index, kind in enumerate(kinds) if kind == "refused"]
    replies = [_answer(skus)]
    if refused:
        replies.append(json.dumps([{"sku": f"R{index}"} for index in refused]))
    outcome = Healer(list[L], item_contracts=[upper, not_x]).run(ScriptedModel(replies), "list")
    expected = [
        f"R{i}" if kind == "refused" else sku.upper()
        for i, (kind, sku) in enumerate(zip(kinds, skus, strict=True))
    ]
    assert outcome.ok, outcome
    assert expected == [line.sku for line in outcome.value]
    assert ("fixable" in kinds) == (Flag.CONTRACT_FIXED in outcome.flags)
    if not refused:
        assert 1 == outcome.calls
        return
    assert 2 == outcome.calls
    diagnostics = outcome.attempts[0].diagnostics
    assert {f"[{index}].sku" for index in refused} == {d.path for d in diagnostics}
    assert {f"[{index}].sku" for index in refused} == {
        d.path for d in diagnostics if d.rule == "not_x"
    }


class Line(BaseModel):
    sku: str
    qty: int


@contract(fields=("qty",), on_fail="drop")
def not_bulk(line: Line) -> str | None:
    """A bulk line is dropped."""
    return "bulk lines are dropped" if line.qty >= 100 else None


@contract(fields=("qty",))
def positive_qty(line: Line) -> str | None:
    """A line's quantity must be positive (asked again)."""
    return None if line.qty > 0 else "qty must be positive"


def test_after_a_drop_a_reasked_items_values_are_named_at_their_places_as_answered() -> None:
    """A dropped item before a refused one: the repair names the refused item's field at its
    place in the answer, with its own value, never another item's path beside it."""
    healer = Healer(list[Line], item_contracts=[not_bulk, positive_qty])
    first = '[{"sku": "A", "qty": 500}, {"sku": "B", "qty": 0}]'
    outcome = healer.run(ScriptedModel([first, '[{"sku": "B", "qty": 3}]']), "p")
    assert outcome.ok
    text = outcome.attempts[1].prompt.render()  # type: ignore[union-attr]
    assert "`[1].qty` = 0" in text
    assert "also involved" not in text  # `[0].qty` = 0 was the corrected list's path


@contract(
    fields=("sku",),
    on_fail="fix",
    fix=lambda line: line.model_copy(update={"sku": line.sku.upper()}),
)
def upper_sku(line: Line) -> str | None:
    """A lower-case sku is fixed to upper case."""
    return "sku must be upper case" if line.sku != line.sku.upper() else None


@contract(fields=("sku",))
def not_retired(line: Line) -> str | None:
    """The sku X is retired (asked again)."""
    return "sku X is retired" if line.sku == "X" else None


def test_after_a_drop_a_refused_fix_is_named_at_its_place_as_answered() -> None:
    """A dropped item before an item whose fix another rule refuses: the refusal names the
    item's field at its place in the answer, never the corrected list's path beside it."""
    healer = Healer(list[Line], item_contracts=[not_bulk, upper_sku, not_retired])
    first = '[{"sku": "A", "qty": 500}, {"sku": "x", "qty": 1}]'
    outcome = healer.run(ScriptedModel([first, '[{"sku": "B", "qty": 1}]']), "p")
    assert outcome.ok
    text = outcome.attempts[1].prompt.render()  # type: ignore[union-attr]
    assert "`[1].sku`" in text
    assert "`[0].sku`" not in text
