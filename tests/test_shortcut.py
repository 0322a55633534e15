"""The shortcut (`_core/shortcut.py`) makes a run's first call itself when nothing listens; it
must reach exactly the outcome, and make exactly the calls, of the loop driven alone."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Callable
from typing import Any

import httpx2
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion
from pydantic import BaseModel

import healjson
from healjson import Degraded, Healed, ProviderError, Reply
from healjson._core import shortcut
from healjson._core.drive import drive_async, drive_sync
from healjson._core.engine import heal_flow
from healjson._core.messages import make_context, normalise_messages
from outcomes import comparable


class Item(BaseModel):
    name: str
    qty: int


MESSAGES = [{"role": "system", "content": "items"}, {"role": "user", "content": "one item"}]
PARAMS = {"model": "m", "temperature": 0}


def completion(content: str | None, finish: str | None = "stop", refusal: str | None = None) -> Any:
    return ChatCompletion.model_validate(
        {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m-2024",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content, "refusal": refusal},
                    "finish_reason": finish,
                }
            ],
            "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
        }
    )


def connection_error() -> Exception:
    return openai.APIConnectionError(request=httpx2.Request("POST", "http://127.0.0.1/v1"))


_TEXTS = st.sampled_from(
    [
        '{"name": "x", "qty": 1}',
        '{"name": "x", "qty": "2"}',  # lax only: L2 coerces it
        '```json\n{"name": "y", "qty": 3}\n```',
        'Here: {"name": "z", "qty": 4} done',
        '{"name": "x", "qty": 1',  # cut
        '{"name": "x"}',  # a missing field: a repair
        "",
        "no json at all",
        '{"name": "x", "qty": 1} {"name": "y", "qty": 2}',
    ]
)
# what one call does: return text, a Reply, an SDK ChatCompletion, or raise the provider's error
_FATES = st.one_of(
    _TEXTS,
    st.builds(Reply, _TEXTS, st.sampled_from([None, "stop", "length", "content_filter"])),
    st.builds(completion, _TEXTS, st.sampled_from(["stop", "length"])),
    st.builds(completion, st.none(), st.just("stop"), st.just("I cannot help with that.")),
    st.sampled_from(["raise-provider", "raise-sdk"]),
)


def scripted(fates: list[Any], log: list[Any]) -> Callable[..., Any]:
    replies = iter(fates)

    def call(messages: Any, **params: Any) -> Any:
        log.append((messages, params))
        fate = next(replies, '{"name": "last", "qty": 9}')
        if fate == "raise-provider":
            raise ProviderError("the gateway said no")
        if fate == "raise-sdk":
            raise connection_error()
        return fate

    return call


def loop_alone(healer: healjson.Healer[Any], call: Callable[..., Any]) -> Any:
    original = normalise_messages(MESSAGES)
    ctx = make_context(None, original)
    flow = heal_flow(healer._spec, original, PARAMS, ctx, started=time.monotonic())
    return drive_sync(flow, call)


@settings(max_examples=150, deadline=None)
@given(fates=st.lists(_FATES, min_size=1, max_size=3), attempts=st.integers(1, 3))
def test_the_shortcut_reaches_the_loops_outcome_with_the_same_calls(
    fates: list[Any], attempts: int
) -> None:
    healer = healjson.Healer(Item, policy=healjson.HealPolicy(max_attempts=attempts))
    fast_calls: list[Any] = []
    loop_calls: list[Any] = []
    fast = healer.run(scripted(fates, fast_calls), MESSAGES, **PARAMS)
    alone = loop_alone(healer, scripted(fates, loop_calls))
    assert comparable(fast) == comparable(alone)
    assert fast_calls == loop_calls


@settings(max_examples=60, deadline=None)
@given(fates=st.lists(_FATES, min_size=1, max_size=3))
def test_the_async_shortcut_matches_the_async_loop(fates: list[Any]) -> None:
    healer = healjson.Healer(Item)

    def async_call(log: list[Any]) -> Callable[..., Any]:
        sync = scripted(fates, log)

        async def call(messages: Any, **params: Any) -> Any:
            await asyncio.sleep(0)
            return sync(messages, **params)

        return call

    fast_calls: list[Any] = []
    loop_calls: list[Any] = []

    async def both() -> tuple[Any, Any]:
        fast = await healer.arun(async_call(fast_calls), MESSAGES, **PARAMS)
        original = normalise_messages(MESSAGES)
        flow = heal_flow(
            healer._spec, original, PARAMS, make_context(None, original), started=time.monotonic()
        )
        return fast, await drive_async(flow, async_call(loop_calls))

    fast, alone = asyncio.run(both())
    assert comparable(fast) == comparable(alone)
    assert fast_calls == loop_calls


def test_a_clean_sdk_completion_is_healed_in_one_call_without_the_loop() -> None:
    flows: list[Any] = []
    real = shortcut.heal_flow

    def counting(*args: Any, **kwargs: Any) -> Any:
        flows.append(kwargs)
        return real(*args, **kwargs)

    healer = healjson.Healer(Item)
    calls: list[Any] = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(shortcut, "heal_flow", counting)
        outcome = healer.run(scripted([completion('{"name": "x", "qty": 5}')], calls), MESSAGES)
    assert isinstance(outcome, Healed)
    assert Item(name="x", qty=5) == outcome.value
    assert [] == flows  # no generator was started
    assert 1 == len(calls)
    usage = outcome.usage
    assert (11, 7, 1, "m-2024") == (
        usage.prompt_tokens,
        usage.completion_tokens,
        usage.requests,
        usage.model,
    )
    assert outcome.attempts[0].model == "m-2024"
    assert re.fullmatch(r"[0-9a-f]{12}-\d{6,}", outcome.run_id)


def test_a_listener_gets_every_event_of_a_shortcut_eligible_run() -> None:
    """With a logger bound the loop runs the whole way (it announces each step)."""
    events: list[tuple[str, dict[str, Any]]] = []

    class Sink:
        def info(self, event: str, **fields: Any) -> None:
            events.append((event, fields))

    healer = healjson.Healer(Item)
    with healjson.set_logger(Sink()):
        outcome = healer.run(lambda m, **p: '{"name": "x", "qty": 1}', MESSAGES)
    assert isinstance(outcome, Healed)
    assert ["healjson.attempt", "healjson.healed"] == [name for name, _ in events]
    assert {outcome.run_id} == {fields["run_id"] for _, fields in events}


def test_a_declined_first_reply_continues_in_the_loop_with_the_same_run_id() -> None:
    calls: list[Any] = []
    healer = healjson.Healer(Item)
    outcome = healer.run(scripted(['{"name": "x"}', '{"name": "x", "qty": 2}'], calls), MESSAGES)
    assert isinstance(outcome, Healed)
    assert 2 == len(calls) == outcome.calls
    assert outcome.run_id
    assert "qty" in str(outcome.attempts[1].messages)  # the repair names the missing field


def test_an_error_in_the_callers_own_code_is_raised_as_the_loop_raises_it() -> None:
    def broken(messages: Any, **params: Any) -> Any:
        raise KeyError("a bug in the caller's call function")

    with pytest.raises(KeyError):
        healjson.Healer(Item).run(broken, MESSAGES)


def test_a_provider_failure_on_the_first_call_degrades_with_its_reason() -> None:
    healer = healjson.Healer(Item, policy=healjson.HealPolicy(max_attempts=2))
    outcome = healer.run(scripted(["raise-sdk", "raise-sdk"], []), MESSAGES)
    assert isinstance(outcome, Degraded)
    assert "api_error" == outcome.reason


def test_a_sync_call_that_returns_an_awaitable_is_awaited() -> None:
    async def reply() -> str:
        return '{"name": "x", "qty": 4}'

    outcome = healjson.Healer(Item).run(lambda m, **p: reply(), MESSAGES)
    assert isinstance(outcome, Healed)
    assert 4 == outcome.value.qty


def test_a_deadline_takes_the_loop_and_still_limits_the_first_call() -> None:
    def slow(messages: Any, **params: Any) -> str:
        time.sleep(1.0)
        return '{"name": "x", "qty": 1}'

    healer = healjson.Healer(Item, policy=healjson.HealPolicy(deadline_s=0.1))
    started = time.monotonic()
    outcome = healer.run(slow, MESSAGES)
    assert time.monotonic() - started < 0.9
    assert isinstance(outcome, Degraded)
    assert "timeout" == outcome.reason
