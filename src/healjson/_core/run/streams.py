"""Streamed healing runs: the objects a caller iterates.

The engine's flow (`heal_flow`) is the same as for any run, and so are its drivers
(`drive.sync_steps`, `drive.async_steps`): given a reader (`stream.reading`), a driver reads a
call's stream chunk by chunk and hands the caller each event on the way — a JSON answer's
snapshots and accepted list items (`HealStream`), a tool-call answer's text (`ToolCallStream`)
— then sends the flow the whole reply. A call that returns a plain completion (a repair
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
A JSON answer whose finish reason came before the deadline is whole (the silence was the
server's wait to close the stream): it is judged as if the stream had ended there.
A tool-call stream keeps the deadline the same way: it is the same driver.

Each step runs in the stream's own `contextvars.Context`: what healjson makes current while it
works (the attempt's OpenTelemetry span) is never current in the caller's loop body.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Generator, Iterator
from typing import Any, Generic, TypeVar

from healjson._core.outcome.calls import ToolCalls
from healjson._core.outcome.outcome import Outcome
from healjson._core.redact import secrets_scope
from healjson._core.stream.events import Done, Event, Item, Snapshot, Text
from healjson._core.stream.items import ItemStatus, Tracker
from healjson._core.stream.partial import Partial
from healjson._core.stream.reading import Reader

from .contexts import aown_context, ascoped, own_context, scoped
from .drive import Flow, async_steps, sync_steps

__all__ = [
    "AsyncHealStream",
    "AsyncItemStream",
    "AsyncToolCallStream",
    "HealStream",
    "ItemStatus",
    "ItemStream",
    "ToolCallStream",
    "stream_async",
    "stream_sync",
]

T = TypeVar("T")

_NOT_FINISHED = (
    "the stream is not finished: iterate it to the end, or call `stream.finish()` to read the "
    "rest (`await stream.finish()` for an async stream)"
)
_NOT_FINISHED_ASYNC = (
    "the stream is not finished: iterate it to the end (`async for`), or `await "
    "stream.finish()` to read the rest; `.outcome` never reads the stream itself"
)
_CLOSED = "this stream was closed before its outcome was known"


class _Events:
    """What a sync caller's stream object shares (`HealStream`, `ToolCallStream`): the driver's
    events read until `Done` (its outcome kept by `_end`), and `close()`, which holds from any
    thread: one reading the stream stops at its next event, where the stream is closed."""

    def __init__(self, events: Iterator[Event]) -> None:
        self._events = events
        self._abandoned = False  # closed while another thread read it: it stops there

    def _end(self, outcome: Outcome[Any]) -> None:
        """Keep the run's outcome (its `Done` came): each stream keeps it its own way."""
        raise NotImplementedError

    def _next_events(self) -> Iterator[Event]:
        for event in self._events:
            if isinstance(event, Done):
                self._end(event.outcome)
                return
            if self._abandoned:  # closed by another thread: closed here, where it is read
                self.close()
                return
            yield event

    def close(self) -> None:
        """Abandon the stream (the connection is closed). From another thread while one reads
        it: the reader stops at its next event, and the stream is closed there."""
        if getattr(self._events, "gi_running", False):  # being read by another thread
            self._abandoned = True
            return
        close = getattr(self._events, "close", None)
        if callable(close):
            close()


class _AsyncEvents:
    """`_Events` for async code (`AsyncHealStream`, `AsyncToolCallStream`): `aclose()` holds
    from any task: one reading the stream stops at its next event, where it is closed."""

    def __init__(self, events: AsyncIterator[Event]) -> None:
        self._events = events
        self._abandoned = False  # closed while another task read it: it stops there

    def _end(self, outcome: Outcome[Any]) -> None:
        """As `_Events._end`."""
        raise NotImplementedError

    async def _next_events(self) -> AsyncIterator[Event]:
        async for event in self._events:
            if isinstance(event, Done):
                self._end(event.outcome)
                return
            if self._abandoned:  # closed by another task: closed here, where it is read
                await self.aclose()
                return
            yield event

    async def aclose(self) -> None:
        """Abandon the stream (the connection is closed). From another task while one reads
        it: the reader stops at its next event, and the stream is closed there."""
        if getattr(self._events, "ag_running", False):  # being read by another task
            self._abandoned = True
            return
        close = getattr(self._events, "aclose", None)
        if callable(close):
            await close()


class HealStream(_Events, Generic[T]):
    """A healed stream: iterate it for `Partial[T]` snapshots (or `items()` for a list target's
    validated items); when it is exhausted, `.outcome` is the run's `Healed | Degraded`.

    Iterate one of the two views (snapshots or items), once. `.outcome` is there once the
    stream is exhausted; `finish()` reads the rest first (reading `.outcome` before the end
    raises `RuntimeError` rather than reading the stream behind your back). `close()` (or
    leaving a `with` block) abandons the stream and closes the connection.
    """

    def __init__(self, events: Iterator[Event]) -> None:
        super().__init__(events)
        self._tracker = Tracker()

    def _end(self, outcome: Outcome[Any]) -> None:
        self._tracker.outcome = outcome

    def __iter__(self) -> Iterator[Partial[T]]:
        for event in self._next_events():
            if isinstance(event, Snapshot):
                yield event.partial
            elif isinstance(event, Item):
                self._tracker.took(event)
        if self._tracker.outcome is not None:  # the end: `item_status` final, as in `items()`
            self._tracker.final_items()

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
            if isinstance(event, Item):
                yield from tracker.took(event)
        yield from tracker.final_items()

    @property
    def outcome(self) -> Outcome[T]:
        """The run's outcome, once the stream is exhausted (else RuntimeError: `finish()`
        reads the rest first: a property never reads the network behind the caller's back)."""
        if self._tracker.outcome is None:
            raise RuntimeError(_NOT_FINISHED)
        return self._tracker.outcome

    def finish(self) -> Outcome[T]:
        """Read the rest of the stream; the outcome."""
        for event in self._next_events():
            if isinstance(event, Item):
                self._tracker.took(event)
        if self._tracker.outcome is None:  # closed before the end
            raise RuntimeError(_CLOSED)
        self._tracker.final_items()
        return self._tracker.outcome

    @property
    def item_status(self) -> dict[int, ItemStatus]:
        """For a list target: what became of each item, by index (final after the stream)."""
        return dict(self._tracker.item_status)

    def __enter__(self) -> HealStream[T]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncHealStream(_AsyncEvents, Generic[T]):
    """`HealStream` for async code: `async for` snapshots (or `items()`), then `.outcome`
    (available once the stream is exhausted) or `await stream.finish()`. Awaiting the stream
    object itself gives it back, so `await client.chat.completions.create(..., stream=True)`
    works as with the SDK."""

    def __init__(self, events: AsyncIterator[Event]) -> None:
        super().__init__(events)
        self._tracker = Tracker()

    def _end(self, outcome: Outcome[Any]) -> None:
        self._tracker.outcome = outcome

    def __await__(self) -> Generator[Any, None, AsyncHealStream[T]]:
        if False:  # pragma: no cover - makes this a generator
            yield
        return self

    async def __aiter__(self) -> AsyncIterator[Partial[T]]:
        async for event in self._next_events():
            if isinstance(event, Snapshot):
                yield event.partial
            elif isinstance(event, Item):
                self._tracker.took(event)
        if self._tracker.outcome is not None:  # the end: `item_status` final, as in `items()`
            self._tracker.final_items()

    async def items(self) -> AsyncIterator[Any]:
        """As `HealStream.items`."""
        tracker = self._tracker
        async for event in self._next_events():
            if isinstance(event, Item):
                for item in tracker.took(event):
                    yield item
        for item in tracker.final_items():
            yield item

    @property
    def outcome(self) -> Outcome[T]:
        """The run's outcome, once the stream is exhausted (else RuntimeError: `await
        stream.finish()` reads the rest first)."""
        if self._tracker.outcome is None:
            raise RuntimeError(_NOT_FINISHED_ASYNC)
        return self._tracker.outcome

    async def finish(self) -> Outcome[T]:
        """Read the rest of the stream; the outcome."""
        async for event in self._next_events():
            if isinstance(event, Item):
                self._tracker.took(event)
        if self._tracker.outcome is None:
            raise RuntimeError(_CLOSED)
        self._tracker.final_items()
        return self._tracker.outcome

    @property
    def item_status(self) -> dict[int, ItemStatus]:
        """As `HealStream.item_status`."""
        return dict(self._tracker.item_status)

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
        """The run's outcome, once the stream is exhausted (else RuntimeError)."""
        return self.stream.outcome

    def finish(self) -> Outcome[list[T]]:
        """Read the rest of the stream; the outcome."""
        return self.stream.finish()

    @property
    def item_status(self) -> dict[int, ItemStatus]:
        """What became of each item, by index."""
        return self.stream.item_status

    def close(self) -> None:
        """Abandon the stream."""
        self.stream.close()

    def __enter__(self) -> ItemStream[T]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


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

    async def aclose(self) -> None:
        """Abandon the stream (the connection is closed)."""
        await self.stream.aclose()

    async def __aenter__(self) -> AsyncItemStream[T]:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class ToolCallStream(_Events):
    """A healed tool-call run whose calls stream: iterate it for the answer's message text (the
    pieces of every call of the run: in practice the first), then read `.outcome`, the run's
    `Outcome[ToolCalls]` exactly as without `stream=True` (the calls are judged once each stream
    is whole). `.outcome` is there once the stream is exhausted (`finish()` reads the rest
    first); `close()` (or leaving a `with` block) abandons the stream and closes the
    connection, from any thread."""

    def __init__(self, events: Iterator[Event]) -> None:
        super().__init__(events)
        self._outcome: Outcome[ToolCalls] | None = None

    def _end(self, outcome: Outcome[Any]) -> None:
        self._outcome = outcome

    def __iter__(self) -> Iterator[str]:
        for event in self._next_events():
            if isinstance(event, Text):
                yield event.text

    @property
    def outcome(self) -> Outcome[ToolCalls]:
        """The run's outcome, once the stream is exhausted (else RuntimeError: `finish()`
        reads the rest first)."""
        if self._outcome is None:
            raise RuntimeError(_NOT_FINISHED)
        return self._outcome

    def finish(self) -> Outcome[ToolCalls]:
        """Read the rest of the streams; the outcome."""
        for _ in self:
            pass
        if self._outcome is None:
            raise RuntimeError(_CLOSED)
        return self._outcome

    def __enter__(self) -> ToolCallStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncToolCallStream(_AsyncEvents):
    """`ToolCallStream` for an async client: `async for` the text, then `.outcome` (once the
    stream is exhausted) or `await stream.finish()`. Awaiting the stream gives it back."""

    def __init__(self, events: AsyncIterator[Event]) -> None:
        super().__init__(events)
        self._outcome: Outcome[ToolCalls] | None = None

    def _end(self, outcome: Outcome[Any]) -> None:
        self._outcome = outcome

    def __await__(self) -> Generator[Any, None, AsyncToolCallStream]:
        if False:  # pragma: no cover - makes this a generator
            yield
        return self

    async def __aiter__(self) -> AsyncIterator[str]:
        async for event in self._next_events():
            if isinstance(event, Text):
                yield event.text

    @property
    def outcome(self) -> Outcome[ToolCalls]:
        """The run's outcome, once the stream is exhausted (else RuntimeError: `await
        stream.finish()` reads the rest first)."""
        if self._outcome is None:
            raise RuntimeError(_NOT_FINISHED_ASYNC)
        return self._outcome

    async def finish(self) -> Outcome[ToolCalls]:
        """Read the rest of the streams; the outcome."""
        async for _ in self:
            pass
        if self._outcome is None:
            raise RuntimeError(_CLOSED)
        return self._outcome

    async def __aenter__(self) -> AsyncToolCallStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def caller_events(
    flow: Flow[Any],
    call: Callable[..., Any],
    reader: Reader,
    scope: secrets_scope | None = None,
) -> Iterator[Event]:
    """The sync driver's events for a caller's stream object: each step in the stream's own
    context, and inside `scope` (a client's secrets) when one is given."""
    events = sync_steps(flow, call, reader)
    return own_context(events if scope is None else scoped(events, scope))


def caller_events_async(
    flow: Flow[Any],
    call: Callable[..., Any],
    reader: Reader,
    scope: secrets_scope | None = None,
) -> AsyncIterator[Event]:
    """`caller_events` with the async driver."""
    events = async_steps(flow, call, reader)
    return aown_context(events if scope is None else ascoped(events, scope))


def stream_sync(
    flow: Flow[Any],
    call: Callable[..., Any],
    reader: Reader,
    scope: secrets_scope | None = None,
) -> HealStream[Any]:
    """The caller's `HealStream` over a flow; with `scope`, each step runs inside it."""
    return HealStream(caller_events(flow, call, reader, scope))


def stream_async(
    flow: Flow[Any],
    call: Callable[..., Any],
    reader: Reader,
    scope: secrets_scope | None = None,
) -> AsyncHealStream[Any]:
    """The caller's `AsyncHealStream` over a flow; with `scope`, each step runs inside it."""
    return AsyncHealStream(caller_events_async(flow, call, reader, scope))
