"""The engine's first step serves a strictly valid first reply without L1; it must reach
exactly the outcome the full L1 + L2 evaluation reaches."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from unittest.mock import patch

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Healed, Reply
from healjson._core.run import answers
from healjson._core.run.answers import HealSpec
from healjson._core.run.drive import drive_sync
from healjson._core.run.engine import heal_flow
from healjson._core.run.messages import make_context, normalise_messages
from outcomes import comparable
from pinned import pinned


class Item(BaseModel):
    name: str
    qty: int
    note: str | None = None


MESSAGES = [{"role": "user", "content": "an item"}]


def loop_outcome(healer: healjson.Healer[Any], reply: Any) -> Any:
    """The outcome the full evaluation reaches (the first step switched off)."""
    original = normalise_messages(MESSAGES)
    with patch.object(HealSpec, "first", lambda *args, **kwargs: None):
        flow = heal_flow(healer.spec, original, {"model": "m"}, make_context(None, original))
        return drive_sync(flow, lambda msgs, **params: reply)


_REPLIES = st.one_of(
    st.builds(
        lambda name, qty: json.dumps({"name": name, "qty": qty}),
        st.text(max_size=8),
        st.integers(-5, 5),
    ),
    st.builds(lambda qty: json.dumps({"name": "x", "qty": str(qty)}), st.integers(0, 9)),
    st.builds(lambda body: f"```json\n{body}\n```", st.just('{"name": "x", "qty": 1}')),
    st.sampled_from(["", "no json", '{"name": "x"}', '{"name": "x", "qty": 1,}', "null"]),
    st.builds(
        Reply,
        st.just('{"name": "x", "qty": 1}'),
        st.sampled_from([None, "stop", "length", "content_filter", "tool_calls"]),
        st.none() | st.just("I can't."),
    ),
)


@pinned()
@given(reply=_REPLIES)
def test_the_fast_path_reaches_the_loops_outcome(reply: Any) -> None:
    """For any first reply, the fast path reaches the same outcome as the full loop."""
    healer = healjson.Healer(Item, policy=healjson.HealPolicy(max_attempts=1))
    fast = healer.run(lambda msgs, **params: reply, MESSAGES, model="m")
    assert comparable(fast) == comparable(loop_outcome(healer, reply))


def test_the_fast_path_serves_a_clean_first_reply_in_one_call() -> None:
    """The fast path serves a clean first reply in one call, with the call's parameters kept on
    the attempt and usage estimated."""
    calls: list[Any] = []

    def call(msgs: Any, **params: Any) -> str:
        calls.append((msgs, params))
        return '{"name": "x", "qty": 2}'

    healer = healjson.Healer(Item)
    outcome = healer.run(call, MESSAGES, model="m", temperature=0)
    assert isinstance(outcome, Healed)
    assert Item(name="x", qty=2) == outcome.value
    assert [(MESSAGES, {"model": "m", "temperature": 0})] == calls
    assert outcome.attempts[0].params == {"model": "m", "temperature": 0}
    assert outcome.usage.estimated  # a plain string carries no usage


def test_a_declined_first_reply_is_not_asked_for_twice() -> None:
    """When the fast path declines (here: a fenced answer), the loop reuses the first reply
    instead of calling the model again."""
    replies = iter(['```json\n{"name": "x", "qty": 1}\n```', '{"name": "y", "qty": 2}'])
    calls = []

    def call(msgs: Any, **params: Any) -> str:
        calls.append(msgs)
        return next(replies)

    outcome = healjson.Healer(Item).run(call, MESSAGES)
    assert isinstance(outcome, Healed)
    assert Item(name="x", qty=1) == outcome.value
    assert 1 == len(calls)


def test_the_async_fast_path_matches_too() -> None:
    """The async fast path reaches the same outcome as the full loop."""

    async def call(msgs: Any, **params: Any) -> str:
        return '{"name": "x", "qty": 3}'

    healer = healjson.Healer(Item)
    outcome = asyncio.run(healer.arun(call, MESSAGES, model="m"))
    assert comparable(outcome) == comparable(loop_outcome(healer, '{"name": "x", "qty": 3}'))


def test_contracts_take_the_loop() -> None:
    """With contracts, the first reply goes through the loop, which runs each contract once."""
    seen = []

    @healjson.contract(fields=("qty",))
    def positive(item: Item) -> healjson.Violation | None:
        seen.append(item.qty)
        return None if item.qty > 0 else healjson.Violation("qty must be positive")

    healer = healjson.Healer(Item, contracts=[positive])
    seen.clear()  # building the healer checks its synthesised golden example
    outcome = healer.run(lambda msgs, **p: '{"name": "x", "qty": 7}', MESSAGES)
    assert isinstance(outcome, Healed)
    assert [7] == seen  # run once, by the loop


def test_the_first_step_really_skips_l1() -> None:
    """A strictly valid first reply is never handed to L1 (the point of the first step)."""
    seen: list[Any] = []
    real = answers.evaluate

    def counting(*args: Any, **kwargs: Any) -> Any:
        seen.append(args[2])
        return real(*args, **kwargs)

    healer = healjson.Healer(Item)
    with patch.object(answers, "evaluate", counting):
        clean = healer.run(lambda msgs, **p: '{"name": "x", "qty": 1}', MESSAGES)
        fenced = healer.run(lambda msgs, **p: '```json\n{"name": "x", "qty": 1}\n```', MESSAGES)
    assert isinstance(clean, Healed)
    assert isinstance(fenced, Healed)
    assert 1 == len(seen)  # only the fenced reply needed L1
    assert clean.value == fenced.value
