"""The answer to a per-item repair is read as any answer to that request would be (L1 against
the list target: the envelope the request forced, a lone object for one item, a fence, a tool
call's arguments), then spliced back into the list; an answer that cannot be spliced never
replaces the accepted items: the list as it stood is judged again and the same items asked for
again, saying what the answer was."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from healjson import (
    Flag,
    Healed,
    Healer,
    HealPolicy,
    Strategy,
    Violation,
    contract,
    outcome_from_dict,
)
from healjson._core.wire.reply import Reply, ToolCall
from healjson.testing import ScriptedModel
from pinned import pinned


class Line(BaseModel):
    sku: str
    qty: int = Field(ge=1)


def lines(*qtys: int) -> list[dict[str, Any]]:
    return [{"sku": chr(ord("A") + i), "qty": q} for i, q in enumerate(qtys)]


def healed(outcome: Any) -> Healed[Any]:
    assert isinstance(outcome, Healed), outcome
    return outcome


def skus(outcome: Any) -> list[tuple[str, int]]:
    return [(line.sku, line.qty) for line in healed(outcome).value]


FIXED_B = {"sku": "B", "qty": 2}


def test_the_envelope_and_a_lone_object_are_spliced_into_the_list() -> None:
    """The strict format's `{"value": [...]}`, a `{"items": [...]}` wrapper, a lone object for
    the one item asked for and a fenced array each repair item [1] in place, A and C kept."""
    answers = {
        json.dumps({"value": [FIXED_B]}): Flag.UNWRAPPED,
        json.dumps({"items": [FIXED_B]}): Flag.UNWRAPPED,
        json.dumps(FIXED_B): Flag.LISTED,
        f"Here it is:\n```json\n{json.dumps([FIXED_B])}\n```": Flag.CODE_FENCE,
    }
    for answer, flag in answers.items():
        model = ScriptedModel([json.dumps(lines(1, 0, 3)), answer])
        outcome = Healer(list[Line]).run(model, "lines")
        assert [("A", 1), ("B", 2), ("C", 3)] == skus(outcome), answer
        repair = outcome.attempts[1]
        assert Strategy.ITEMS is repair.strategy
        assert {flag, Flag.ITEMS_MERGED} <= set(repair.flags), answer
        assert ("[1].qty",) == outcome.changed_fields


def test_a_tool_calls_arguments_are_read_as_the_answer() -> None:
    """An answer in healjson's own tool call (its arguments in the envelope) is spliced too."""
    answers = [json.dumps(lines(1, 0, 3)), json.dumps({"value": [FIXED_B]})]
    replies = [
        Reply(None, "tool_calls", tool_calls=(ToolCall("list_Line", arguments),))
        for arguments in answers
    ]
    outcome = Healer(list[Line]).run(lambda messages, **_: replies.pop(0), "lines")
    assert [("A", 1), ("B", 2), ("C", 3)] == skus(outcome)


def test_an_item_still_failing_in_an_envelope_is_spliced_and_asked_for_again() -> None:
    """An envelope around an item that still fails its schema is read as the request's shape:
    spliced in place, and that item alone is asked for again."""
    still = json.dumps({"items": [{"sku": "B", "qty": "many"}]})
    model = ScriptedModel([json.dumps(lines(1, 0, 3)), still, json.dumps([FIXED_B])])
    outcome = Healer(list[Line], policy=HealPolicy(max_attempts=3)).run(model, "lines")
    assert [("A", 1), ("B", 2), ("C", 3)] == skus(outcome)
    second = outcome.attempts[1]
    assert {Flag.UNWRAPPED, Flag.ITEMS_MERGED} <= set(second.flags)
    assert ["[1].qty"] == [d.path for d in second.diagnostics]
    asked = model.calls[2].messages[-1]["content"]
    assert "1 of them ([1]) failed" in asked
    assert json.loads(model.calls[2].messages[-2]["content"])[0] == {"sku": "A", "qty": 1}


def test_an_answer_that_cannot_be_spliced_never_replaces_the_accepted_items() -> None:
    """An array of another length than asked (not the whole list) and an answer with no JSON
    replace nothing: the list as it stood is judged again, with a diagnostic on the first item
    asked for saying what the answer was, and the same items are asked for again."""
    for wrong, said in (
        (json.dumps([FIXED_B]), "held 1 item"),
        ("sorry, I cannot", "could not be read"),
    ):
        fixed = json.dumps([FIXED_B, {"sku": "D", "qty": 4}])
        model = ScriptedModel([json.dumps(lines(1, 0, 3, 0)), wrong, fixed])
        outcome = Healer(list[Line], policy=HealPolicy(max_attempts=3)).run(model, "lines")
        assert [("A", 1), ("B", 2), ("C", 3), ("D", 4)] == skus(outcome), wrong
        second = outcome.attempts[1]
        assert Flag.ITEMS_MERGED not in second.flags
        note = second.diagnostics[0]
        assert "[1]" == note.path
        assert said in note.constraint
        assert "nothing in the list was replaced" in note.constraint
        asked = model.calls[2].messages[-1]["content"]
        assert "2 of them ([1], [3]) failed" in asked
        assert said in asked
        assert len(json.loads(model.calls[2].messages[-2]["content"])) == 4  # the list quoted


def test_an_answer_that_cannot_be_spliced_on_the_last_attempt_degrades_with_the_list() -> None:
    """When the attempts run out on an answer that cannot be spliced, the outcome degrades
    with the list as it stood as its partial data, never the answer alone."""
    model = ScriptedModel([json.dumps(lines(1, 0, 3)), json.dumps([FIXED_B, FIXED_B])])
    outcome = Healer(list[Line], policy=HealPolicy(max_attempts=2)).run(model, "lines")
    assert not outcome.ok
    assert lines(1, 0, 3) == outcome.partial  # type: ignore[union-attr]


def test_the_whole_list_again_in_an_envelope_is_judged_as_the_list() -> None:
    """An envelope holding as many items as the whole list is the whole list again, read as the
    list (an item still wrong in it is asked for alone)."""
    again = json.dumps({"value": lines(1, 2, 0)})
    model = ScriptedModel([json.dumps(lines(1, 0, 3)), again, json.dumps([{"sku": "C", "qty": 3}])])
    outcome = Healer(list[Line], policy=HealPolicy(max_attempts=3)).run(model, "lines")
    assert [("A", 1), ("B", 2), ("C", 3)] == skus(outcome)
    assert ["[2].qty"] == [d.path for d in outcome.attempts[1].diagnostics]
    assert Strategy.ITEMS is outcome.attempts[2].strategy


def test_a_degenerate_answer_keeps_the_item_repair_in_progress() -> None:
    """An answer to a per-item repair cut off as degenerate keeps the repair in progress: the
    next answer, the one item, is spliced, not taken for the whole list."""
    run = "[" + " " * 3_000  # past the default whitespace bound (2,048)
    model = ScriptedModel([json.dumps(lines(1, 0, 3)), run, json.dumps([FIXED_B])])
    outcome = Healer(list[Line], policy=HealPolicy(max_attempts=3)).run(model, "lines")
    assert [("A", 1), ("B", 2), ("C", 3)] == skus(outcome)
    assert Strategy.DEGENERATE is outcome.attempts[2].strategy


@contract(fields=("sku",))
def real_sku(line: Line) -> Violation | None:
    """A placeholder sku is refused."""
    return Violation("sku must be a real sku, not X") if line.sku == "X" else None


def _shaped(items: list[dict[str, Any]], shape: str, key: str) -> str:
    """The repair answer `items` in one of the shapes a model sends."""
    if shape == "bare":
        return json.dumps(items)
    if shape == "envelope":
        return json.dumps({key: items})
    if shape == "lone":
        return json.dumps(items[0])
    if shape == "fenced":
        return f"Corrected:\n```json\n{json.dumps(items)}\n```\nDone."
    return f"<think>only [1] is wrong</think>\n{json.dumps({key: items})}"


@pinned(max_examples=40)
@given(
    qtys=st.lists(st.integers(1, 9), min_size=2, max_size=8),
    data=st.data(),
    shape=st.sampled_from(["bare", "envelope", "lone", "fenced", "reasoning"]),
    key=st.sampled_from(["value", "items", "lines", "result"]),
    by_contract=st.booleans(),
)
@example(qtys=[1, 2, 3], data=None, shape="envelope", key="value", by_contract=False)
def test_every_accepted_item_stays_in_place_whatever_the_answers_shape(
    qtys: list[int], data: Any, shape: str, key: str, by_contract: bool
) -> None:
    """For any list with one bad item (its schema or an item contract) and any shape of answer
    to the per-item repair (a bare array, an envelope, a lone object, a fence, reasoning
    first), every accepted item is in the healed list at its index and the bad one repaired."""
    bad = data.draw(st.integers(0, len(qtys) - 1), label="bad") if data is not None else 1
    first = [{"sku": f"S{i}", "qty": q} for i, q in enumerate(qtys)]
    first[bad] = {"sku": "X", "qty": qtys[bad]} if by_contract else {"sku": f"S{bad}", "qty": 0}
    repaired = {"sku": f"S{bad}", "qty": qtys[bad]}
    model = ScriptedModel([json.dumps(first), _shaped([repaired], shape, key)])
    rules = [real_sku] if by_contract else []
    outcome = Healer(list[Line], item_contracts=rules).run(model, "lines")
    assert [(f"S{i}", q) for i, q in enumerate(qtys)] == skus(outcome)
    assert Flag.ITEMS_MERGED in outcome.attempts[1].flags


class Sku(BaseModel):
    sku: str
    qty: int


@contract(fields=("qty",))
def qty_positive(item: Sku) -> Violation | None:
    """A re-ask rule: the quantity is positive."""
    return Violation("qty must be positive") if item.qty <= 0 else None


@contract(fields=("sku",), on_fail="drop")
def no_x(item: Sku) -> Violation | None:
    """A drop rule: an item whose sku is `X` is removed."""
    return Violation("sku X is dropped") if item.sku == "X" else None


def test_an_item_a_drop_rule_removes_is_never_asked_for() -> None:
    """With a drop rule and a re-ask rule broken by different items, only the re-ask rule's
    item is asked for, and the dropped item is dropped from the healed list."""
    answer = '[{"sku":"X","qty":1},{"sku":"A","qty":1},{"sku":"B","qty":0},{"sku":"C","qty":2}]'
    model = ScriptedModel([answer, '[{"sku":"B","qty":5}]'])
    outcome = Healer(list[Sku], item_contracts=[no_x, qty_positive]).run(model, "go")
    assert isinstance(outcome, Healed), outcome
    assert [item.sku for item in outcome.value] == ["A", "B", "C"]
    assert [(d.index, d.item["sku"]) for d in outcome.dropped] == [(0, "X")]
    request = model.calls[1].messages[-1]["content"]
    assert "1 corrected items, in this order: [2];" in request
    assert "sku X is dropped" not in request
    assert "1 item ([0]) breaks a rule that removes it from the list" in request
    assert "The other 2 items ([1], [3]) passed every check" in request


def _named(line: str) -> set[int]:
    """The item indices a prompt line names, its runs (`[1], [3]-[5]`) expanded."""
    found: set[int] = set()
    for run in re.findall(r"\[(\d+)\](?:-\[(\d+)\])?", line):
        first = int(run[0])
        found.update(range(first, int(run[1] or first) + 1))
    return found


def test_the_items_a_drop_rule_removes_are_kept_in_the_record() -> None:
    """The repair prompt's removed items survive `to_dict()` and `outcome_from_dict`."""
    answer = '[{"sku":"A","qty":1},{"sku":"X","qty":1},{"sku":"B","qty":0}]'
    model = ScriptedModel([answer, '[{"sku":"B","qty":5}]'])
    outcome = Healer(list[Sku], item_contracts=[no_x, qty_positive]).run(model, "go")
    data = outcome.to_dict()
    assert [1] == data["attempts"][1]["prompt"]["removed_items"]
    again = outcome_from_dict(data, list[Sku])
    prompt = again.attempts[1].prompt
    assert prompt is not None
    assert (1,) == prompt.removed_items
    assert prompt.render() == outcome.attempts[1].prompt.render()  # type: ignore[union-attr]


@pinned(max_examples=30)
@given(kinds=st.lists(st.sampled_from(["ok", "drop", "reask", "both"]), min_size=2, max_size=7))
def test_no_dropped_item_is_ever_asked_for_or_healed(kinds: list[str]) -> None:
    """Whatever items break a drop rule or a re-ask rule, no item a drop rule removes is in a
    repair request's failed items or in the healed value."""
    items = [
        {
            "sku": "X" if kind in ("drop", "both") else f"S{i}",
            "qty": 0 if kind in ("reask", "both") else 1,
        }
        for i, kind in enumerate(kinds)
    ]
    fixed = [
        {"sku": item["sku"], "qty": 5} for item in items if item["sku"] != "X" and item["qty"] == 0
    ]
    model = ScriptedModel([json.dumps(items), json.dumps(fixed), json.dumps(fixed)])
    healer = Healer(
        list[Sku], item_contracts=[no_x, qty_positive], policy=HealPolicy(max_attempts=3)
    )
    outcome = healer.run(model, "go")
    removed = {i for i, kind in enumerate(kinds) if kind in ("drop", "both")}
    for call in model.calls[1:]:
        request = call.messages[-1]["content"]
        assert "sku X is dropped" not in request
        for line in request.splitlines():  # no item to be removed is called accepted
            if "passed every check" in line:
                assert not _named(line) & removed, line
    for attempt in outcome.attempts:
        if attempt.prompt is not None and attempt.prompt.strategy is Strategy.ITEMS:
            assert removed == set(attempt.prompt.removed_items)
    if isinstance(outcome, Healed):
        assert all(item.sku != "X" and item.qty > 0 for item in outcome.value)
        assert len(outcome.dropped) == sum(kind in ("drop", "both") for kind in kinds)


def test_an_envelope_with_other_keys_beside_its_list_is_read_as_the_envelope() -> None:
    """A `{"value": [...], "note": ...}` answer to a request of one item is the envelope around
    that item, not the item itself."""
    answer = json.dumps({"value": [FIXED_B], "note": "fixed qty"})
    model = ScriptedModel([json.dumps(lines(1, 0, 3)), answer])
    outcome = Healer(list[Line]).run(model, "lines")
    assert [("A", 1), ("B", 2), ("C", 3)] == skus(outcome)
    assert {Flag.UNWRAPPED, Flag.ITEMS_MERGED} <= set(outcome.attempts[1].flags)


class Basket(BaseModel):
    items: list[str] = Field(min_length=1)


def test_one_item_asked_whose_list_is_as_long_as_the_whole_list_is_that_item() -> None:
    """With one item asked, an object whose only list is as long as the whole list is read as
    the item when its keys are the item's fields (not as the whole list again), even while it
    still fails its schema."""
    first = [{"items": ["x"]}, {"items": []}]
    still_failing = {"items": ["y", 5]}
    item = {"items": ["y", "z"]}
    model = ScriptedModel([json.dumps(first), json.dumps(still_failing), json.dumps(item)])
    outcome = healed(Healer(list[Basket]).run(model, "baskets"))
    assert [basket.items for basket in outcome.value] == [["x"], ["y", "z"]]
    assert Flag.ITEMS_MERGED in outcome.attempts[1].flags
