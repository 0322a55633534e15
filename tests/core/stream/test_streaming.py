"""Healed streams: `Healer.stream` / `astream` and `@heal(stream=True)` over iterables of chunks.

The same flow as a non-streamed run decides the outcome; these tests check what the stream adds:
snapshots on the way, items as they complete, an early abort that closes the stream, failures
part-way with what had arrived kept. The SDK paths (wrap, instructor) are in
`test_streaming_sdk.py`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

import healjson
from healjson import Degraded, Delta, Flag, Healed, Healer, HealPolicy, Partial, Reason, Violation


class Item(BaseModel):
    sku: str
    qty: int = Field(ge=1)


class Order(BaseModel):
    customer: str
    total: float = Field(ge=0)
    items: list[Item]


class Tagged(BaseModel):
    a: int = Field(le=5)
    b: str


GOOD = {"customer": "Ada", "total": 3.5, "items": [{"sku": "A", "qty": 2}]}


def chunked(text: str, size: int = 5) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


class Script:
    """A model call that returns its replies in order: a list of chunks streams, a string is a
    whole (non-streamed) reply. Records how many chunks of each stream were read."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.calls: list[list[dict[str, Any]]] = []
        self.read: list[int] = []
        self.closed: list[bool] = []

    def __call__(self, messages: list[dict[str, Any]], **params: Any) -> Any:
        self.calls.append(messages)
        reply = self.replies.pop(0)
        if isinstance(reply, list):
            return self._stream(reply)
        return reply

    def _stream(self, chunks: list[Any]) -> Iterator[Any]:
        index = len(self.read)
        self.read.append(0)
        self.closed.append(False)
        try:
            for chunk in chunks:
                if isinstance(chunk, Exception):
                    raise chunk
                self.read[index] += 1
                yield chunk
        finally:
            self.closed[index] = True


# --- snapshots and the outcome ------------------------------------------------------------------


def test_clean_stream_gives_growing_snapshots_then_healed_in_one_call() -> None:
    """A clean stream yields `Partial` snapshots that complete only at the end, then a `Healed`
    outcome after one call."""
    script = Script(chunked(json.dumps(GOOD)))
    stream = Healer(Order).stream(script, "extract the order")

    snapshots = list(stream)

    assert all(isinstance(s, Partial) for s in snapshots)
    assert not any(s.complete for s in snapshots[:-1])
    assert snapshots[-1].complete
    assert GOOD == snapshots[-1].data
    assert "Ada" == snapshots[-1].customer
    assert "A" == snapshots[-1].items[0].sku
    outcome = stream.outcome
    assert isinstance(outcome, Healed)
    assert Order.model_validate(GOOD) == outcome.value
    assert 1 == outcome.calls == len(script.calls)


def test_a_snapshot_is_never_the_validated_model() -> None:
    """A snapshot is a `Partial`, never the model: an absent field reads as `None` and an unknown
    one raises `AttributeError`."""
    stream = Healer(Order).stream(Script(chunked(json.dumps(GOOD))), "go")
    last = list(stream)[-1]

    assert not isinstance(last, Order)
    assert "Partial[Order](complete" in repr(last)
    assert None is Partial({}, Order).customer  # a field not yet arrived reads as None
    with pytest.raises(AttributeError, match="no field"):
        _ = last.not_a_field


def test_fenced_prose_wrapped_slipped_stream_heals_locally_with_no_extra_call() -> None:
    """A streamed answer in a fence with prose and a trailing comma heals locally, flagged, in
    one call."""
    text = "Here you go:\n```json\n" + json.dumps(GOOD)[:-1] + ",}\n```"
    script = Script(chunked(text, 3))
    stream = Healer(Order).stream(script, "go")

    assert list(stream)
    outcome = stream.outcome
    assert isinstance(outcome, Healed)
    assert {Flag.CODE_FENCE, Flag.SYNTAX_REPAIRED} <= set(outcome.flags)
    assert 1 == len(script.calls)


def test_cut_stream_is_repaired_and_healed_in_two_calls() -> None:
    """A stream cut by the token limit is repaired by a second call, its first attempt keeping
    the cut text and `length`."""
    cut = json.dumps(GOOD)[:30]
    script = Script([*chunked(cut), Delta(finish_reason="length")], json.dumps(GOOD))
    stream = Healer(Order).stream(script, "go")

    outcome = stream.finish()

    assert isinstance(outcome, Healed)
    assert 2 == outcome.calls
    assert "length" == outcome.attempts[0].finish_reason
    assert cut == outcome.attempts[0].raw_text


def test_reasoning_deltas_are_kept_apart_from_the_answer() -> None:
    """Reasoning deltas are kept on the attempt as its reasoning, never read as the answer."""
    chunks = [Delta(reasoning="Let me think {not json}."), *chunked(json.dumps(GOOD))]
    stream = Healer(Order).stream(Script(chunks), "go")
    outcome = stream.finish()

    assert isinstance(outcome, Healed)
    assert "Let me think {not json}." == outcome.attempts[0].reasoning


def test_usage_of_the_stream_is_recorded() -> None:
    """The usage a stream's last chunk reports is the outcome's usage, with one request counted."""
    usage = healjson.Usage(prompt_tokens=12, completion_tokens=9)
    chunks = [*chunked(json.dumps(GOOD)), Delta(finish_reason="stop", usage=usage)]
    outcome = Healer(Order).stream(Script(chunks), "go").finish()

    assert healjson.Usage(12, 9, requests=1) == outcome.usage
    assert "stop" == outcome.attempts[0].finish_reason


@given(size=st.integers(min_value=1, max_value=40))
def test_any_chunk_size_gives_the_same_outcome(size: int) -> None:
    """Any chunk size of the same answer heals to the same value."""
    outcome = Healer(Order).stream(Script(chunked(json.dumps(GOOD), size)), "go").finish()
    assert isinstance(outcome, Healed)
    assert Order.model_validate(GOOD) == outcome.value


# --- lists, item by item ------------------------------------------------------------------------


ITEMS = [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 0}, {"sku": "C", "qty": 3}]
FIXED = [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 2}, {"sku": "C", "qty": 3}]


def as_tool(pieces: list[str]) -> list[Delta]:
    """The pieces as a tool call's arguments: one JSON value by construction, which a stream may
    judge before its end (free text may still hold a second, corrected value)."""
    return [Delta(tool_arguments=piece) for piece in pieces]


def test_list_items_come_as_they_complete_a_bad_one_is_held_then_repaired() -> None:
    """List items are handed out in order as they complete; a bad one is held, repaired alone,
    and the ones behind it wait for it."""
    script = Script(as_tool(chunked(json.dumps(ITEMS), 4)), json.dumps(FIXED))
    stream = Healer(list[Item]).stream(script, "list the items")

    seen = [(item, len(script.calls)) for item in stream.items()]

    # A during the first stream (one call so far); B held, so C waits: in order, after the repair
    assert [(Item(sku="A", qty=1), 1), (Item(sku="B", qty=2), 2), (Item(sku="C", qty=3), 2)] == seen
    assert {0: "streamed", 1: "repaired", 2: "streamed"} == stream.item_status
    outcome = stream.outcome
    assert isinstance(outcome, Healed)
    assert [Item.model_validate(i) for i in FIXED] == outcome.value
    repair = script.calls[1][-1]["content"]
    assert "[1].qty" in repair  # the repair names the bad item


def test_an_item_never_repaired_is_reported_held_and_nothing_is_dropped_silently() -> None:
    """An item no repair fixes stays held with those behind it, the run degrades (so even the item
    handed out is in no value: held), and the partial data keeps every item."""
    script = Script(*[as_tool(chunked(json.dumps(ITEMS), 4)) for _ in range(3)])
    stream = Healer(list[Item]).stream(script, "go")

    assert [Item(sku="A", qty=1)] == list(stream.items())  # C waited behind B: never given
    outcome = stream.outcome
    assert isinstance(outcome, Degraded)
    assert {0: "held", 1: "held", 2: "held"} == stream.item_status
    assert any(d.path == "[1].qty" for d in outcome.errors)
    assert ITEMS == outcome.partial


def test_item_contracts_judge_each_item_during_the_stream_and_at_the_end() -> None:
    """Item contracts judge each streamed item, so a broken one is repaired before it is handed
    out."""

    def no_b(item: Item) -> Violation | None:
        return Violation("sku must not be B", fields=("sku",)) if item.sku == "B" else None

    items = [{"sku": "A", "qty": 1}, {"sku": "B", "qty": 1}]
    script = Script(chunked(json.dumps(items)), json.dumps([items[0], {"sku": "D", "qty": 1}]))
    stream = Healer(list[Item], item_contracts=[no_b]).stream(script, "go")

    assert ["A", "D"] == [item.sku for item in stream.items()]
    outcome = stream.outcome
    assert isinstance(outcome, Healed)
    assert "[1].sku" in script.calls[1][-1]["content"]


def test_item_contracts_need_a_list_target() -> None:
    """`item_contracts` on a target that is not a list is refused when the healer is built."""
    with pytest.raises(TypeError, match="list target"):
        Healer(Order, item_contracts=[lambda item: None])


# --- early abort --------------------------------------------------------------------------------


def test_a_closed_field_out_of_range_aborts_the_stream_and_repairs_at_once() -> None:
    """A closed field that breaks the schema aborts the stream long before its end, closes it,
    and repairs at once."""
    long_tail = '{"a": 99, "b": "' + "x" * 400 + '"}'
    script = Script(as_tool(chunked(long_tail)), '{"a": 3, "b": "ok"}')
    stream = Healer(Tagged).stream(script, "go")

    outcome = stream.finish()

    assert isinstance(outcome, Healed)
    assert 2 == outcome.calls
    first = outcome.attempts[0]
    assert Flag.STREAM_ABORTED in first.flags
    assert "aborted" == first.finish_reason
    assert any(d.path == "a" for d in first.diagnostics)
    assert script.closed[0]  # the stream was closed...
    assert script.read[0] < len(chunked(long_tail)) // 4  # ...long before its end


def test_an_early_abort_records_the_tokens_it_saved() -> None:
    """An early abort records an estimate of the tokens it saved, shown in the trace."""
    from healjson._core.outcome.savings import tokens_saved

    bad = {"customer": "Ada", "total": -1, "items": [{"sku": "A", "qty": 1}] * 60}
    script = Script(as_tool(chunked(json.dumps(bad))), json.dumps({**GOOD, "items": bad["items"]}))
    outcome = Healer(Order).stream(script, "go").finish()

    assert isinstance(outcome, Healed)
    aborted = outcome.attempts[0]
    assert Flag.STREAM_ABORTED in aborted.flags
    whole = len(json.dumps(outcome.value.model_dump())) // 4
    saved = tokens_saved(outcome)
    assert 0 < saved <= whole - aborted.usage.completion_tokens + 2  # what was never produced
    assert saved > whole // 2  # the abort came early: most of the answer was not paid for
    assert f"**Tokens saved**: about {saved:,}" in outcome.trace()


def test_a_contract_whose_fields_have_arrived_aborts_early() -> None:
    """A contract whose fields have all arrived judges mid-stream and aborts a stream it fails."""

    @healjson.contract(fields=("total", "customer"))
    def no_free_orders_for_ada(order: Order) -> Violation | None:
        if order.customer == "Ada" and order.total == 0:
            return Violation("Ada's orders are never free")
        return None

    bad = {"customer": "Ada", "total": 0, "items": [{"sku": "A", "qty": 1}] * 50}
    script = Script(as_tool(chunked(json.dumps(bad))), json.dumps(GOOD))
    healer = Healer(Order, contracts=[no_free_orders_for_ada])
    outcome = healer.stream(script, "go").finish()

    assert isinstance(outcome, Healed)
    assert Flag.STREAM_ABORTED in outcome.attempts[0].flags
    assert script.read[0] < len(chunked(json.dumps(bad))) // 4


def test_with_stream_abort_off_the_stream_is_read_to_the_end() -> None:
    """With `stream_abort=False` a failing stream is read to its end before the repair."""
    long_tail = '{"a": 99, "b": "' + "x" * 100 + '"}'
    script = Script(chunked(long_tail), '{"a": 3, "b": "ok"}')
    policy = HealPolicy(stream_abort=False)
    outcome = Healer(Tagged, policy=policy).stream(script, "go").finish()

    assert isinstance(outcome, Healed)
    assert Flag.STREAM_ABORTED not in outcome.attempts[0].flags
    assert script.read[0] == len(chunked(long_tail))


# --- failures part-way --------------------------------------------------------------------------


def test_a_dropped_connection_mid_stream_degrades_with_the_partial_data_kept() -> None:
    """A connection dropped mid-stream degrades with `api_error`, keeping the raw text and the
    partial data that arrived."""
    cut = chunked(json.dumps(GOOD))[:5]
    error = httpx2.RemoteProtocolError("peer closed connection without sending complete message")
    script = Script([*cut, error])
    stream = Healer(Order).stream(script, "go")

    snapshots = list(stream)
    outcome = stream.outcome

    assert snapshots
    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason
    assert "".join(cut) == outcome.attempts[0].raw_text
    assert {"customer": "Ada"} == outcome.partial
    assert 1 == len(script.calls)


def test_a_chunk_of_no_known_shape_degrades_with_what_had_arrived() -> None:
    """A chunk of no known shape degrades with `api_error`, keeping the partial data that had
    arrived."""
    script = Script(['{"a": 1, ', object()])
    outcome = Healer(Tagged).stream(script, "go").finish()

    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason
    assert "stream chunk" in (outcome.attempts[0].error or "")
    assert {"a": 1} == outcome.partial


def test_a_bug_in_the_callers_stream_propagates() -> None:
    """An exception from the caller's own stream that is not a provider failure propagates."""
    script = Script(['{"a": ', ZeroDivisionError("bug")])
    with pytest.raises(ZeroDivisionError):
        list(Healer(Tagged).stream(script, "go"))


def test_the_runs_deadline_stops_a_trickling_stream() -> None:
    """The run's deadline stops a stream that trickles forever, degrading with `timeout` and the
    text so far."""

    def trickle(messages: Any, **params: Any) -> Iterator[str]:
        import time

        yield '{"a": 1, "b": "'
        while True:
            time.sleep(0.01)
            yield "x"

    outcome = Healer(Tagged, policy=HealPolicy(deadline_s=0.2)).stream(trickle, "go").finish()

    assert isinstance(outcome, Degraded)
    assert Reason.TIMEOUT == outcome.reason
    assert outcome.attempts[0].raw_text.startswith('{"a": 1, "b": "x')


def test_closing_the_stream_early_closes_the_model_stream() -> None:
    """Closing a healed stream early closes the model's stream, and `finish()` then says it was
    closed before its end."""
    script = Script(chunked(json.dumps(GOOD), 2))
    stream = Healer(Order).stream(script, "go")
    for _ in stream:
        break
    stream.close()

    assert script.closed[0]
    with pytest.raises(RuntimeError, match="closed before"):
        stream.finish()


def test_nothing_is_called_before_the_iteration_starts() -> None:
    """Building the stream calls nothing; `finish()` reads it to its outcome."""
    script = Script(chunked(json.dumps(GOOD)))
    stream = Healer(Order).stream(script, "go")
    assert [] == script.calls
    assert isinstance(stream.finish(), Healed)


def test_reading_the_outcome_before_the_end_says_how_to_get_it() -> None:
    """`.outcome` never reads the stream behind the caller's back: before the end it raises,
    naming `finish()`; afterwards it is the outcome `finish()` gave."""
    script = Script(chunked(json.dumps(GOOD)))
    stream = Healer(Order).stream(script, "go")
    with pytest.raises(RuntimeError, match="finish"):
        _ = stream.outcome
    assert [] == script.calls  # nothing was read to raise that
    finished = stream.finish()
    assert finished is stream.outcome


# --- async --------------------------------------------------------------------------------------


async def achunks(chunks: list[Any]) -> AsyncIterator[Any]:
    for chunk in chunks:
        await asyncio.sleep(0)
        yield chunk


def test_astream_over_an_async_iterator_snapshots_then_outcome() -> None:
    """`astream` over an async iterator yields snapshots and then the healed outcome."""

    async def call(messages: Any, **params: Any) -> AsyncIterator[Any]:
        return achunks(chunked(json.dumps(GOOD)))

    async def main() -> tuple[list[Partial[Order]], Any]:
        stream = Healer(Order).astream(call, "go")
        snapshots = [s async for s in stream]
        return snapshots, stream.outcome

    snapshots, outcome = asyncio.run(main())
    assert GOOD == snapshots[-1].data
    assert isinstance(outcome, Healed)


def test_astream_items_and_a_repair() -> None:
    """`astream().items()` hands out every item, the broken one after its repair."""
    replies = [achunks(chunked(json.dumps(ITEMS), 4)), json.dumps(FIXED)]

    def call(messages: Any, **params: Any) -> Any:
        return replies.pop(0)

    async def main() -> tuple[list[Item], Any, dict[int, str]]:
        stream = Healer(list[Item]).astream(call, "go")
        items = [item async for item in stream.items()]
        return items, await stream.finish(), stream.item_status

    items, outcome, status = asyncio.run(main())
    assert ["A", "B", "C"] == [i.sku for i in items]
    assert isinstance(outcome, Healed)
    assert {0: "streamed", 1: "repaired", 2: "streamed"} == status


def test_async_outcome_before_the_end_says_how_to_get_it() -> None:
    """Reading an async stream's `outcome` before its end raises, saying to await `finish()`."""

    async def main() -> None:
        stream = Healer(Order).astream(lambda m, **p: achunks(["{"]), "go")
        with pytest.raises(RuntimeError, match="finish"):
            _ = stream.outcome
        assert isinstance(await stream.finish(), Degraded)

    asyncio.run(main())


# --- the decorator ------------------------------------------------------------------------------


def test_heal_stream_true_on_a_streaming_model_call() -> None:
    """`@heal(stream=True)` on a model call returns a `HealStream` that heals."""

    @healjson.heal(Order, stream=True)
    def ask(messages: Any, **params: Any) -> Iterator[str]:
        return iter(chunked(json.dumps(GOOD)))

    stream = ask("extract")
    assert isinstance(stream, healjson.HealStream)
    assert list(stream)
    assert isinstance(stream.outcome, Healed)


def test_heal_stream_true_with_a_prompt_builder_and_call() -> None:
    """`@heal(stream=True, call=...)` on a prompt builder streams the call with the built prompt."""

    def call(messages: Any, **params: Any) -> Iterator[str]:
        assert "order 7" in messages[-1]["content"]
        return iter(chunked(json.dumps(GOOD)))

    @healjson.heal(Order, call=call, stream=True)
    def prompt(number: int) -> str:
        return f"extract order {number}"

    stream = prompt(7)
    assert isinstance(stream.finish(), Healed)


def test_heal_stream_true_on_an_async_model_call() -> None:
    """`@heal(stream=True)` on an async model call returns a stream whose `finish()` is awaited."""

    @healjson.heal(Order, stream=True)
    async def ask(messages: Any, **params: Any) -> AsyncIterator[Any]:
        return achunks(chunked(json.dumps(GOOD)))

    async def main() -> Any:
        stream = ask("go")
        return await stream.finish()

    assert isinstance(asyncio.run(main()), Healed)


# --- properties -----------------------------------------------------------------------------------

ORDERS = st.builds(
    Order,
    customer=st.text(max_size=20),
    total=st.floats(min_value=0, max_value=1e6, allow_nan=False),
    items=st.lists(
        st.builds(Item, sku=st.text(max_size=8), qty=st.integers(min_value=1, max_value=99)),
        max_size=5,
    ),
)


@given(order=ORDERS, cuts=st.lists(st.integers(min_value=1, max_value=10_000), max_size=25))
def test_any_valid_value_in_any_chunking_heals_and_the_last_snapshot_is_its_data(
    order: Order, cuts: list[int]
) -> None:
    """Any valid order in any chunking heals to itself, and the last snapshot is its complete
    data."""
    text = order.model_dump_json()
    bounds = sorted({0, len(text), *(c % (len(text) + 1) for c in cuts)})
    chunks = [text[a:b] for a, b in itertools.pairwise(bounds)]
    stream = Healer(Order).stream(Script(chunks), "go")

    snapshots = list(stream)

    assert json.loads(text) == snapshots[-1].data
    assert snapshots[-1].complete
    outcome = stream.outcome
    assert isinstance(outcome, Healed)
    assert order == outcome.value


@given(chunks=st.lists(st.text(max_size=12), max_size=30), size=st.integers(1, 3))
def test_no_stream_of_text_makes_healjson_raise(chunks: list[str], size: int) -> None:
    """No stream of arbitrary text chunks makes a healed stream raise: it yields snapshots, then
    `Healed` or `Degraded`."""
    script = Script(*[list(chunks) for _ in range(size)])
    stream = Healer(Order, policy=HealPolicy(max_attempts=size)).stream(script, "go")

    for snapshot in stream:
        assert isinstance(snapshot, Partial)
    assert isinstance(stream.outcome, Healed | Degraded)
