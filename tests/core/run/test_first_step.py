"""One path for the first reply: every run's first step (`engine.heal_flow`, whichever driver
runs it) serves a strictly valid first reply as `Healed` before any loop state is built, and
hands any other first result to the loop, which never calls the model again for it. Whatever
listens (a logger, a deadline) the run reaches the same outcome with the same calls. A run with
nothing listening, no cache and no deadline starts quick: the driver makes its first call and
builds the flow only for an answer the first step declines."""

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
from healjson._core.observe import events as run_events
from healjson._core.run import engine, start
from healjson.testing import capture_events
from listening import nothing_listens
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


@settings(max_examples=75, deadline=None)
@given(fates=st.lists(_FATES, min_size=1, max_size=3), attempts=st.integers(1, 3))
def test_what_listens_changes_neither_the_outcome_nor_the_calls(
    fates: list[Any], attempts: int
) -> None:
    """A run with nothing listening (started quick), one with a logger that follows every step
    and one under a deadline reach the same outcome from the same calls."""
    plain = healjson.Healer(Item, policy=healjson.HealPolicy(max_attempts=attempts))
    timed = healjson.Healer(Item, policy=healjson.HealPolicy(max_attempts=attempts, deadline_s=60))
    quiet_calls: list[Any] = []
    heard_calls: list[Any] = []
    timed_calls: list[Any] = []
    with nothing_listens():  # the driver's quick start
        quiet = plain.run(scripted(fates, quiet_calls), MESSAGES, **PARAMS)
    with capture_events():  # a listener that hears every step
        heard = plain.run(scripted(fates, heard_calls), MESSAGES, **PARAMS)
    limited = timed.run(scripted(fates, timed_calls), MESSAGES, **PARAMS)
    assert comparable(quiet) == comparable(heard) == comparable(limited)
    assert quiet_calls == heard_calls == timed_calls
    assert len(quiet_calls) == quiet.calls  # the first reply is never asked for twice


@settings(max_examples=30, deadline=None)
@given(fates=st.lists(_FATES, min_size=1, max_size=3))
def test_the_async_driver_reaches_the_sync_drivers_outcome(fates: list[Any]) -> None:
    """For any sequence of replies and failures, the async driver (heard, or started quick)
    makes the same calls and reaches the same outcome as the sync driver."""
    healer = healjson.Healer(Item)

    def async_call(log: list[Any]) -> Callable[..., Any]:
        sync = scripted(fates, log)

        async def call(messages: Any, **params: Any) -> Any:
            await asyncio.sleep(0)
            return sync(messages, **params)

        return call

    sync_calls: list[Any] = []
    async_calls: list[Any] = []
    sync = healer.run(scripted(fates, sync_calls), MESSAGES, **PARAMS)
    awaited = asyncio.run(healer.arun(async_call(async_calls), MESSAGES, **PARAMS))
    with nothing_listens():  # both drivers' quick start
        quick_calls: list[Any] = []
        quick = asyncio.run(healer.arun(async_call(quick_calls), MESSAGES, **PARAMS))
    assert comparable(sync) == comparable(awaited) == comparable(quick)
    assert quick_calls == sync_calls
    assert sync_calls == async_calls


def _counted(mp: pytest.MonkeyPatch, module: Any, name: str) -> list[tuple[Any, Any]]:
    """The arguments (positional, keywords) of every call of `module.name` from now on."""
    made: list[tuple[Any, Any]] = []
    real = getattr(module, name)

    def counting(*args: Any, **kwargs: Any) -> Any:
        made.append((args, kwargs))
        return real(*args, **kwargs)

    mp.setattr(module, name, counting)
    return made


def _count_loop_states(mp: pytest.MonkeyPatch) -> list[tuple[Any, Any]]:
    """The loop states (`engine.RunState`) built from now on."""
    return _counted(mp, engine, "RunState")


def test_a_clean_sdk_completion_is_healed_in_one_call_without_the_loop() -> None:
    """A clean SDK completion heals in one call without building any loop state, with its usage
    and model read."""
    healer = healjson.Healer(Item)
    calls: list[Any] = []
    with pytest.MonkeyPatch.context() as mp:
        built = _count_loop_states(mp)
        outcome = healer.run(scripted([completion('{"name": "x", "qty": 5}')], calls), MESSAGES)
    assert isinstance(outcome, Healed)
    assert Item(name="x", qty=5) == outcome.value
    assert [] == built  # no loop state was built
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


def test_every_driver_serves_a_clean_first_reply_by_the_first_step() -> None:
    """Sync, async, streamed, with a logger listening, under a deadline, or judging a reply in
    hand (`validate`): one first step, no loop state. (Before, only a sync or async run with
    nothing listening and no deadline skipped the loop's state: a second route.)"""
    clean = '{"name": "x", "qty": 1}'

    async def acall(messages: Any, **params: Any) -> str:
        return clean

    def streamed(messages: Any, **params: Any) -> Any:
        return iter(['{"name": "x", ', '"qty": 1}'])

    healer = healjson.Healer(Item)
    timed = healjson.Healer(Item, policy=healjson.HealPolicy(deadline_s=60))
    runs: dict[str, Callable[[], Any]] = {
        "run": lambda: healer.run(lambda m, **p: clean, MESSAGES),
        "arun": lambda: asyncio.run(healer.arun(acall, MESSAGES)),
        "stream": lambda: _drained(healer.stream(streamed, MESSAGES)),
        "deadline": lambda: timed.run(lambda m, **p: clean, MESSAGES),
        "validate": lambda: healjson.validate(clean, Item),
    }
    for name, run in runs.items():
        with pytest.MonkeyPatch.context() as mp:
            built = _count_loop_states(mp)
            outcome = run()
            with capture_events():
                heard = run()
        assert isinstance(outcome, Healed), name
        assert isinstance(heard, Healed), name
        assert Item(name="x", qty=1) == outcome.value == heard.value, name
        assert [] == built, name


def _drained(stream: Any) -> Any:
    for _ in stream:
        pass
    return stream.outcome


def test_a_listener_gets_every_event_of_a_run_healed_at_the_first_step() -> None:
    """A run healed at the first step still sends its attempt and healed events, with its run id,
    to a listening logger."""
    healer = healjson.Healer(Item)
    with capture_events() as events:
        outcome = healer.run(lambda m, **p: '{"name": "x", "qty": 1}', MESSAGES)
    assert isinstance(outcome, Healed)
    assert ["healjson.attempt", "healjson.healed"] == [event["event"] for event in events]
    assert {outcome.run_id} == {event["run_id"] for event in events}


def test_a_declined_first_reply_continues_in_the_loop_with_the_same_run_id() -> None:
    """A first reply the first step declines continues in the loop, whose repair names the
    missing field."""
    calls: list[Any] = []
    healer = healjson.Healer(Item)
    outcome = healer.run(scripted(['{"name": "x"}', '{"name": "x", "qty": 2}'], calls), MESSAGES)
    assert isinstance(outcome, Healed)
    assert 2 == len(calls) == outcome.calls
    assert outcome.run_id
    assert "qty" in str(outcome.attempts[1].messages)  # the repair names the missing field


def test_an_error_in_the_callers_own_code_is_raised_as_the_loop_raises_it() -> None:
    """A bug in the caller's call function propagates from the first step as it does from the
    loop."""

    def broken(messages: Any, **params: Any) -> Any:
        raise KeyError("a bug in the caller's call function")

    with pytest.raises(KeyError):
        healjson.Healer(Item).run(broken, MESSAGES)


def test_a_provider_failure_on_the_first_call_degrades_with_its_reason() -> None:
    """A provider failure on the first call degrades with `api_error`."""
    healer = healjson.Healer(Item, policy=healjson.HealPolicy(max_attempts=2))
    outcome = healer.run(scripted(["raise-sdk", "raise-sdk"], []), MESSAGES)
    assert isinstance(outcome, Degraded)
    assert "api_error" == outcome.reason


def test_a_sync_call_that_returns_an_awaitable_is_awaited() -> None:
    """A sync call function that returns an awaitable has it awaited, and its answer heals."""

    async def reply() -> str:
        return '{"name": "x", "qty": 4}'

    outcome = healjson.Healer(Item).run(lambda m, **p: reply(), MESSAGES)
    assert isinstance(outcome, Healed)
    assert 4 == outcome.value.qty


def test_a_deadline_takes_the_loop_and_still_limits_the_first_call() -> None:
    """With a deadline, a slow first call is cut off by it and the run degrades with `timeout`."""

    def slow(messages: Any, **params: Any) -> str:
        time.sleep(3.0)
        return '{"name": "x", "qty": 1}'

    healer = healjson.Healer(Item, policy=healjson.HealPolicy(deadline_s=0.1))
    started = time.monotonic()
    outcome = healer.run(slow, MESSAGES)
    assert time.monotonic() - started < 2.0  # far from the call's 3 s, whatever the load
    assert isinstance(outcome, Degraded)
    assert "timeout" == outcome.reason


def test_a_quiet_run_builds_a_flow_only_for_a_declined_first_answer() -> None:
    """With nothing listening, a clean first answer is healed by the driver's quick start with
    no flow built; a declined answer, or a failed call, is handed as the first call's result
    to one flow, which never makes that call again."""
    healer = healjson.Healer(Item)
    for fates, flows, calls_made, kind in (
        (['{"name": "x", "qty": 1}'], 0, 1, Healed),
        (['{"name": "x"}', '{"name": "x", "qty": 2}'], 1, 2, Healed),
        (["raise-provider", '{"name": "x", "qty": 2}'], 1, 1, Degraded),
    ):
        calls: list[Any] = []
        with pytest.MonkeyPatch.context() as mp, nothing_listens():
            built = _counted(mp, start, "heal_flow")
            run = healer.start(MESSAGES, params=PARAMS)
            assert run.starts_quick
            outcome = healjson_drive(run, scripted(fates, calls))
        assert isinstance(outcome, kind), fates
        assert flows == len(built), fates
        assert all(kwargs["made"] is not None for _, kwargs in built)
        assert calls_made == len(calls) == outcome.calls


def healjson_drive(run: Any, call: Callable[..., Any]) -> Any:
    from healjson._core.run.drive import drive_sync

    return drive_sync(run, call)


def test_a_run_that_is_heard_timed_or_cached_does_not_start_quick() -> None:
    """A listener, a deadline or a response cache takes the flow from the start (its first
    call announced, limited or looked up); a run whose flow was read (a stream's) starts no
    quick call either."""
    plain = healjson.Healer(Item)
    timed = healjson.Healer(Item, policy=healjson.HealPolicy(deadline_s=60))
    cached = healjson.Healer(Item, cache=healjson.ResponseCache(":memory:"))
    with nothing_listens():
        assert plain.start(MESSAGES).starts_quick
        with capture_events():
            assert plain.start(MESSAGES).starts_quick is False
        assert timed.start(MESSAGES).starts_quick is False
        assert cached.start(MESSAGES).starts_quick is False
        run = plain.start(MESSAGES)
        flow = run.flow
        assert not run.starts_quick
        assert run.flow is flow


def test_quiet_agrees_with_what_a_run_would_send() -> None:
    """`events.quiet()` is True exactly when a run starting now would have no events."""
    import logging

    def agrees() -> bool:
        heard = run_events.for_run("r")
        if heard is not None:
            heard.release()
        return run_events.quiet() == (heard is None)

    assert agrees()  # pytest's log capture listens
    with nothing_listens():
        assert agrees()
        assert run_events.quiet()
        with capture_events():
            assert agrees()
            assert not run_events.quiet()
        logger = logging.getLogger("healjson")
        handler = logging.NullHandler()
        logger.addHandler(handler)
        try:
            assert agrees()
            assert not run_events.quiet()
        finally:
            logger.removeHandler(handler)
        assert agrees()
        assert run_events.quiet()
