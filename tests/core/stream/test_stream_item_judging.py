"""A stream judges what it hands out early as the final check judges it (`judge_value`).

An item of a streamed list is handed out before the answer ends only when the final check
would accept it: a contract that changes the item it checks, or raises on it, is a
`contract_error` as soon as the stream sees it, and the item is held, never handed out (a
warning's rule too: its bug is a contract error at the end as well). A contract judged early on
an object's fields that changes them, or raises, is no reason to stop the stream: the final
check ends the run on the contract error, as the unstreamed call does.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

import healjson
from healjson import Degraded, Delta, Healed, Healer, Reason, Source, Violation
from pinned import pinned


class Tagged(BaseModel):
    sku: str
    tags: list[str] = []


def text_of(skus: list[str]) -> str:
    return json.dumps([{"sku": sku, "tags": ["t"]} for sku in skus])


def pieces(text: str, cuts: list[int]) -> list[str]:
    points = sorted({0, len(text), *(cut % (len(text) + 1) for cut in cuts)})
    return [text[a:b] for a, b in itertools.pairwise(points)]


class Script:
    """Each answer streamed as a tool call's arguments (one JSON value: its items are judged as
    they complete); records the calls."""

    def __init__(self, *answers: list[str]) -> None:
        self.answers = list(answers)
        self.calls = 0

    def __call__(self, messages: Any, **params: Any) -> Any:
        self.calls += 1
        chunks = self.answers.pop(0) if self.answers else ["[]"]
        return iter([*(Delta(tool_arguments=p) for p in chunks), Delta(finish_reason="stop")])

    async def acall(self, messages: Any, **params: Any) -> Any:
        chunks = self(messages, **params)

        async def each() -> AsyncIterator[Any]:
            for chunk in chunks:
                yield chunk

        return each()


def touching(skus: frozenset[str], how: str, on_fail: str = "reask") -> Any:
    """An item contract that, on an item whose sku is in `skus`, appends a tag, edits the sku,
    or raises; it never returns a violation."""

    @healjson.contract(on_fail=on_fail)  # type: ignore[call-overload]
    def meddles(item: Tagged) -> Violation | None:
        if item.sku in skus:
            if how == "append":
                item.tags.append("normalised")
            elif how == "edit":
                item.sku = item.sku.lower()
            else:
                raise ValueError("a bug in the rule")
        return None

    return meddles


def stream_sync(skus: list[str], rule: Any, cuts: list[int]) -> tuple[list[Any], Any, Any]:
    """The items a sync stream hands out, its outcome and its `item_status`."""
    stream = Healer(list[Tagged], item_contracts=[rule]).stream(
        Script(pieces(text_of(skus), cuts)), "tags?"
    )
    got = list(stream.items())
    return got, stream.outcome, stream.item_status


def stream_async(skus: list[str], rule: Any, cuts: list[int]) -> tuple[list[Any], Any, Any]:
    """The items an async stream hands out, its outcome and its `item_status`."""

    async def read() -> tuple[list[Any], Any, Any]:
        script = Script(pieces(text_of(skus), cuts))
        stream = Healer(list[Tagged], item_contracts=[rule]).astream(script.acall, "tags?")
        got = [item async for item in stream.items()]
        return got, stream.outcome, stream.item_status

    return asyncio.run(read())


READS = [stream_sync, stream_async]


@pytest.mark.parametrize("read", READS, ids=["sync", "async"])
def test_an_item_a_contract_appends_to_is_never_handed_out_sync_or_async(read: Any) -> None:
    """An item contract that appends to the item it checks makes it a contract error as the
    stream sees it: neither a sync nor an async stream hands out the changed item."""
    got, outcome, status = read(["A", "B", "C"], touching(frozenset("B"), "append"), [9, 30])

    assert ["A"] == [item.sku for item in got]
    assert all(item.tags == ["t"] for item in got)
    assert isinstance(outcome, Degraded)
    assert Reason.CONTRACT_ERROR is outcome.reason
    assert 1 == outcome.calls
    assert {"held"} == set(status.values())


@pytest.mark.parametrize("read", READS, ids=["sync", "async"])
def test_an_item_a_contract_edits_is_never_handed_out_sync_or_async(read: Any) -> None:
    """An item contract that edits a field of the item it checks holds that item in sync and
    async streams alike, and the run ends on the contract error after one call."""
    got, outcome, _ = read(["A", "B"], touching(frozenset("A"), "edit"), [])

    assert [] == got
    assert isinstance(outcome, Degraded)
    assert Reason.CONTRACT_ERROR is outcome.reason


@pytest.mark.parametrize("read", READS, ids=["sync", "async"])
def test_a_warning_rule_that_raises_holds_the_item_it_raised_on(read: Any) -> None:
    """A warning's item contract that raises is a contract error at the end, so the item it
    raised on is never handed out, sync or async."""
    got, outcome, _ = read(["A", "B", "C"], touching(frozenset("B"), "raise", "warn"), [4])

    assert ["A"] == [item.sku for item in got]
    assert isinstance(outcome, Degraded)
    assert Reason.CONTRACT_ERROR is outcome.reason


def test_a_warning_rule_that_changes_an_item_holds_it() -> None:
    """A warning's item contract that changes the item it checks holds that item during the
    stream: the final check would end on a contract error, so nothing changed is handed out."""
    got, outcome, _ = stream_sync(["A", "B"], touching(frozenset("A"), "append", "warn"), [])

    assert [] == got
    assert isinstance(outcome, Degraded)
    assert Reason.CONTRACT_ERROR is outcome.reason


def test_an_item_held_for_a_changing_contract_says_contract_error_at_its_index() -> None:
    """The item a changing contract is caught on is held with a `contract_error` at its index,
    naming the rule, in the session's own account."""
    from healjson._core.stream.session import StreamSession
    from healjson._core.target.target import target_for
    from healjson._core.wire.delta import Delta as WireDelta

    session = StreamSession(
        target_for(list[Tagged]), (), (touching(frozenset("B"), "append"),), one_value=True
    )
    session.feed(WireDelta(tool_arguments=text_of(["A", "B"])))

    assert [0] == list(session.accepted)
    (diagnostic,) = session.held[1]
    assert Source.CONTRACT_ERROR is diagnostic.source
    assert diagnostic.path.startswith("[1]")
    assert "must not change the value" in diagnostic.constraint


class Order(BaseModel):
    lines: list[str] = Field(min_length=1)
    note: str = ""


@healjson.contract(fields=("lines",))
def sorts_and_complains(order: Order) -> Violation | None:
    """A contract that sorts the field it checks in place, then reports a breach."""
    order.lines.sort()
    return Violation("lines must not hold z") if "z" in order.lines else None


@healjson.contract(fields=("note",))
def note_not_bad(order: Order) -> Violation | None:
    return Violation("the note must not be bad") if order.note == "bad" else None


@healjson.contract(fields=("lines",))
def lines_rule_raises(order: Order) -> Violation | None:
    raise ValueError("a bug in the rule")


def test_a_field_contract_that_changes_what_it_checks_does_not_stop_the_stream() -> None:
    """A contract judged early that changes the fields it checks is a contract error, never a
    breach to repair: the stream runs to its end, and the run ends on the contract error after
    one call, as unstreamed, sync and async."""
    text = json.dumps({"lines": ["z", "a"], "note": "x" * 300})
    for sync in (True, False):
        script = Script(pieces(text, [5, 20, 40]), ['{"lines": ["a"]}'])
        healer = Healer(Order, contracts=[sorts_and_complains])
        if sync:
            outcome = healer.stream(script, "order?").finish()
        else:
            outcome = asyncio.run(healer.astream(script.acall, "order?").finish())

        assert isinstance(outcome, Degraded)
        assert Reason.CONTRACT_ERROR is outcome.reason
        assert 1 == outcome.calls == script.calls


def test_a_field_contract_that_raises_stops_no_later_breach_early() -> None:
    """Once a contract judged early raised, a later breach does not stop the stream: the final
    check ends on the contract error after one call, as the unstreamed call does."""
    text = json.dumps({"lines": ["a"], "note": "bad", "tail": "x" * 300})
    script = Script(pieces(text, [5, 20, 40]), ['{"lines": ["a"]}'])
    outcome = (
        Healer(Order, contracts=[lines_rule_raises, note_not_bad]).stream(script, "order?").finish()
    )

    assert isinstance(outcome, Degraded)
    assert Reason.CONTRACT_ERROR is outcome.reason
    assert 1 == script.calls


SKUS = "ABCDE"


@pinned(max_examples=60)
@given(
    skus=st.lists(st.sampled_from(SKUS), min_size=1, max_size=6),
    touched=st.frozensets(st.sampled_from(SKUS), max_size=3),
    how=st.sampled_from(["append", "edit", "raise"]),
    on_fail=st.sampled_from(["reask", "warn"]),
    cuts=st.lists(st.integers(0, 200), max_size=5),
    sync=st.booleans(),
)
@example(skus=["A", "B", "C"], touched=frozenset("B"), how="append", on_fail="reask", cuts=[],
         sync=True)  # fmt: skip
@example(skus=["A", "B"], touched=frozenset("B"), how="raise", on_fail="warn", cuts=[9],
         sync=False)  # fmt: skip
@example(skus=["A", "B"], touched=frozenset("A"), how="edit", on_fail="warn", cuts=[],
         sync=True)  # fmt: skip
def test_an_item_handed_out_early_is_one_the_final_check_accepts_unchanged(
    skus: list[str],
    touched: frozenset[str],
    how: str,
    on_fail: str,
    cuts: list[int],
    sync: bool,
) -> None:
    """For generated lists and a rule that changes or raises on the items it touches, every
    item handed out is one no rule touched, exactly as it arrived, in index order; a healed run
    hands out the whole final value; a touched item makes the run a contract error."""
    rule = touching(touched, how, on_fail)
    got, outcome, status = (stream_sync if sync else stream_async)(skus, rule, cuts)

    first_touched = next((i for i, sku in enumerate(skus) if sku in touched), len(skus))
    arrived = [Tagged(sku=sku, tags=["t"]) for sku in skus]
    assert got == arrived[: len(got)]  # each one as it arrived, in order
    assert len(got) <= first_touched  # none touched, none after a touched one
    if first_touched < len(skus):
        assert isinstance(outcome, Degraded)
        assert Reason.CONTRACT_ERROR is outcome.reason
        assert {"held"} >= set(status.values())
    else:
        assert isinstance(outcome, Healed)
        assert got == list(outcome.value) == arrived
        assert {"streamed"} == set(status.values())
