"""Readers a driver is given for a streamed call: chunk by chunk into events, then the reply.

A driver (`run.drive`) makes each model call the same way whether the answer streams or not.
When the call returns a stream and the run was given a reader, the driver opens one `Reading`
per call and feeds it each chunk: the reading hands back the events for the caller (snapshots
and items of a JSON answer, text pieces of a tool-call answer) and, at the end, the whole
reply as the flow's `CallResult`. A reading may end a stream early (`stop`: an answer no more
tokens can save); what a stream that failed part-way had read is kept on its failure
(`salvage`). A stream that ended early (failed, stopped, or cut with no finish reason) keeps
as its data what L1 keeps of a reply cut by the token limit, only what the model finished
(`StreamSession.data`), never a value still arriving. Deadlines, closing the stream and the
call itself are the driver's.

Every way a streamed call ends (whole, stopped early, failed) gets its usage here, by one rule
(`wire.reply.call_usage`): the call counts as a request; the counts the provider reported as
final are kept exact; else what it reported is kept and the rest estimated from the request
and what arrived, marked `estimated`.

- `JsonReader`: one `StreamSession` per call (the incremental reader, early judgement,
  accepted or held items); a stream that ends with no finish reason in the middle of a value
  is sent to the flow as cut; an answer that degenerates (a whitespace run, a loop: the
  `wire.degenerate.Guard` of the policy's bounds) is cut off at once.
- `CallsReader`: a provider's tool-call collector per call (the calls gathered whole, by
  index; the message text handed out as it arrives).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Protocol

from healjson._core.diagnostic import Diagnostic, describe_exception, qualified_name
from healjson._core.wire.degenerate import Guard
from healjson._core.wire.delta import ChunkReader, Delta, NotUtf8, withdrawn
from healjson._core.wire.effects import (
    CallFailure,
    CallResult,
    ModelCall,
    ProviderError,
    new_call_result,
)
from healjson._core.wire.reply import Reply, Usage, call_usage

from .events import HELD, Event, Item, Snapshot, Text
from .session import StreamSession

__all__ = [
    "NO_EVENT",
    "CallsReader",
    "Collector",
    "JsonReader",
    "Reader",
    "Reading",
    "carried_nothing",
]


class Reading(Protocol):
    """One streamed call being read."""

    stop: CallResult | None
    """Set when the stream must end here (the result the flow gets)."""

    def feed(self, chunk: Any) -> list[Event]:
        """Read one chunk; the events it makes for the caller."""
        ...

    def finished(self) -> CallResult:
        """The stream ended: the whole reply."""
        ...

    def salvage(self, result: CallResult) -> CallResult:
        """A failed call's result, with what had arrived kept on its failure."""
        ...


class Reader(Protocol):
    """What a driver is given for a run whose calls stream: a `Reading` per call."""

    def open(self, effect: ModelCall, start: float) -> Reading:
        """Start reading the stream of `effect`'s call (made at `start`, a `perf_counter`)."""
        ...


def _failed(exc: Exception, start: float) -> CallResult:
    """A chunk no format reads: healjson's own finding, a failed call (`api_error`)."""
    failure = CallFailure("api_error", describe_exception(exc), error_type=qualified_name(exc))
    return new_call_result(None, failure, time.perf_counter() - start)


NO_EVENT = (
    "the stream carried no event (no text, tool call, refusal, reasoning, finish reason, usage "
    "or model): no reply"
)
"""Why a stream that carried nothing failed (see `carried_nothing`)."""


def carried_nothing(reply: Reply, reported: Usage | None) -> bool:
    """True for a stream that ended with nothing of a reply in it: no chunk at all (an SDK that
    skips body lines that are no event reads a plain JSON body as an empty stream), or only
    chunks carrying nothing (an SDK may read such a body as one empty chunk): no text, tool
    call, refusal, reasoning, finish reason, usage (`reported`) or model. A provider's stream
    names at least its model or its finish, so this is the provider's failure (`api_error`),
    never an empty answer of the model's (checked once, at the stream's end)."""
    return (
        reported is None
        and reply.model is None
        and reply.finish_reason is None
        and not reply.content
        and not reply.tool_calls
        and not reply.refusal
        and not reply.reasoning
    )


def _no_event(start: float) -> CallResult:
    failure = CallFailure("api_error", NO_EVENT)
    return new_call_result(None, failure, time.perf_counter() - start)


class JsonReader:
    """Streams of a JSON answer: a session per call (`new_session`); with `abort`, a breach no
    later text can repair ends the stream at once; `guard`: the degenerate-output bounds
    (whitespace run, repeats; None turns one off), an answer past them is cut off at once."""

    __slots__ = ("abort", "guard", "new_session")

    def __init__(
        self,
        new_session: Callable[[ModelCall], StreamSession],
        abort: bool,
        guard: tuple[int | None, int | None] = (None, None),
    ) -> None:
        self.new_session = new_session
        self.abort = abort
        self.guard = guard

    def open(self, effect: ModelCall, start: float) -> JsonReading:
        """One call's reading."""
        guard = Guard(*self.guard)
        return JsonReading(
            effect, self.new_session(effect), start, self.abort, guard if guard.active else None
        )


class JsonReading:
    """One streamed JSON answer being read: the session, the clock, the caller's events, the
    degenerate-output guard, the chunks' reader (`ChunkReader`: a stream's bytes one UTF-8
    text; bytes that are not UTF-8 fail the call, never read as U+FFFD)."""

    __slots__ = ("abort", "chunks", "effect", "guard", "session", "start", "stop")

    def __init__(
        self,
        effect: ModelCall,
        session: StreamSession,
        start: float,
        abort: bool,
        guard: Guard | None = None,
    ) -> None:
        self.effect = effect
        self.session = session
        self.start = start
        self.abort = abort
        self.guard = guard
        self.chunks = ChunkReader()
        self.stop: CallResult | None = None

    def feed(self, chunk: Any) -> list[Event]:
        """Read one chunk: a snapshot when the answer grew, items accepted or held."""
        session = self.session
        try:
            delta = self.chunks.read(chunk)
        except (TypeError, NotUtf8) as exc:  # no known shape, or bytes that are no UTF-8 text:
            if isinstance(exc, NotUtf8) and exc.text:  # the call failed (as for a reply), what
                session.feed(Delta(text=exc.text))  # arrived before the fault kept
            self.stop = self.salvage(_failed(exc, self.start))
            return []
        snapshot = session.feed(delta)
        number = self.effect.number
        events: list[Event] = []
        if snapshot is not None:
            events.append(Snapshot(number, snapshot))
        if self.effect.items:
            # a per-item repair's answer: which items of the list its items stand for is known
            # only at its end (it may be the list again); its repaired items come after it
            session.new_items.clear()
            session.new_held.clear()
        if session.new_items:
            events += [Item(number, index, value) for index, value in session.new_items]
            session.new_items.clear()
        if session.new_held:
            events += [Item(number, index, HELD) for index in session.new_held]
            session.new_held.clear()
        if self.abort and session.abort:
            self.stop = self._cut(session.abort)
        elif self.guard is not None:
            said = delta.text or delta.tool_arguments
            if delta.tool_pieces:  # further calls' pieces in the chunk: each read too
                said += "".join([piece.tool_arguments for piece in delta.tool_pieces])
            if not said and delta.tool_calls:  # whole calls: their arguments are read too
                said = "".join(call.arguments for call in delta.tool_calls)
            found = self.guard.feed(said)
            if found is not None:  # degenerate: the rest of the stream is not read
                self.stop = self._cut((found,))
        return events

    def _cut(self, why: tuple[Diagnostic, ...]) -> CallResult:
        """The stream ends here, for `why`: what had arrived, judged by it."""
        session = self.session
        elapsed = time.perf_counter() - self.start
        reply = session.reply("aborted", session.spent(self.effect.messages))
        return CallResult(reply, None, elapsed, aborted=why, partial=session.data)

    def finished(self) -> CallResult:
        """The whole reply; one that stops mid-value with no finish reason is sent as cut, a
        stream that carried nothing as the provider's failure (`carried_nothing`), one whose
        bytes end in the middle of a character as unreadable (`NotUtf8`)."""
        session = self.session
        try:
            self.chunks.end()
        except NotUtf8 as exc:
            return self.salvage(_failed(exc, self.start))
        elapsed = time.perf_counter() - self.start
        # a refusal stop withdraws the text before it
        reply = withdrawn(session.reply(None, session.spent(self.effect.messages)))
        if carried_nothing(reply, session.usage):
            return self.salvage(_no_event(self.start))
        cut = session.cut_unknown()
        if cut is not None:  # no finish reason, and the text stops mid-value: maybe cut short
            return CallResult(reply, None, elapsed, aborted=(cut,), partial=session.data)
        return CallResult(reply, None, elapsed)

    def salvage(self, result: CallResult) -> CallResult:
        """What had arrived (its text, and its data as L1 keeps a cut reply's: `session.data`)
        and what the call spent kept on the failure. The run's deadline passing after the
        answer's finish reason came (a server silent before it closes the stream) fails
        nothing: the answer was whole, and is judged as a stream that ended there."""
        failure = result.failure
        if failure is None:
            return result
        session = self.session
        if failure.deadline and session.finish_reason is not None:
            return self.finished()
        usage = session.spent(self.effect.messages)
        if session.chars:
            failure = replace(failure, raw_text=session.text, partial=session.data, usage=usage)
        else:
            failure = replace(failure, usage=usage)
        return replace(result, failure=failure)


class Collector(Protocol):
    """A provider's tool-call stream collector (a `ToolDialect`'s). One whose `reply` refuses
    a stream that never ended (its format's final event missing) has `received()` too: what
    had arrived, kept on the call's failure (`CallsReading.salvage`)."""

    def feed(self, chunk: Any) -> str:
        """Take one chunk; the answer text it carries ("" for none)."""
        ...

    def reply(self) -> Reply:
        """The whole answer read so far."""
        ...


class CallsReader:
    """Streams of a tool-call answer: a collector per call (`collector()`), the message text
    handed out piece by piece; the calls are judged once each stream is whole."""

    __slots__ = ("collector",)

    def __init__(self, collector: Callable[[], Collector]) -> None:
        self.collector = collector

    def open(self, effect: ModelCall, start: float) -> CallsReading:
        """One call's reading."""
        return CallsReading(self.collector(), start, effect)


class CallsReading:
    """One streamed tool-call answer being read."""

    __slots__ = ("collector", "effect", "start", "stop")

    def __init__(self, collector: Collector, start: float, effect: ModelCall) -> None:
        self.collector = collector
        self.start = start
        self.effect = effect
        self.stop: CallResult | None = None

    def feed(self, chunk: Any) -> list[Event]:
        """Take one chunk; its text, if any."""
        piece = self.collector.feed(chunk)
        return [Text(piece)] if piece else []

    def finished(self) -> CallResult:
        """The whole answer: the text and every call, and what the call spent (a stream that
        carried nothing: the provider's failure, `carried_nothing`)."""
        try:
            reply = self.collector.reply()
        except ProviderError as exc:  # a stream that ended before its answer was whole
            return self.salvage(_failed(exc, self.start))
        if carried_nothing(reply, reply.usage):
            return self.salvage(_no_event(self.start))
        reply = replace(reply, usage=_spent(reply, self.effect))
        return new_call_result(reply, None, time.perf_counter() - self.start)

    def salvage(self, result: CallResult) -> CallResult:
        """A failed tool-call stream keeps its failure, what the call spent (a collector that
        cannot say: the failure's own count, e.g. the usage a final event that is no reply
        reported, else the request alone) and what had arrived: its text and its calls."""
        if result.failure is None:
            return result
        collector = self.collector
        received = getattr(collector, "received", None)
        try:
            answer: Reply | None = received() if callable(received) else collector.reply()
        except Exception:  # a collector that cannot say what it read
            answer = None
        if answer is None:
            usage = result.failure.usage or call_usage(None, self.effect.messages, 0)
            return replace(result, failure=replace(result.failure, usage=usage))
        failure = replace(result.failure, usage=_spent(answer, self.effect))
        if answer.content or answer.tool_calls:  # what had arrived, kept as a JSON stream's is
            failure = replace(failure, raw_text=answer.content, tool_calls=answer.tool_calls)
        return replace(result, failure=failure)


def _spent(reply: Reply, effect: ModelCall) -> Usage:
    """What a streamed call whose answer so far is `reply` spent (`call_usage`)."""
    usage = reply.usage
    if usage is not None and not usage.estimated:
        return call_usage(usage, effect.messages, 0, reply.model)
    texts = (reply.content, reply.refusal, reply.reasoning)
    received = sum(len(text) for text in texts if text)
    received += sum(len(call.arguments) for call in reply.tool_calls)
    return call_usage(usage, effect.messages, received, reply.model)
