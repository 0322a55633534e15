"""Streamed healing runs: the stream drivers and the objects a caller iterates.

The engine's flow (`heal_flow`) is the same as for any run: it yields `ModelCall`s and receives
`CallResult`s. The stream drivers differ from `drive_sync` / `drive_async` in one thing: when a
call returns a stream (an SDK `Stream`, any iterable of chunks), they read it chunk by chunk
through a `StreamSession` and hand the caller each snapshot (and each accepted list item) on
the way, then send the flow the whole reply. A call that returns a plain completion (a repair
made without streaming) is read as usual. So the caller's iterator continues through repairs
until the final outcome, and every attempt, flag and usage is on `.outcome` as for a run
without streaming.

A stream that fails part-way (a dropped connection, an error event, the run's deadline) is a
failed call with what had arrived kept (`raw_text` on the attempt, `partial` on `Degraded`).
With `HealPolicy.stream_abort`, a breach no later text can repair closes the stream at once
(`judge.py`). A stream that ends with no finish reason in the middle of a value (a number, a
word, an open string) is sent to the flow as cut, never healed from what arrived.

The run's deadline ends a streamed call on time whatever the wire does (a slow first byte,
keep-alives the SDK drops, a trickle, silence after the answer): the async driver cancels the
call and each pull of the stream at the deadline; the sync driver makes the call and reads its
stream on a worker thread (`pump`), waiting for each chunk no longer than the deadline.

Each step runs in the stream's own `contextvars.Context`: what healjson makes current while it
works (the attempt's OpenTelemetry span) is never current in the caller's loop body.
"""

from __future__ import annotations

import contextvars
import re
import time
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterable,
    Iterator,
)
from dataclasses import replace
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel

from healjson._core.outcome.outcome import Healed, Outcome
from healjson._core.redact import activate, deactivate, secrets_scope
from healjson._core.run.drive import call_failed, call_returned, gather, run_awaitables_sync
from healjson._core.run.engine import Flow
from healjson._core.stream.partial import Partial
from healjson._core.stream.pump import CHUNK, END, ERROR, STREAM, VALUE, Pump
from healjson._core.stream.session import StreamSession
from healjson._core.wire.delta import read_chunk, withdrawn
from healjson._core.wire.effects import AwaitAll, CallResult, DeadlineExceeded, ModelCall
from healjson._core.wire.reply import Reply

__all__ = [
    "AsyncHealStream",
    "AsyncItemStream",
    "HealStream",
    "ItemStatus",
    "ItemStream",
    "is_stream",
]

T = TypeVar("T")

ItemStatus = Literal["streamed", "repaired", "held", "retracted"]
"""What became of one item of a streamed list: in the final value as the first answer had it
(`streamed`: as it arrived, or healed locally without another call), valid only in a repaired
answer (`repaired`), never valid (`held`: in no value; the outcome says why), or handed out
during a stream and then replaced, because a repair's answer rewrote the whole list
(`retracted`: the final value's item at that index was handed out after it)."""

NewSession = Callable[[ModelCall], StreamSession]


class _Snapshot:
    __slots__ = ("attempt", "partial")

    def __init__(self, attempt: int, partial: Partial[Any]) -> None:
        self.attempt = attempt
        self.partial = partial


class _Item:
    __slots__ = ("attempt", "index", "value")

    def __init__(self, attempt: int, index: int, value: Any) -> None:
        self.attempt = attempt
        self.index = index
        self.value = value


class _Done:
    __slots__ = ("outcome",)

    def __init__(self, outcome: Outcome[Any]) -> None:
        self.outcome = outcome


Event = _Snapshot | _Item | _Done

HELD: Any = object()
"""The value of an `_Item` event for an item that failed its checks (held, not handed out)."""


def is_stream(value: Any) -> bool:
    """True for what a streamed call returns: iterable, but not a text, a mapping, a pydantic
    object (a completion) or a `Reply`."""
    if isinstance(value, str | bytes | bytearray | dict | Reply | BaseModel):
        return False
    return hasattr(value, "__iter__") or hasattr(value, "__aiter__")


# -- the per-chunk step both drivers share -------------------------------------------------------


class _Reading:
    """One streamed call being read: the session, the clock and what to hand the caller."""

    __slots__ = ("effect", "session", "start", "stop")

    def __init__(self, effect: ModelCall, session: StreamSession, start: float) -> None:
        self.effect = effect
        self.session = session
        self.start = start
        self.stop: CallResult | None = None

    def step(self, chunk: Any, abort: bool) -> list[Event]:
        """Read one chunk; `self.stop` is set when the stream must end here."""
        session = self.session
        try:
            delta = read_chunk(chunk)
        except TypeError as exc:  # a chunk of no known shape: the call failed (as for a reply)
            self.stop = self.failed(exc, provider=False)
            return []
        snapshot = session.feed(delta)
        number = self.effect.number
        events: list[Event] = []
        if snapshot is not None:
            events.append(_Snapshot(number, snapshot))
        if self.effect.items:
            # a per-item repair's answer: which items of the list its items stand for is known
            # only at its end (it may be the list again); its repaired items come after it
            session.new_items.clear()
            session.new_held.clear()
        if session.new_items:
            events += [_Item(number, index, value) for index, value in session.new_items]
            session.new_items.clear()
        if session.new_held:
            events += [_Item(number, index, HELD) for index in session.new_held]
            session.new_held.clear()
        if abort and session.abort:
            self.stop = CallResult(
                session.reply("aborted"),
                None,
                time.perf_counter() - self.start,
                aborted=session.abort,
                partial=session.data,
            )
        elif self.effect.timeout_s is not None and (
            time.perf_counter() - self.start > self.effect.timeout_s
        ):
            error = DeadlineExceeded("the run's deadline passed during the streamed answer")
            self.stop = self.failed(error)
        return events

    def failed(self, exc: Exception, *, provider: bool = True) -> CallResult:
        """The stream failed part-way (`call_failed` raises again what is not a provider's,
        unless `provider` is False: healjson's own finding, always a failed call)."""
        result = call_failed(exc, self.start, self.effect if provider else None)
        session = self.session
        if result.failure is not None and session.chars:
            failure = replace(result.failure, raw_text=session.text, partial=session.data)
            result = replace(result, failure=failure)
        return result

    def finished(self) -> CallResult:
        session = self.session
        elapsed = time.perf_counter() - self.start
        reply = withdrawn(session.reply())  # a refusal stop withdraws the text before it
        cut = session.cut_unknown()
        if cut is not None:  # no finish reason, and the text stops mid-value: maybe cut short
            return CallResult(reply, None, elapsed, aborted=(cut,), partial=session.data)
        return CallResult(reply, None, elapsed)


def _close(stream: Any) -> None:
    close = getattr(stream, "close", None)
    if callable(close):
        try:
            close()
        except Exception:  # closing a broken stream must not hide its outcome
            return


async def _aclose(stream: Any) -> None:
    close = getattr(stream, "aclose", None) or getattr(stream, "close", None)
    if callable(close):
        try:
            result = close()
            if hasattr(result, "__await__"):
                await result
        except Exception:
            return


# -- the sync driver -----------------------------------------------------------------------------


def _drive_stream_sync(
    flow: Flow, call: Callable[..., Any], new_session: NewSession, abort: bool
) -> Iterator[Event]:
    sent: Any = None
    while True:
        try:
            effect = flow.send(sent)
        except StopIteration as stop:
            yield _Done(stop.value)
            return
        if isinstance(effect, AwaitAll):
            sent = run_awaitables_sync(effect.awaitables, effect.timeout_s)
            continue
        start = time.perf_counter()
        if effect.timeout_s is not None:  # read on a worker, so the deadline holds
            sent = yield from _read_limited(effect, call, new_session, abort, start)
            continue
        try:
            value = call(list(map(dict, effect.messages)), **effect.params)
        except Exception as exc:
            sent = call_failed(exc, start, effect)
            continue
        if not is_stream(value):
            sent = call_returned(value, start)
            continue
        reading = _Reading(effect, new_session(effect), start)
        try:
            for chunk in value:
                yield from reading.step(chunk, abort)
                if reading.stop is not None:
                    break
        except Exception as exc:
            reading.stop = reading.failed(exc)
        finally:
            _close(value)
        sent = reading.stop or reading.finished()


def _read_limited(
    effect: ModelCall,
    call: Callable[..., Any],
    new_session: NewSession,
    abort: bool,
    start: float,
) -> Generator[Event, None, CallResult]:
    """One call under the run's deadline: made and read on a `Pump` worker, each chunk taken
    with a timed wait, so the deadline ends the call whatever the wire does (a slow first
    byte, keep-alives, a trickle, silence); what had arrived is kept."""
    deadline = start + (effect.timeout_s or 0.0)
    pump = Pump(call, effect, is_stream)
    reading: _Reading | None = None
    try:
        while True:
            got = pump.get(deadline - time.perf_counter())
            if got is None:
                where = "the model call" if reading is None else "the streamed answer"
                got = ERROR, DeadlineExceeded(f"the run's deadline passed during {where}")
            kind, payload = got
            if kind == CHUNK and reading is not None:
                yield from reading.step(payload, abort)
                if reading.stop is not None:
                    return reading.stop
            elif kind == STREAM:
                reading = _Reading(effect, new_session(effect), start)
            elif kind == END and reading is not None:
                return reading.finished()
            elif kind == VALUE:
                return call_returned(payload, start)
            elif reading is None:  # ERROR: the call failed, or ran past the deadline
                return call_failed(payload, start, effect)
            else:  # ERROR: the stream failed part-way
                return reading.failed(payload)
    finally:
        pump.stop()


async def _drive_stream_async(
    flow: Flow, call: Callable[..., Any], new_session: NewSession, abort: bool
) -> AsyncIterator[Event]:
    sent: Any = None
    while True:
        try:
            effect = flow.send(sent)
        except StopIteration as stop:
            yield _Done(stop.value)
            return
        if isinstance(effect, AwaitAll):
            sent = await gather(effect.awaitables, effect.timeout_s)
            continue
        start = time.perf_counter()
        deadline = None if effect.timeout_s is None else start + effect.timeout_s
        try:
            value = call(list(map(dict, effect.messages)), **effect.params)
            if hasattr(value, "__await__"):
                value = await (value if deadline is None else _within(value, deadline))
        except Exception as exc:
            sent = call_failed(exc, start, effect)
            continue
        if not is_stream(value):
            sent = call_returned(value, start)
            continue
        reading = _Reading(effect, new_session(effect), start)
        chunks = value if hasattr(value, "__aiter__") else _each_turn(value)
        if deadline is not None:
            chunks = _until(chunks, deadline)
        try:
            async for chunk in chunks:
                for event in reading.step(chunk, abort):
                    yield event
                if reading.stop is not None:
                    break
        except Exception as exc:
            reading.stop = reading.failed(exc)
        finally:
            await _aclose(value)
        sent = reading.stop or reading.finished()


async def _within(awaitable: Any, deadline: float) -> Any:
    """`awaitable`, cancelled at `deadline` (a `time.perf_counter()`): `DeadlineExceeded`."""
    import asyncio

    left = deadline - time.perf_counter()
    try:
        async with asyncio.timeout(max(left, 0.0)):
            return await awaitable
    except TimeoutError:
        raise DeadlineExceeded("the run's deadline passed during the model call") from None


async def _until(chunks: AsyncIterable[Any], deadline: float) -> AsyncIterator[Any]:
    """`chunks` until `deadline`: each pull of the stream is cancelled when the deadline
    passes (however the wire keeps the connection busy), and ends the stream with
    `DeadlineExceeded`. The wait covers only the pull, never the caller's loop body."""
    import asyncio

    iterator = aiter(chunks)
    while True:
        left = deadline - time.perf_counter()
        try:
            async with asyncio.timeout(max(left, 0.0)) as limit:
                chunk = await anext(iterator)
        except StopAsyncIteration:
            return
        except TimeoutError:
            if not limit.expired():
                raise
            error = "the run's deadline passed during the streamed answer"
            raise DeadlineExceeded(error) from None
        yield chunk


async def _each_turn(chunks: Iterable[Any]) -> AsyncIterator[Any]:
    """A plain iterable of chunks read on the event loop, yielding to other tasks after each."""
    import asyncio

    for chunk in chunks:
        yield chunk
        await asyncio.sleep(0)


# -- what the caller holds -----------------------------------------------------------------------


class _Tracker:
    """The caller-side state both stream objects share: the outcome and the items' fate.

    Items are handed out in index order: an item waits for every item before it, and a held
    item stops the rest of that answer's items (they come after the run, from the final value).
    """

    __slots__ = ("given", "item_status", "outcome", "ready", "stopped")

    def __init__(self) -> None:
        self.outcome: Outcome[Any] | None = None
        self.given: list[Any] = []
        """The items handed out, by index."""
        self.ready: dict[int, Any] = {}
        self.stopped: set[int] = set()
        """Attempts in which an item was held: the rest of their items wait for the end."""
        self.item_status: dict[int, ItemStatus] = {}

    def final_items(self) -> list[Any]:
        """At the end: the items of the final value not yet handed out, and the replacements
        of items a whole-list repair rewrote (those handed out are marked `retracted`)."""
        outcome = self.outcome
        self.ready.clear()
        if not isinstance(outcome, Healed) or not isinstance(outcome.value, list | tuple):
            for index in self.item_status:
                if index >= len(self.given):
                    self.item_status[index] = "held"
            return []
        first = _first_failures(outcome)
        rest = []
        for index, item in enumerate(outcome.value):
            if index < len(self.given):
                if self.given[index] != item:
                    self.item_status[index] = "retracted"
                    self.given[index] = item
                    rest.append(item)
                continue
            self.given.append(item)
            repaired = first is None or index in first
            self.item_status[index] = "repaired" if outcome.calls > 1 and repaired else "streamed"
            rest.append(item)
        for index in self.item_status:  # beyond the final list: in no value
            if index >= len(outcome.value):
                self.item_status[index] = "retracted" if index < len(self.given) else "held"
        return rest

    def took(self, event: _Item) -> list[Any]:
        """Note a streamed item; the items it lets out, in index order (none while an earlier
        one is missing, and none after a held one in the same answer)."""
        index, attempt = event.index, event.attempt
        if any(number != attempt for number, _ in self.ready.values()):
            self.ready.clear()  # an earlier answer's items, still waiting: never handed out
        if event.value is HELD:
            self.stopped.add(attempt)
            self.ready.clear()
            if index >= len(self.given):
                self.item_status.setdefault(index, "held")
            return []
        if index < len(self.given):
            if event.value != self.given[index]:  # this answer replaces one handed out: the
                self.stopped.add(attempt)  # rest of it comes at the end, after the replacement
                self.ready.clear()
            return []
        self.item_status.setdefault(index, "held")  # until it is handed out
        if attempt in self.stopped:
            return []
        self.ready[index] = (attempt, event.value)
        out = []
        while len(self.given) in self.ready:
            number, value = self.ready.pop(len(self.given))
            self.item_status[len(self.given)] = "streamed" if number == 1 else "repaired"
            self.given.append(value)
            out.append(value)
        return out


def _first_failures(outcome: Outcome[Any]) -> set[int] | None:
    """The items the first answer got wrong (by index), or None when its failure was not
    only in items (the whole list was repaired)."""
    found: set[int] = set()
    for diagnostic in outcome.attempts[0].diagnostics if outcome.attempts else ():
        match = _ITEM_PATH.match(diagnostic.path)
        if match is None:
            return None
        found.add(int(match.group(1)))
    return found


_ITEM_PATH = re.compile(r"\[(\d{1,9})\]")


class HealStream(Generic[T]):
    """A healed stream: iterate it for `Partial[T]` snapshots (or `items()` for a list target's
    validated items); when it is exhausted, `.outcome` is the run's `Healed | Degraded`.

    Iterate one of the two views (snapshots or items), once. Reading `.outcome` (or calling
    `finish()`) before the end reads the rest of the stream first. `close()` (or leaving a
    `with` block) abandons the stream and closes the connection.
    """

    def __init__(self, events: Iterator[Event]) -> None:
        self._events = events
        self._tracker = _Tracker()

    def _next_events(self) -> Iterator[Event]:
        for event in self._events:
            if isinstance(event, _Done):
                self._tracker.outcome = event.outcome
                return
            yield event

    def __iter__(self) -> Iterator[Partial[T]]:
        for event in self._next_events():
            if isinstance(event, _Snapshot):
                yield event.partial
            elif isinstance(event, _Item):
                self._tracker.took(event)

    def items(self) -> Iterator[Any]:
        """Each item of a list target, in index order, each one final: an item handed out is in
        the healed outcome's value at its index (the one exception, a repair that rewrites the whole
        list, is reported as `retracted` in `item_status` and its replacement follows). During a
        stream, an item comes as soon as it is complete and valid, only where no later text can
        change it (an answer that is one JSON value by construction: a tool call, a JSON-mode
        request; a plain `list[X]` target without list-level rules); the others come after the
        answer is judged, from the final value."""
        tracker = self._tracker
        for event in self._next_events():
            if isinstance(event, _Item):
                yield from tracker.took(event)
        yield from tracker.final_items()

    @property
    def outcome(self) -> Outcome[T]:
        """The run's outcome (reads the rest of the stream first, if any)."""
        return self.finish()

    def finish(self) -> Outcome[T]:
        """Read the rest of the stream; the outcome."""
        for event in self._next_events():
            if isinstance(event, _Item):
                self._tracker.took(event)
        if self._tracker.outcome is None:  # closed before the end
            raise RuntimeError("this stream was closed before its outcome was known")
        self._tracker.final_items()
        return self._tracker.outcome

    @property
    def item_status(self) -> dict[int, ItemStatus]:
        """For a list target: what became of each item, by index (final after the stream)."""
        return dict(self._tracker.item_status)

    def close(self) -> None:
        """Abandon the stream (the connection is closed)."""
        close = getattr(self._events, "close", None)
        if callable(close):
            close()

    def __enter__(self) -> HealStream[T]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncHealStream(Generic[T]):
    """`HealStream` for async code: `async for` snapshots (or `items()`), then `.outcome`
    (available once the stream is exhausted) or `await stream.finish()`. Awaiting the stream
    object itself gives it back, so `await client.chat.completions.create(..., stream=True)`
    works as with the SDK."""

    def __init__(self, events: AsyncIterator[Event]) -> None:
        self._events = events
        self._tracker = _Tracker()

    def __await__(self) -> Generator[Any, None, AsyncHealStream[T]]:
        if False:  # pragma: no cover - makes this a generator
            yield
        return self

    async def _next_events(self) -> AsyncIterator[Event]:
        async for event in self._events:
            if isinstance(event, _Done):
                self._tracker.outcome = event.outcome
                return
            yield event

    async def __aiter__(self) -> AsyncIterator[Partial[T]]:
        async for event in self._next_events():
            if isinstance(event, _Snapshot):
                yield event.partial
            elif isinstance(event, _Item):
                self._tracker.took(event)

    async def items(self) -> AsyncIterator[Any]:
        """As `HealStream.items`."""
        tracker = self._tracker
        async for event in self._next_events():
            if isinstance(event, _Item):
                for item in tracker.took(event):
                    yield item
        for item in tracker.final_items():
            yield item

    @property
    def outcome(self) -> Outcome[T]:
        """The run's outcome, once the stream is exhausted (else RuntimeError: `await
        stream.finish()` reads the rest first)."""
        if self._tracker.outcome is None:
            raise RuntimeError("the stream is not finished: use `await stream.finish()`")
        return self._tracker.outcome

    async def finish(self) -> Outcome[T]:
        """Read the rest of the stream; the outcome."""
        async for event in self._next_events():
            if isinstance(event, _Item):
                self._tracker.took(event)
        if self._tracker.outcome is None:
            raise RuntimeError("this stream was closed before its outcome was known")
        self._tracker.final_items()
        return self._tracker.outcome

    @property
    def item_status(self) -> dict[int, ItemStatus]:
        """As `HealStream.item_status`."""
        return dict(self._tracker.item_status)

    async def aclose(self) -> None:
        """Abandon the stream (the connection is closed)."""
        close = getattr(self._events, "aclose", None)
        if callable(close):
            await close()

    async def __aenter__(self) -> AsyncHealStream[T]:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class ItemStream(Generic[T]):
    """A list target's `HealStream` read item by item: iterating it is `HealStream.items()`
    (each item validated as soon as it is complete); `.outcome` and `.item_status` as there.
    What `create_iterable` returns."""

    def __init__(self, stream: HealStream[Any]) -> None:
        self.stream = stream

    def __iter__(self) -> Iterator[T]:
        return self.stream.items()

    @property
    def outcome(self) -> Outcome[list[T]]:
        """The run's outcome (reads the rest of the stream first, if any)."""
        return self.stream.finish()

    @property
    def item_status(self) -> dict[int, ItemStatus]:
        """What became of each item, by index."""
        return self.stream.item_status

    def close(self) -> None:
        """Abandon the stream."""
        self.stream.close()


class AsyncItemStream(Generic[T]):
    """`ItemStream` for async code (`async for item in ...`)."""

    def __init__(self, stream: AsyncHealStream[Any]) -> None:
        self.stream = stream

    def __await__(self) -> Generator[Any, None, AsyncItemStream[T]]:
        if False:  # pragma: no cover - makes this a generator
            yield
        return self

    def __aiter__(self) -> AsyncIterator[T]:
        return self.stream.items()

    @property
    def outcome(self) -> Outcome[list[T]]:
        """The run's outcome, once the stream is exhausted."""
        return self.stream.outcome

    async def finish(self) -> Outcome[list[T]]:
        """Read the rest of the stream; the outcome."""
        return await self.stream.finish()

    @property
    def item_status(self) -> dict[int, ItemStatus]:
        """What became of each item, by index."""
        return self.stream.item_status


def stream_sync(
    flow: Flow,
    call: Callable[..., Any],
    new_session: NewSession,
    abort: bool,
    scope: secrets_scope | None = None,
) -> HealStream[Any]:
    """The caller's `HealStream` over a flow; with `scope`, each step runs inside it."""
    events = _drive_stream_sync(flow, call, new_session, abort)
    return HealStream(_own_context(events if scope is None else _scoped(events, scope)))


def stream_async(
    flow: Flow,
    call: Callable[..., Any],
    new_session: NewSession,
    abort: bool,
    scope: secrets_scope | None = None,
) -> AsyncHealStream[Any]:
    """The caller's `AsyncHealStream` over a flow; with `scope`, each step runs inside it."""
    events = _drive_stream_async(flow, call, new_session, abort)
    return AsyncHealStream(_aown_context(events if scope is None else _ascoped(events, scope)))


def _own_context(events: Iterator[Event]) -> Iterator[Event]:
    """`events`, each step run in the stream's own `contextvars.Context` (a copy of the
    caller's when the iteration starts): what healjson makes current while it works (the
    attempt's OpenTelemetry span, which an instrumented SDK nests its span under) stays current
    from one step to the next, and never in the caller's loop body, whose own spans are not
    healjson's children."""
    context: contextvars.Context | None = None
    try:
        while True:
            context = context or contextvars.copy_context()
            try:
                event = context.run(next, events)
            except StopIteration:
                return
            yield event
    finally:
        close = getattr(events, "close", None)
        if callable(close):
            (context or contextvars.copy_context()).run(close)


async def _aown_context(events: AsyncIterator[Event]) -> AsyncIterator[Event]:
    """`_own_context` for an async stream: each step's coroutine is run in the context."""
    context: contextvars.Context | None = None
    try:
        while True:
            context = context or contextvars.copy_context()
            try:
                event = await _InContext(events.__anext__(), context)
            except StopAsyncIteration:
                return
            yield event
    finally:
        close = getattr(events, "aclose", None)
        if callable(close):
            await _InContext(close(), context or contextvars.copy_context())


class _InContext:
    """Await `awaitable` with each of its steps run in `context` (asyncio runs a task's steps
    in the task's own context; this keeps one awaitable's changes apart from it)."""

    __slots__ = ("awaitable", "context")

    def __init__(self, awaitable: Awaitable[Any], context: contextvars.Context) -> None:
        self.awaitable = awaitable
        self.context = context

    def __await__(self) -> Generator[Any, Any, Any]:
        coroutine, run = self.awaitable.__await__(), self.context.run
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            try:
                if thrown is None:
                    waited = run(coroutine.send, sent)
                else:
                    waited = run(coroutine.throw, thrown)
            except StopIteration as stop:
                return stop.value
            try:
                sent, thrown = (yield waited), None
            except BaseException as exc:  # a cancellation, delivered to the coroutine
                sent, thrown = None, exc


def _scoped(events: Iterator[Event], scope: secrets_scope) -> Iterator[Event]:
    """`events`, each step inside `scope`: a stream is read in the caller's loop, step by step,
    and the scope must hold exactly while healjson's code runs (not in the caller's loop body,
    which may even run in another thread or task)."""
    try:
        while True:
            token = activate(scope)
            try:
                event = next(events)
            except StopIteration:
                return
            finally:
                deactivate(token)
            yield event
    finally:
        token = activate(scope)
        try:
            close = getattr(events, "close", None)
            if callable(close):
                close()
        finally:
            deactivate(token)


async def _ascoped(events: AsyncIterator[Event], scope: secrets_scope) -> AsyncIterator[Event]:
    """`_scoped` for an async stream."""
    try:
        while True:
            token = activate(scope)
            try:
                event = await events.__anext__()
            except StopAsyncIteration:
                return
            finally:
                deactivate(token)
            yield event
    finally:
        token = activate(scope)
        try:
            close = getattr(events, "aclose", None)
            if callable(close):
                await close()
        finally:
            deactivate(token)
