"""The drivers of the sans-I/O loop: one sync, one async (and `replay`, for stored results).

A flow (`engine.heal_flow`) yields effects — `ModelCall` (call the model), `AwaitAll` (await
async contracts or fallback factories), `CacheGet` / `CachePut` (read or write the response
cache: on a worker thread in the async driver, so the event loop is never blocked on disk) —
and receives their results. All healing logic lives
in the flow; a driver only performs the I/O and translates: what a call returned becomes a
`Reply` (`to_reply` reads provider objects), what it raised a `CallFailure` (the provider's and
the transport's failures; an exception from the caller's own code propagates, unchanged).

Each driver makes every call the same way (`perform`: the one call line). A run whose calls
stream is given a *reader* (`stream.reading`): when a call returns a stream, the driver feeds
its chunks to a reading of it, hands the caller the events it makes, and sends the flow the
whole reply; a stream is always closed (`close_quietly`), and a failing close never hides the
outcome. `sync_steps` / `async_steps` yield those events and end with `Done(outcome)`;
`drive_sync` / `drive_async` run a flow to its outcome when nothing streams.

Time limits: an effect may carry `timeout_s` (the time left before the run's deadline). The
async driver cancels what runs past it: the call, each pull of its stream. The sync driver
makes a time-limited call on a worker thread (`Pump`) and takes what it produces (the value,
or each chunk) with a timed wait: the caller gets its outcome on time whatever the wire does,
while the abandoned call finishes (or fails) in the background — a blocking call cannot be
interrupted from outside.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import (
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Iterable,
    Iterator,
    Sequence,
)
from typing import Any, Final, TypeVar

from pydantic import BaseModel

from healjson._core.diagnostic import describe_exception, qualified_name
from healjson._core.observe import events as _events
from healjson._core.outcome.outcome import Healed
from healjson._core.redact import activate, deactivate, secrets_scope
from healjson._core.stream.events import Done, Event
from healjson._core.stream.reading import Reader
from healjson._core.wire import formats as wire
from healjson._core.wire.effects import (
    AwaitAll,
    CacheGet,
    CachePut,
    CallFailure,
    CallResult,
    DeadlineExceeded,
    FailureKind,
    ModelCall,
    ProviderError,
    RequestMessages,
    new_call_result,
    reported_usage,
)
from healjson._core.wire.fault import fault_from_exception, never_sent
from healjson._core.wire.reply import (
    SDK_COMPLETIONS,
    Reply,
    Usage,
    call_usage,
    read_completion,
    to_reply,
)

from .pump import CHUNK, END, ERROR, STREAM, VALUE, Pump, close_stream
from .start import HandOver, Quick, Run

__all__ = [
    "PROVIDER_PACKAGES",
    "aclose_quietly",
    "async_steps",
    "call_failed",
    "call_returned",
    "close_quietly",
    "drive_async",
    "drive_sync",
    "exception_kind",
    "gather",
    "is_provider_error",
    "is_stream",
    "perform",
    "perform_cache",
    "run_awaitables_sync",
    "settled",
    "sync_steps",
]

R = TypeVar("R")

Effect = ModelCall | AwaitAll | CacheGet | CachePut
Flow = Generator[Effect, Any, R]

close_quietly = close_stream
"""Close a stream (its `close()`, if any); a failing close never hides the run's outcome."""


def drive_sync(
    flow: Flow[R] | Run,
    call: Callable[..., Any] | None = None,
    scope: secrets_scope | None = None,
) -> R:
    """Run a flow (or a `Run`: see its quick start) to completion with the sync driver (its
    calls read whole); with `scope` (a wrapped client's secrets), the run is driven inside it:
    what it stores or emits is redacted."""
    last: Any = None
    token = None if scope is None else activate(scope)  # `with`'s work, without its frames
    try:
        steps: Flow[Any]
        if type(flow) is not Quick or flow.built is not None or call is None:
            steps = flow.flow if isinstance(flow, Run) else flow
        else:  # the run's first call, made here: a clean answer needs no flow at all
            quick = flow
            start = time.perf_counter()
            try:
                value = perform(call, quick)
                if type(value) not in _NOT_AWAITABLE:  # a class not seen before, or awaitable
                    value = settled(value)
            except Exception as exc:
                taken: Any = call_failed(exc, start, quick)
            else:
                taken = quick_taken(quick, value, start)
            if type(taken) is not CallResult:
                return taken  # type: ignore[no-any-return]
            steps = quick.flow_after(taken)
        try:
            for last in sync_steps(steps, call):  # noqa: B007  (the last event is the outcome)
                pass
        except HandOver:
            raise  # its flow stays suspended for `handed_on`
        except BaseException:
            steps.close()  # a bug of the caller's raised: the run ends first (spans, context)
            raise
    finally:
        if token is not None:
            deactivate(token)
    outcome: R = last.outcome
    return outcome


async def drive_async(
    flow: Flow[R] | Run,
    call: Callable[..., Any] | None = None,
    scope: secrets_scope | None = None,
) -> R:
    """Run a flow (or a `Run`) to completion on the running event loop (its calls read whole);
    with `scope`, inside it (entered in the awaiting task's context)."""
    last: Any = None
    token = None if scope is None else activate(scope)
    try:
        steps: Flow[Any]
        if type(flow) is not Quick or flow.built is not None or call is None:
            steps = flow.flow if isinstance(flow, Run) else flow
        else:  # as `drive_sync`'s quick start
            quick = flow
            start = time.perf_counter()
            try:
                value = perform(call, quick)
                if inspect.isawaitable(value):
                    value = await value
            except Exception as exc:
                taken: Any = call_failed(exc, start, quick)
            else:
                taken = quick_taken(quick, value, start)
            if type(taken) is not CallResult:
                return taken  # type: ignore[no-any-return]
            steps = quick.flow_after(taken)
        try:
            async for last in async_steps(steps, call):  # noqa: B007
                pass
        except HandOver:
            raise
        except BaseException:
            steps.close()  # as `drive_sync`'s
            raise
    finally:
        if token is not None:
            deactivate(token)
    outcome: R = last.outcome
    return outcome


def perform(call: Callable[..., Any], effect: ModelCall | Quick) -> Any:
    """The one call line: `call` with fresh copies of the effect's messages and its parameters
    (a repair's as `RequestMessages`, which say how many open the original request)."""
    messages = list(map(dict, effect.messages))
    if effect.shared_prefix:
        return call(RequestMessages(messages, effect.shared_prefix), **effect.params)
    return call(messages, **effect.params)


def is_stream(value: Any) -> bool:
    """True for what a streamed call returns: iterable, but not a text, a mapping, a pydantic
    object (a completion) or a `Reply`."""
    if isinstance(value, str | bytes | bytearray | dict | Reply | BaseModel):
        return False
    return hasattr(value, "__iter__") or hasattr(value, "__aiter__")


# -- the sync driver ---------------------------------------------------------------------------


def sync_steps(
    flow: Flow[Any], call: Callable[..., Any] | None = None, reader: Reader | None = None
) -> Iterator[Event]:
    """The sync driver: perform the flow's effects, yield the events a `reader` makes of each
    streamed call, and end with `Done(outcome)`."""
    sent: Any = None
    while True:
        try:
            effect = flow.send(sent)
        except StopIteration as stop:
            yield Done(stop.value)
            return
        if type(effect) is not ModelCall:
            if isinstance(effect, AwaitAll):
                sent = run_awaitables_sync(effect.awaitables, effect.timeout_s)
            elif isinstance(effect, CacheGet | CachePut):
                sent = perform_cache(effect)
            continue
        if call is None:
            raise RuntimeError("this flow needs a model call but no callable was given")
        start = time.perf_counter()
        if effect.timeout_s is not None:  # made (and read) on a worker: the deadline holds
            sent = yield from _limited(call, effect, reader, start)
            continue
        try:
            value = settled(perform(call, effect))
        except Exception as exc:
            sent = call_failed(exc, start, effect)
            continue
        if reader is None or not is_stream(value):
            sent = call_returned(value, start, effect)
            continue
        reading = reader.open(effect, start)
        try:
            for chunk in value:
                yield from reading.feed(chunk)
                if reading.stop is not None:
                    break
        except Exception as exc:
            reading.stop = reading.salvage(call_failed(exc, start, effect))
        finally:
            close_quietly(value)
        sent = reading.stop or reading.finished()


def _limited(
    call: Callable[..., Any], effect: ModelCall, reader: Reader | None, start: float
) -> Generator[Event, None, CallResult]:
    """One call under the run's deadline: made (and its stream read) on a `Pump` worker, each
    thing it produces taken with a timed wait, so the deadline ends the call whatever the wire
    does (a slow first byte, keep-alives, a trickle, silence); what had arrived is kept."""
    deadline = start + max(effect.timeout_s or 0.0, 0.0)
    pump = Pump(lambda: settled(perform(call, effect)), None if reader is None else is_stream)
    reading = None
    try:
        while True:
            got = pump.get(deadline - time.perf_counter())
            if got is None:
                where = "the model call" if reading is None else "the streamed answer"
                got = ERROR, DeadlineExceeded(f"the run's deadline passed during {where}")
            kind, payload = got
            if kind == ERROR and not isinstance(payload, Exception):
                raise payload  # an interrupt: raised where the call would have raised it
            if kind == CHUNK and reading is not None:
                yield from reading.feed(payload)
                if reading.stop is not None:
                    return reading.stop
            elif kind == STREAM and reader is not None:
                reading = reader.open(effect, start)
            elif kind == END and reading is not None:
                return reading.finished()
            elif kind == VALUE:
                return call_returned(payload, start, effect)
            elif reading is None:  # ERROR: the call failed, or ran past the deadline
                return call_failed(payload, start, effect)
            else:  # ERROR: the stream failed part-way
                return reading.salvage(call_failed(payload, start, effect))
    finally:
        pump.stop()


def settled(value: Any) -> Any:
    """What a sync call returned, awaited first if it is an awaitable (raising what it raised)."""
    if type(value) not in _NOT_AWAITABLE and _awaitable(value):
        (value,) = run_awaitables_sync((value,))
        if isinstance(value, BaseException):
            raise value
    return value


# classes whose instances are not awaitable, as seen (`inspect.isawaitable` makes a Python-level
# ABC check per call; a set lookup by the exact class does not)
_NOT_AWAITABLE: set[type] = {str, bytes, dict, type(None)}


def _awaitable(value: Any) -> bool:
    if inspect.isawaitable(value):
        return True
    if len(_NOT_AWAITABLE) < 64:  # bounded: a program makes few reply classes
        _NOT_AWAITABLE.add(type(value))
    return False


# -- the async driver --------------------------------------------------------------------------


async def async_steps(
    flow: Flow[Any], call: Callable[..., Any] | None = None, reader: Reader | None = None
) -> AsyncIterator[Event]:
    """The async driver: as `sync_steps`, on the running event loop (the call and each pull of
    its stream cancelled at the run's deadline)."""
    sent: Any = None
    while True:
        try:
            effect = flow.send(sent)
        except StopIteration as stop:
            yield Done(stop.value)
            return
        if type(effect) is not ModelCall:
            if isinstance(effect, AwaitAll):
                sent = await gather(effect.awaitables, effect.timeout_s)
            elif isinstance(effect, CacheGet | CachePut):
                sent = await _perform_cache_async(effect)
            continue
        if call is None:
            raise RuntimeError("this flow needs a model call but no callable was given")
        start = time.perf_counter()
        deadline = None if effect.timeout_s is None else start + effect.timeout_s
        try:
            value = perform(call, effect)
            if inspect.isawaitable(value):
                value = await (value if deadline is None else _within(value, deadline))
        except Exception as exc:
            sent = call_failed(exc, start, effect)
            continue
        if reader is None or not is_stream(value):
            sent = call_returned(value, start, effect)
            continue
        reading = reader.open(effect, start)
        chunks = value if hasattr(value, "__aiter__") else _each_turn(value)
        if deadline is not None:
            chunks = _until(chunks, deadline)
        try:
            async for chunk in chunks:
                for event in reading.feed(chunk):
                    yield event
                if reading.stop is not None:
                    break
        except Exception as exc:
            reading.stop = reading.salvage(call_failed(exc, start, effect))
        finally:
            await aclose_quietly(value)
        sent = reading.stop or reading.finished()


async def aclose_quietly(stream: Any) -> None:
    """Close an async (or sync) stream (`aclose()`, else `close()`); a failing close never
    hides the run's outcome."""
    close = getattr(stream, "aclose", None) or getattr(stream, "close", None)
    if callable(close):
        try:
            result = close()
            if inspect.isawaitable(result):
                await result
        except Exception:
            return


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


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


async def gather(awaitables: Sequence[Awaitable[Any]], timeout_s: float | None = None) -> list[Any]:
    """Await every awaitable (each cut at `timeout_s`: a `TimeoutError`); the results, each a
    value or the exception it raised."""
    import asyncio

    def one(awaitable: Awaitable[Any]) -> Awaitable[Any]:
        if timeout_s is None:
            return _await(awaitable)
        return _cut(awaitable, timeout_s)

    return list(await asyncio.gather(*(one(a) for a in awaitables), return_exceptions=True))


async def _cut(awaitable: Awaitable[Any], timeout_s: float) -> Any:
    import asyncio

    timeout = max(timeout_s, 0.0)
    try:
        return await asyncio.wait_for(_await(awaitable), timeout)
    except TimeoutError:
        raise DeadlineExceeded(f"did not finish in time, limit ({timeout:.3g} s)") from None


def run_awaitables_sync(
    awaitables: Sequence[Awaitable[Any]], timeout_s: float | None = None
) -> list[Any]:
    """Await from sync code: on a fresh loop, or on a worker thread when a loop is running."""
    import asyncio  # lazily: only async contracts and fallbacks need an event loop here
    from concurrent.futures import ThreadPoolExecutor

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(gather(awaitables, timeout_s))
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, gather(awaitables, timeout_s)).result()


async def _perform_cache_async(effect: CacheGet | CachePut) -> Any:
    """`perform_cache` for the async driver: a blocking store (a file) on a worker thread, so
    the event loop is never blocked on disk; a store that says `blocking = False` in line (a
    `blocking` that cannot be read, or read as true or false, counts as blocking)."""
    try:
        blocking = bool(getattr(effect.store, "blocking", True))
    except Exception:  # a hostile store: the worker thread is the safe place for it
        blocking = True
    if not blocking:
        return perform_cache(effect)
    import asyncio

    return await asyncio.to_thread(perform_cache, effect)


def perform_cache(effect: CacheGet | CachePut) -> Any:
    """A response-cache effect, performed: what `get` returned (`put`: None). A store that
    fails is a miss (or an entry not written), reported as a `healjson.cache_error` event:
    the run goes on to the model call either way."""
    try:
        if type(effect) is CacheGet:
            return effect.store.get(effect.key)
        effect.store.put(effect.key, effect.value)  # type: ignore[union-attr]
    except Exception as exc:
        operation = "get" if type(effect) is CacheGet else "put"
        _events.warn("healjson.cache_error", operation=operation, error=describe_exception(exc))
    return None


# -- what a call returned or raised, as the flow sees it ---------------------------------------


def call_returned(value: Any, start: float, effect: ModelCall | None = None) -> CallResult:
    """The engine's view of what `effect`'s call returned: a `Reply` (a shape `to_reply` does
    not know is a failed call, with the reason in its message)."""
    try:
        reply = _read(value)
    except TypeError as exc:
        return call_failed(exc, start, None, effect)
    return new_call_result(reply, None, time.perf_counter() - start)


def _read(value: Any) -> Reply:
    """A call's return value as a `Reply` (an adapter's, read already: the Responses one, as
    it is); TypeError for a shape `to_reply` does not know."""
    kind = type(value)
    if kind is Reply:
        return value  # type: ignore[no-any-return]
    return read_completion(value) if kind in SDK_COMPLETIONS else to_reply(value)


def quick_taken(quick: Quick, value: Any, start: float) -> Healed[Any] | CallResult:
    """What a quick start's first call returned (`value`, the call begun at `start`), read as
    `call_returned` reads it: the run's outcome when its answer kind accepts the reply as it
    stands (`AnswerSpec.first`), else the call's result for the flow. No result is built for an
    answer taken."""
    try:
        reply = _read(value)
    except TypeError as exc:
        return call_failed(exc, start, None, quick)
    elapsed = time.perf_counter() - start
    healed = quick.spec.first(
        reply, quick.messages, quick.params, elapsed, quick.run_id, quick.context
    )
    return new_call_result(reply, None, elapsed) if healed is None else healed


_ERROR_ANSWERED: Final = Usage(requests=1)


def call_failed(
    exc: Exception,
    start: float,
    effect: ModelCall | Quick | None,
    sent: ModelCall | Quick | None = None,
) -> CallResult:
    """A call that raised: the provider's or the transport's failure becomes a `CallFailure`
    the engine degrades on (with the exception's class, telemetry's `error.type`); any other
    exception is the caller's bug, raised again unchanged (`effect` None: healjson's own error,
    always a failure). The call was made: one request; no token when the provider answered with
    an error or the request never reached it (`never_sent`), else what a body that is no reply
    reported (`reported_usage`), or the request's tokens estimated and none received (a
    stream's reading replaces that with what had arrived); `sent`: the call, when `effect` is
    None."""
    if effect is not None and not is_provider_error(exc, effect.provider_errors):
        raise exc
    kind = exception_kind(exc)
    deadline = isinstance(exc, DeadlineExceeded)
    fault = fault_from_exception(exc)
    made = effect if effect is not None else sent
    if made is None:
        usage = None
    elif (fault is not None and fault.status >= 400) or never_sent(exc):  # billed nothing
        usage = _ERROR_ANSWERED
    else:
        usage = call_usage(reported_usage(exc), made.messages, 0)
    said, named = describe_exception(exc), qualified_name(exc)
    failure = CallFailure(kind, said, deadline, fault=fault, usage=usage, error_type=named)
    return new_call_result(None, failure, time.perf_counter() - start)


# Packages whose exceptions are the provider's or the transport's: the provider SDKs healjson
# wraps (each wire format names its own, `WireFormat.error_packages`) or meets through
# instructor, and the HTTP stacks under them. Matched by the top-level package of any class in
# the exception's MRO, so no SDK is imported. The registry's own set: formats registered later
# are in it too.
PROVIDER_PACKAGES: Final = wire.error_packages()


# a body that could not be decoded is the provider's failure, whoever's code decoded it (an SDK
# may hand json's or the codec's own error on, unwrapped)
_PROVIDER_TYPES: Final = (OSError, TimeoutError, ProviderError, json.JSONDecodeError, UnicodeError)


def is_provider_error(exc: BaseException, extra: tuple[type[BaseException], ...] = ()) -> bool:
    """True for an exception of the provider or the transport: any `OSError` (connection,
    socket, SSL, DNS) or `TimeoutError`, a body that could not be decoded (`JSONDecodeError`,
    `UnicodeError`), a `healjson.ProviderError`, an exception class defined in a provider SDK or
    HTTP package (`PROVIDER_PACKAGES`), or one of `extra` (`HealPolicy.provider_errors`)."""
    if isinstance(exc, _PROVIDER_TYPES) or (extra and isinstance(exc, extra)):
        return True
    return any(cls.__module__.partition(".")[0] in PROVIDER_PACKAGES for cls in type(exc).__mro__)


def exception_kind(exc: BaseException) -> FailureKind:
    """Classify a call's exception by class name, without importing any SDK:
    `timeout`, `content_filter`, `token_truncated` or `api_error`."""
    names = [cls.__name__ for cls in type(exc).__mro__]
    if isinstance(exc, TimeoutError) or any("Timeout" in name for name in names):
        return "timeout"
    if any("ContentFilter" in name for name in names):
        return "content_filter"
    if any(name in ("LengthFinishReasonError", "IncompleteOutputException") for name in names):
        return "token_truncated"
    return "api_error"
