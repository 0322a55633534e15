"""`item_status` of a streamed list is true to its definition in every case.

Every index handed out (or seen) has exactly one final status. In a healed list: an item handed
out that is not the final value's item at its index is `retracted` (a repair rewrote the whole
list, longer, shorter or the same length); any other index of the final value is `streamed`
when its item is the first answer's (valid there, and the same), else `repaired`; an index never
handed out beyond the final list is `held`. In a run that ends `Degraded`, every index is
`held`. The property computes that account from the first answer, the items handed out during
its stream and the final value alone, and compares.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

import healjson
from healjson import Delta, Healed, Healer, HealPolicy, Violation
from pinned import pinned


class Line(BaseModel):
    sku: str
    qty: int = Field(ge=1)


@healjson.contract
def at_most_three(lines: list[Line]) -> Violation | None:
    """A list-level rule: its failure asks for the whole list again."""
    return Violation("at most 3 lines") if len(lines) > 3 else None


Row = tuple[str, int]


def text_of(rows: list[Row]) -> str:
    return json.dumps([{"sku": sku, "qty": qty} for sku, qty in rows])


def pieces(text: str, cuts: list[int]) -> list[str]:
    points = sorted({0, len(text), *(cut % (len(text) + 1) for cut in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


class Script:
    """The first answer streamed (a tool call's arguments with `tool`: one JSON value, whose
    items a stream hands out as they complete; else free text), the repairs whole."""

    def __init__(self, first: list[str], repairs: list[str], tool: bool) -> None:
        self.replies: list[Any] = [first, *repairs]
        self.tool = tool
        self.calls = 0

    def __call__(self, messages: Any, **params: Any) -> Any:
        self.calls += 1
        reply = self.replies.pop(0) if self.replies else "[]"
        if isinstance(reply, list):
            chunks = [Delta(tool_arguments=p) if self.tool else p for p in reply]
            return iter([*chunks, Delta(finish_reason="stop")])
        return reply


def expected_status(
    first: list[Row], handed: list[Line], outcome: Any, seen: set[int]
) -> dict[int, str]:
    """The definition, from the first answer, the items handed out during its stream and the
    final value (`seen`: every index the stream reported, for those beyond the final list)."""
    if not isinstance(outcome, Healed):
        return dict.fromkeys(seen | set(range(len(handed))), "held")
    final = list(outcome.value)
    valid = {i: Line(sku=sku, qty=qty) for i, (sku, qty) in enumerate(first) if qty >= 1}
    status: dict[int, str] = {}
    for index, item in enumerate(final):
        if index < len(handed) and handed[index] != item:
            status[index] = "retracted"
        elif valid.get(index) == item:
            status[index] = "streamed"
        else:
            status[index] = "repaired"
    for index in seen | set(range(len(handed))):
        if index >= len(final):
            status[index] = "retracted" if index < len(handed) else "held"
    return status


rows = st.lists(
    st.tuples(st.sampled_from("ABCD"), st.sampled_from([1, 2, 0])), min_size=1, max_size=5
)
good_rows = st.lists(st.tuples(st.sampled_from("ABCRS"), st.sampled_from([1, 2])), max_size=6)


@st.composite
def repairs(draw: st.DrawFn, first: list[Row]) -> list[str]:
    """Two repair answers, each the bad items alone (spliced back) or a whole new list (longer,
    shorter or as long; its items may equal the first answer's)."""
    bad = sum(1 for _, qty in first if qty < 1)
    out = []
    for _ in range(2):
        if draw(st.booleans()):
            fixed = draw(st.lists(st.sampled_from("RSTU"), min_size=bad, max_size=bad))
            out.append(text_of([(sku, 1) for sku in fixed]))
        else:
            out.append(text_of(draw(good_rows)))
    return out


@st.composite
def cases(draw: st.DrawFn) -> tuple[list[Row], list[str], bool, bool, list[int]]:
    first = draw(rows)
    return (
        first,
        draw(repairs(first)),
        draw(st.booleans()),
        draw(st.booleans()),
        draw(st.lists(st.integers(0, 200), max_size=5)),
    )


def run(
    first: list[Row] | str,
    later: list[str],
    tool: bool,
    list_rule: bool,
    cuts: list[int],
) -> tuple[Any, dict[int, str], list[Line]]:
    """The stream's outcome, its `item_status`, and the items `items()` gave before a second
    call was made (in a run of more than one call: those handed out during the first answer's
    stream). `first`: the first answer's rows, or its text."""
    text = first if isinstance(first, str) else text_of(first)
    script = Script(pieces(text, cuts), later, tool)
    healer = Healer(
        list[Line],
        contracts=[at_most_three] if list_rule else [],
        policy=HealPolicy(max_attempts=3),
    )
    stream = healer.stream(script, "lines?")
    got = [(item, script.calls) for item in stream.items()]
    outcome = stream.outcome
    during = [item for item, calls in got if calls == 1] if outcome.calls > 1 else []
    return outcome, stream.item_status, during


def handed_during_first(first: list[Row], tool: bool, list_rule: bool) -> list[Line]:
    """What the first answer's stream hands out: as a tool call's arguments under no list-level
    rule, its valid items before its first bad one; else nothing before it is judged."""
    if not tool or list_rule:
        return []
    out = []
    for sku, qty in first:
        if qty < 1:
            break
        out.append(Line(sku=sku, qty=qty))
    return out


@pinned(max_examples=75)
@given(case=cases())
@example(case=([("A", 1), ("B", 0), ("C", 1)], ['[{"sku": "A", "qty": 1}]', "[]"], True, False, []))
@example(case=([("A", 1), ("B", 0)], ['[{"sku": "R", "qty": 1}]', "[]"], True, False, [5]))
@example(case=([("A", 1), ("B", 0), ("C", 1)], [text_of([("X", 1)] * 3), "[]"], False, False, []))
@example(case=([("A", 1), ("B", 0), ("C", 1)], [text_of([("A", 1), ("B", 1), ("C", 1)]), "[]"],
               False, False, []))  # fmt: skip
@example(case=([("A", 1), ("B", 1), ("C", 1), ("D", 1)], [text_of([("A", 1)]), "[]"],
               True, True, []))  # fmt: skip
def test_item_status_is_its_definition(
    case: tuple[list[Row], list[str], bool, bool, list[int]],
) -> None:
    """For generated first answers (some items bad) and repairs (the bad items spliced back, or
    a whole new list, longer or shorter), `item_status` is the account the definition gives."""
    first, later, tool, list_rule, cuts = case
    outcome, status, during = run(first, later, tool, list_rule, cuts)
    handed = handed_during_first(first, tool, list_rule)

    if outcome.calls > 1:  # the items handed out during the first stream, as predicted
        assert handed == during
    assert expected_status(first, handed, outcome, set(status)) == status


def test_a_whole_list_again_keeps_streamed_only_the_items_the_first_answer_had() -> None:
    """An item repair answered with the whole list again, one good item of it changed: that item
    is `repaired`, though it was never handed out and the first answer had it right."""
    first = [("A", 1), ("B", 0), ("C", 1)]
    again = text_of([("A", 1), ("B", 1), ("Z", 1)])
    outcome, status, _ = run(first, [again], tool=False, list_rule=False, cuts=[7])

    assert ["A", "B", "Z"] == [line.sku for line in outcome.value]
    assert {0: "streamed", 1: "repaired", 2: "repaired"} == status


def test_items_handed_out_beyond_a_shorter_list_are_retracted() -> None:
    """A whole-list repair shorter than the items handed out: the one replaced at its index and
    the one past the new list's end are both `retracted`, never `streamed` nor dropped."""
    cut = text_of([("A", 1), ("B", 1), ("C", 1)])[:-12]  # the third item cut short
    outcome, status, during = run(cut, [text_of([("R", 1)])], True, False, [5, 20, 30])

    assert ["A", "B"] == [line.sku for line in during]
    assert [Line(sku="R", qty=1)] == outcome.value
    assert {0: "retracted", 1: "retracted"} == {i: status[i] for i in (0, 1)}
    assert {"held"} >= {status[i] for i in set(status) - {0, 1}}


def test_an_index_held_then_beyond_a_shorter_list_is_held() -> None:
    """An item held during the stream (never handed out) and beyond the final, shorter list is
    `held`: in no value."""
    first = [("A", 0), ("B", 0)]  # both held as they arrive: the whole list is asked again
    outcome, status, _ = run(first, [text_of([("R", 1)])], True, False, [])

    assert [Line(sku="R", qty=1)] == outcome.value
    assert {0: "repaired", 1: "held"} == status
