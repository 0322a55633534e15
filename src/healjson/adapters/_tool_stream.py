"""`create(..., heal_tools=True, stream=True)`: the caller's tool calls healed, the text streamed.

Every model call of the run streams (repairs too). Iterating the stream yields the answer's
message text as it arrives (`str` pieces, of every call of the run: in practice the first);
the calls are judged once each stream is complete (a call is one JSON value only when whole),
and `.outcome` (`await stream.finish()` for an async client) is the run's `Outcome[ToolCalls]`,
exactly as without `stream=True`. A stream that fails part-way is a failed call (the provider's
failure: the run degrades with `api_error`, `timeout`, ...). An endpoint that answers a whole
completion to a streamed request is read as one.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Generator, Iterator
from typing import Any

from healjson._core.outcome.calls import ToolCalls
from healjson._core.outcome.outcome import Outcome
from healjson._core.redact import secrets_scope
from healjson._core.run.drive import call_failed, gather, run_awaitables_sync
from healjson._core.run.streams import is_stream
from healjson._core.wire.effects import AwaitAll, CallResult, ModelCall, new_call_result
from healjson._core.wire.reply import to_reply
from healjson._providers.provider import Collector as Reading

__all__ = ["AsyncToolCallStream", "Collector", "ToolCallStream"]

Collector = Callable[[], Reading]
"""Makes a provider's reader of a streamed answer, call by call (its `ToolDialect.collector`)."""
Start = Callable[[ModelCall], Any]
"""A model call's request made (what the client's method returned: a stream, or a whole answer
from an endpoint that does not stream)."""
Flow = Generator[ModelCall | AwaitAll, Any, Outcome[ToolCalls]]


class ToolCallStream:
    """A healed tool-call run whose calls stream: iterate for the text, then `.outcome`."""

    def __init__(
        self, flow: Flow, start: Start, collector: Collector, client: Any, params: Any
    ) -> None:
        self._flow = flow
        self._start = start
        self._collector = collector
        self._scope = (client, params)
        self._outcome: Outcome[ToolCalls] | None = None

    def __iter__(self) -> Iterator[str]:
        if self._outcome is not None:
            return
        flow = self._flow
        sent: Any = None
        try:
            while True:
                with secrets_scope(*self._scope):
                    effect = flow.send(sent)
                if isinstance(effect, AwaitAll):
                    sent = run_awaitables_sync(effect.awaitables, effect.timeout_s)
                    continue
                sent = yield from self._call(effect)
        except StopIteration as stop:
            self._outcome = stop.value

    def _call(self, effect: ModelCall) -> Generator[str, None, CallResult]:
        started = time.perf_counter()
        collector = self._collector()
        try:
            value = self._start(effect)
            if not is_stream(value):
                return new_call_result(to_reply(value), None, time.perf_counter() - started)
            try:
                for chunk in value:
                    piece = collector.feed(chunk)
                    if piece:
                        yield piece
            finally:
                _close(value)
            reply = collector.reply()
        except Exception as exc:
            with secrets_scope(*self._scope):
                return call_failed(exc, started, effect)
        return new_call_result(reply, None, time.perf_counter() - started)

    @property
    def outcome(self) -> Outcome[ToolCalls]:
        """The run's outcome (what is left of the streams is read first)."""
        if self._outcome is None:
            for _ in self:
                pass
        assert self._outcome is not None
        return self._outcome


class AsyncToolCallStream:
    """`ToolCallStream` for an async client: `async for` the text, then `.outcome` (once the
    stream is exhausted) or `await stream.finish()`. Awaiting the stream gives it back."""

    def __init__(
        self, flow: Flow, start: Start, collector: Collector, client: Any, params: Any
    ) -> None:
        self._flow = flow
        self._start = start
        self._collector = collector
        self._scope = (client, params)
        self._outcome: Outcome[ToolCalls] | None = None

    def __await__(self) -> Generator[Any, None, AsyncToolCallStream]:
        if False:  # pragma: no cover - makes this a generator
            yield
        return self

    async def __aiter__(self) -> AsyncIterator[str]:
        if self._outcome is not None:
            return
        flow = self._flow
        sent: Any = None
        try:
            while True:
                with secrets_scope(*self._scope):
                    effect = flow.send(sent)
                if isinstance(effect, AwaitAll):
                    sent = await gather(effect.awaitables, effect.timeout_s)
                    continue
                started = time.perf_counter()
                collector = self._collector()
                try:
                    value = self._start(effect)
                    if hasattr(value, "__await__"):
                        value = await value
                    if not is_stream(value):
                        reply = to_reply(value)
                    else:
                        try:
                            async for chunk in value:
                                piece = collector.feed(chunk)
                                if piece:
                                    yield piece
                        finally:
                            await _aclose(value)
                        reply = collector.reply()
                except Exception as exc:
                    with secrets_scope(*self._scope):
                        sent = call_failed(exc, started, effect)
                    continue
                sent = new_call_result(reply, None, time.perf_counter() - started)
        except StopIteration as stop:
            self._outcome = stop.value

    @property
    def outcome(self) -> Outcome[ToolCalls]:
        """The run's outcome, once the stream is exhausted (else RuntimeError: `await
        stream.finish()` reads the rest first)."""
        if self._outcome is None:
            raise RuntimeError("the stream is not finished: use `await stream.finish()`")
        return self._outcome

    async def finish(self) -> Outcome[ToolCalls]:
        """Read the rest of the streams; the outcome."""
        async for _ in self:
            pass
        return self.outcome


def _close(stream: Any) -> None:
    close = getattr(stream, "close", None)
    if callable(close):
        close()


async def _aclose(stream: Any) -> None:
    close = getattr(stream, "close", None) or getattr(stream, "aclose", None)
    if callable(close):
        result = close()
        if hasattr(result, "__await__"):
            await result
