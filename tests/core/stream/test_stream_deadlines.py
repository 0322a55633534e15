"""`HealPolicy(deadline_s=...)` bounds a streamed run's wall time, whatever the wire does.

The real openai, anthropic and google-genai SDKs over real HTTP against the scripted server on
127.0.0.1, sync and async: a slow first byte, a first event long after the headers, keep-alive
comments or Anthropic `ping` events the SDK drops, a byte trickle, an answer followed by
silence. Each ends at the deadline (within a small tolerance) as `Degraded(timeout)` with what
had arrived kept, the connection closed and no reading thread left behind; an answer whose
finish reason had come before the silence is the whole answer, healed at the deadline.
"""

from __future__ import annotations

import asyncio
import gc
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp
import anthropic
import openai
import pytest
from google import genai
from google.genai import types as genai_types
from pydantic import BaseModel, Field

import healjson
from healjson import Degraded, Healed, Healer, HealPolicy, Reason
from healjson.testing import ScriptedReply, ScriptedServer
from outcomes import comparable
from sdk_calls import TLS as _SSL
from sdk_calls import close_gemini

pytestmark = pytest.mark.slow  # each waits out a real deadline: the slow lane

USER = [{"role": "user", "content": "Extract it."}]
DEADLINE = 0.25  # far above the few ms the whole answer takes to arrive when nothing holds it
SLACK = 0.5  # the outcome comes within DEADLINE + SLACK (the wire would take seconds more)
LONG = 3.0  # how long each wire behaviour would keep the stream going


class Order(BaseModel):
    customer: str
    total: float


GOOD = '{"customer": "Ada", "total": 3.5}'

WIRES = {
    "slow first byte": ScriptedReply(GOOD, delay_s=LONG),
    "slow first event": ScriptedReply(GOOD, first_event_delay_s=LONG),
    "keep-alives before the first event": ScriptedReply(
        GOOD, first_event_delay_s=LONG, keepalive_every_s=0.05
    ),
    "keep-alives between events": ScriptedReply(GOOD, chunk_delay_s=LONG, keepalive_every_s=0.05),
    "byte trickle": ScriptedReply(GOOD, byte_delay_s=0.01),
    "silence after the answer": ScriptedReply(GOOD, hold_open_s=LONG),
    "keep-alives after the answer": ScriptedReply(GOOD, hold_open_s=LONG, keepalive_every_s=0.05),
}
POLICY = HealPolicy(deadline_s=DEADLINE)


def _openai(server: ScriptedServer, **options: Any) -> openai.OpenAI:
    http = openai.DefaultHttpxClient(verify=_SSL)
    return openai.OpenAI(
        base_url=server.base_url, api_key="k", max_retries=0, http_client=http, **options
    )


def _async_openai(server: ScriptedServer, **options: Any) -> openai.AsyncOpenAI:
    http = openai.DefaultAsyncHttpxClient(verify=_SSL)
    return openai.AsyncOpenAI(
        base_url=server.base_url, api_key="k", max_retries=0, http_client=http, **options
    )


@pytest.fixture(autouse=True)
def _no_collection_pause() -> Iterator[None]:
    """No automatic garbage collection while a test runs: a full one, over a heap holding three
    provider SDKs, stops every thread for a few tenths of a second (more on a loaded machine),
    which the timings here would count against the deadline. The garbage waits for the next
    collection after the test."""
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def _readers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "healjson-stream" and t.is_alive()]


def _no_reader_left(within: float = 1.0) -> bool:
    end = time.monotonic() + within
    for reader in _readers():
        reader.join(max(end - time.monotonic(), 0.0))
    return not _readers()


def _check(outcome: Any, elapsed: float, name: str) -> None:
    assert elapsed < DEADLINE + SLACK, f"{name}: {elapsed:.3f} s for a {DEADLINE} s deadline"
    assert 1 == outcome.calls
    if "after the answer" in name:  # the whole answer and its finish reason had arrived
        assert isinstance(outcome, Healed), outcome
        assert Order(customer="Ada", total=3.5) == outcome.value
        return
    assert isinstance(outcome, Degraded), outcome
    assert Reason.TIMEOUT == outcome.reason


def _timed_sync(stream: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    list(stream)
    return stream.outcome, time.perf_counter() - start


async def _timed_async(stream: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    [_ async for _ in stream]
    return stream.outcome, time.perf_counter() - start


def _closed_early(server: ScriptedServer) -> None:
    """The client went away before the stream's end (the server saw it close)."""
    server.wait_idle()
    request = server.requests[-1]
    assert not request.stream_completed


@pytest.mark.parametrize("name", list(WIRES))
def test_openai_sync_stream_ends_at_the_deadline(name: str) -> None:
    """A sync openai stream that stalls anywhere (first byte, first event, mid-stream) ends at
    the run's deadline, its reader closed."""
    with ScriptedServer([WIRES[name]]) as server:
        sdk = _openai(server, timeout=10)
        stream = healjson.wrap(sdk).chat.completions.create(
            model="m", messages=USER, response_model=Order, stream=True, policy=POLICY
        )
        outcome, elapsed = _timed_sync(stream)
        # a call still waiting for the response's headers has no stream to close yet: it
        # ends when they come (or, here, when the server stops)
        if name != "slow first byte":
            assert _no_reader_left()
            _closed_early(server)
        sdk.close()
    _check(outcome, elapsed, name)
    assert _no_reader_left()


@pytest.mark.parametrize("name", list(WIRES))
def test_openai_async_stream_ends_at_the_deadline(name: str) -> None:
    """An async openai stream that stalls anywhere ends at the run's deadline, closed early on
    the server's side."""

    async def main(server: ScriptedServer) -> tuple[Any, float]:
        sdk = _async_openai(server, timeout=10)
        async with sdk:
            stream = await healjson.wrap(sdk).chat.completions.create(
                model="m", messages=USER, response_model=Order, stream=True, policy=POLICY
            )
            return await _timed_async(stream)

    with ScriptedServer([WIRES[name]]) as server:
        outcome, elapsed = asyncio.run(main(server))
        _closed_early(server)
    _check(outcome, elapsed, name)


ANTHROPIC_WIRES = ["keep-alives between events", "keep-alives after the answer", "byte trickle"]


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("name", ANTHROPIC_WIRES)
def test_anthropic_stream_with_pings_ends_at_the_deadline(name: str, mode: str) -> None:
    """Anthropic's keep-alive is a `ping` event, which the SDK drops before healjson sees it."""
    healer = Healer(Order, policy=POLICY)
    with ScriptedServer([WIRES[name]]) as server:
        if mode == "sync":
            http = anthropic.DefaultHttpxClient(verify=_SSL)
            with anthropic.Anthropic(
                base_url=server.anthropic_base_url, api_key="k", http_client=http
            ) as sdk:

                def call(messages: Any, **params: Any) -> Any:
                    return sdk.messages.create(
                        model="claude-x", max_tokens=100, messages=messages, stream=True
                    )

                outcome, elapsed = _timed_sync(healer.stream(call, USER))
                assert _no_reader_left()
        else:

            async def main() -> tuple[Any, float]:
                http = anthropic.DefaultAsyncHttpxClient(verify=_SSL)
                sdk = anthropic.AsyncAnthropic(
                    base_url=server.anthropic_base_url, api_key="k", http_client=http
                )

                async def call(messages: Any, **params: Any) -> Any:
                    return await sdk.messages.create(
                        model="claude-x", max_tokens=100, messages=messages, stream=True
                    )

                async with sdk:
                    return await _timed_async(healer.astream(call, USER))

            outcome, elapsed = asyncio.run(main())
        _closed_early(server)
    _check(outcome, elapsed, name)


def _gemini(server: ScriptedServer, session: Any = None) -> Any:
    options = genai_types.HttpOptions(
        base_url=server.gemini_base_url,
        timeout=10_000,
        aiohttp_client=session,
        # the shared TLS context: the client builds three of its own otherwise
        client_args={"verify": _SSL},
        async_client_args={"verify": _SSL, "ssl": _SSL},
    )
    return genai.Client(api_key="k", http_options=options)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_gemini_stream_with_a_slow_first_event_ends_at_the_deadline(mode: str) -> None:
    """A Gemini stream whose first event is slow ends at the run's deadline, sync and async."""
    healer = Healer(Order, policy=POLICY)
    with ScriptedServer([WIRES["slow first event"]]) as server:
        if mode == "sync":
            sdk = _gemini(server)

            def call(messages: Any, **params: Any) -> Any:
                return sdk.models.generate_content_stream(model="g", contents="Extract it.")

            try:
                outcome, elapsed = _timed_sync(healer.stream(call, USER))
            finally:
                close_gemini(sdk)
        else:

            async def main() -> tuple[Any, float]:
                # a plain session: google-genai's own subclass draws a DeprecationWarning
                async with aiohttp.ClientSession() as session:
                    sdk = _gemini(server, session)

                    async def call(messages: Any, **params: Any) -> Any:
                        return await sdk.aio.models.generate_content_stream(
                            model="g", contents="Extract it."
                        )

                    try:
                        return await _timed_async(healer.astream(call, USER))
                    finally:
                        await sdk.aio.aclose()
                        sdk.close()

            outcome, elapsed = asyncio.run(main())
    _check(outcome, elapsed, "slow first event")
    assert _no_reader_left()  # the server's stop ended the read the SDK keeps to itself


# --- any iterable -------------------------------------------------------------------------------


def test_a_plain_iterable_that_stalls_ends_at_the_deadline() -> None:
    """A generator stuck between two pieces: the outcome comes on time with the first piece
    kept; the generator is closed once its pending piece arrives."""
    release = threading.Event()
    closed = threading.Event()

    def pieces() -> Iterator[str]:
        try:
            yield GOOD[:19]
            release.wait(LONG)
            yield GOOD[19:]
        finally:
            closed.set()

    def call(messages: Any, **params: Any) -> Iterator[str]:
        return pieces()

    outcome, elapsed = _timed_sync(Healer(Order, policy=POLICY).stream(call, USER))
    _check(outcome, elapsed, "stall")
    assert GOOD[:19] == outcome.raw_text
    assert {"customer": "Ada"} == outcome.partial
    release.set()
    assert closed.wait(1.0)
    assert _no_reader_left()


def test_an_async_iterable_that_stalls_ends_at_the_deadline() -> None:
    """An async iterable that stalls mid-answer ends at the deadline, keeping the text that
    arrived."""

    async def pieces() -> AsyncIterator[str]:
        yield GOOD[:19]
        await asyncio.sleep(LONG)
        yield GOOD[19:]

    async def call(messages: Any, **params: Any) -> AsyncIterator[str]:
        return pieces()

    outcome, elapsed = asyncio.run(_timed_async(Healer(Order, policy=POLICY).astream(call, USER)))
    _check(outcome, elapsed, "stall")
    assert GOOD[:19] == outcome.raw_text


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_stream_within_its_deadline_heals_as_without_one(mode: str) -> None:
    """A deadline that is not reached changes nothing: the same snapshots and value."""
    reply = ScriptedReply(GOOD, chunk_chars=5)
    runs: list[tuple[list[Any], Any]] = []
    for policy in (HealPolicy(), HealPolicy(deadline_s=30)):
        with ScriptedServer([reply]) as server:
            if mode == "sync":
                sdk = _openai(server)
                stream = healjson.wrap(sdk).chat.completions.create(
                    model="m", messages=USER, response_model=Order, stream=True, policy=policy
                )
                runs.append(([s.to_dict() for s in stream], stream.outcome))
                sdk.close()
            else:

                async def main(server: ScriptedServer, policy: HealPolicy) -> Any:
                    sdk = _async_openai(server)
                    async with sdk:
                        stream = await healjson.wrap(sdk).chat.completions.create(
                            model="m",
                            messages=USER,
                            response_model=Order,
                            stream=True,
                            policy=policy,
                        )
                        return [s.to_dict() async for s in stream], stream.outcome

                runs.append(asyncio.run(main(server, policy)))
    (plain, plain_outcome), (limited, limited_outcome) = runs
    assert plain == limited
    assert len(plain) >= 3
    for outcome in (plain_outcome, limited_outcome):
        assert isinstance(outcome, Healed)
        assert Order(customer="Ada", total=3.5) == outcome.value
    assert plain_outcome.usage == limited_outcome.usage


class Bounded(BaseModel):
    customer: str
    total: float = Field(le=5)


ENDINGS = {
    "cut": ScriptedReply(GOOD, chunk_chars=4, cut_after_chars=20),
    "error event": ScriptedReply(GOOD, chunk_chars=4, stream_error_after_chars=20),
    "early abort, then a repair": ScriptedReply('{"customer": "Ada", "total": 9, "x": 1}'),
}


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize("name", list(ENDINGS))
def test_a_deadline_not_reached_changes_no_outcome(name: str, mode: str) -> None:
    """Cuts, error events, an early abort and its repair: the same outcome with a deadline
    that is not reached as without one, and no reader left."""
    outcomes = []
    for policy in (HealPolicy(max_attempts=2), HealPolicy(max_attempts=2, deadline_s=30)):
        with ScriptedServer([ENDINGS[name], GOOD]) as server:
            if mode == "sync":
                sdk = _openai(server)
                stream = healjson.wrap(sdk).chat.completions.create(
                    model="m", messages=USER, response_model=Bounded, stream=True, policy=policy
                )
                list(stream)
                outcomes.append(stream.outcome)
                sdk.close()
            else:

                async def main(server: ScriptedServer, policy: HealPolicy) -> Any:
                    sdk = _async_openai(server)
                    async with sdk:
                        stream = await healjson.wrap(sdk).chat.completions.create(
                            model="m",
                            messages=USER,
                            response_model=Bounded,
                            stream=True,
                            policy=policy,
                        )
                        return await stream.finish()

                outcomes.append(asyncio.run(main(server, policy)))
    plain, limited = (comparable(outcome) for outcome in outcomes)
    assert plain == limited
    assert (name == "early abort, then a repair") == isinstance(outcomes[0], Healed)
    assert _no_reader_left()


def test_leaving_the_loop_early_stops_the_reader() -> None:
    """The caller leaves the loop (closes the stream) while the wire trickles: the reading
    thread ends and the connection is closed, with no deadline reached."""
    reply = ScriptedReply(GOOD, chunk_chars=3, chunk_delay_s=0.05)
    with ScriptedServer([reply]) as server:
        sdk = _openai(server)
        policy = HealPolicy(deadline_s=30)
        stream = healjson.wrap(sdk).chat.completions.create(
            model="m", messages=USER, response_model=Order, stream=True, policy=policy
        )
        with stream:
            next(iter(stream))
        assert _no_reader_left()
        server.wait_idle()
        assert not server.requests[-1].stream_completed
        sdk.close()


@pytest.mark.parametrize("streamed", [False, True], ids=["call", "stream"])
@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_under_a_deadline_is_raised_at_once_as_without_one(
    streamed: bool, interrupt: type[BaseException]
) -> None:
    """An interrupt the call or its stream raises (`KeyboardInterrupt`, `SystemExit`) is raised
    at once in the caller's thread under a deadline too: never waited out into a timeout."""

    def chunks() -> Iterator[str]:
        yield '{"sku": '
        raise interrupt

    def call(messages: Any, **params: Any) -> Any:
        if streamed:
            return chunks()
        raise interrupt

    healer = Healer(Order, policy=HealPolicy(deadline_s=LONG))

    def heal() -> Any:
        return healer.stream(call, "order?").finish() if streamed else healer.run(call, "order?")

    started = time.monotonic()
    with pytest.raises(interrupt):
        heal()
    assert time.monotonic() - started < LONG / 2
