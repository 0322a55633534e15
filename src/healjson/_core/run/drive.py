"""The two thin drivers of the sans-I/O engine: one sync, one async.

The engine is a generator that yields effects — `ModelCall` (call the model) or `AwaitAll`
(await async contracts or fallback factories) — and receives their results. All healing logic
lives in the generator; these drivers only perform the I/O and translate: what a call returned
becomes a `Reply` (`to_reply` reads provider objects), what it raised a `CallFailure`.

Time limits: an effect may carry `timeout_s`. The async driver cancels what runs past it
(`asyncio.wait_for`). The sync driver runs a time-limited model call on a worker thread and
stops waiting at the limit: the caller gets its outcome on time, while the abandoned call
finishes (or fails) in the background — a blocking call cannot be interrupted from outside.
"""

from __future__ import annotations

import contextvars
import inspect
import json
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from typing import Any, Final, TypeVar

from healjson._core.diagnostic import describe_exception
from healjson._core.wire import formats as wire
from healjson._core.wire.effects import (
    AwaitAll,
    CallFailure,
    CallResult,
    DeadlineExceeded,
    FailureKind,
    ModelCall,
    ProviderError,
    new_call_result,
)
from healjson._core.wire.fault import fault_from_exception
from healjson._core.wire.reply import SDK_COMPLETIONS, Reply, read_completion, to_reply

__all__ = [
    "PROVIDER_PACKAGES",
    "call_async",
    "call_failed",
    "call_returned",
    "call_sync",
    "drive_async",
    "drive_sync",
    "exception_kind",
    "gather",
    "is_provider_error",
    "run_awaitables_sync",
    "settled",
]

R = TypeVar("R")


Effect = ModelCall | AwaitAll
Flow = Generator[Effect, Any, R]


def drive_sync(flow: Flow[R], call: Callable[..., Any] | None = None) -> R:
    """Run a flow to completion, performing its effects synchronously."""
    sent: Any = None
    try:
        while True:
            effect = flow.send(sent)
            if isinstance(effect, AwaitAll):
                sent = run_awaitables_sync(effect.awaitables, effect.timeout_s)
            elif call is None:
                raise RuntimeError("this flow needs a model call but no callable was given")
            else:
                sent = call_sync(call, effect)
    except StopIteration as stop:
        result: R = stop.value
        return result


async def drive_async(flow: Flow[R], call: Callable[..., Any] | None = None) -> R:
    """Run a flow to completion on the running event loop."""
    sent: Any = None
    try:
        while True:
            effect = flow.send(sent)
            if isinstance(effect, AwaitAll):
                sent = await gather(effect.awaitables, effect.timeout_s)
            elif call is None:
                raise RuntimeError("this flow needs a model call but no callable was given")
            else:
                sent = await call_async(call, effect)
    except StopIteration as stop:
        result: R = stop.value
        return result


def call_sync(call: Callable[..., Any], effect: ModelCall) -> CallResult:
    """Perform one `ModelCall` (fresh copies of its messages); the value or the exception."""
    start = time.perf_counter()
    if effect.timeout_s is not None:
        return _call_sync_limited(call, effect, start)
    try:
        value = settled(call(list(map(dict, effect.messages)), **effect.params))
    except Exception as exc:
        return call_failed(exc, start, effect)
    return call_returned(value, start)


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


def call_returned(value: Any, start: float) -> CallResult:
    """The engine's view of what a call returned: a `Reply` (a shape `to_reply` does not know
    is a failed call, with the reason in its message)."""
    kind = type(value)
    if kind is Reply:  # an adapter's reply, read already (the Responses one)
        return new_call_result(value, None, time.perf_counter() - start)
    try:
        reply = read_completion(value) if kind in SDK_COMPLETIONS else to_reply(value)
    except TypeError as exc:
        return call_failed(exc, start, None)
    return new_call_result(reply, None, time.perf_counter() - start)


def call_failed(exc: Exception, start: float, effect: ModelCall | None) -> CallResult:
    """A call that raised: the provider's or the transport's failure becomes a `CallFailure`
    the engine degrades on; any other exception is a bug in the caller's code and is raised
    again, unchanged (`effect` None: healjson's own error, always a failure)."""
    if effect is not None and not is_provider_error(exc, effect.provider_errors):
        raise exc
    kind = exception_kind(exc)
    deadline = isinstance(exc, DeadlineExceeded)
    fault = fault_from_exception(exc)
    failure = CallFailure(kind, describe_exception(exc), deadline, fault=fault)
    return new_call_result(None, failure, time.perf_counter() - start)


def _call_now(call: Callable[..., Any], effect: ModelCall) -> Any:
    value = call(list(map(dict, effect.messages)), **effect.params)
    if inspect.isawaitable(value):  # the ABC caches its verdict per class
        (value,) = run_awaitables_sync((value,))
        if isinstance(value, BaseException):
            raise value
    return value


def _call_sync_limited(call: Callable[..., Any], effect: ModelCall, start: float) -> CallResult:
    from concurrent.futures import ThreadPoolExecutor
    from concurrent.futures import TimeoutError as FutureTimeout

    timeout = max(effect.timeout_s or 0.0, 0.0)
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="healjson-call")
    context = contextvars.copy_context()  # the caller's logger and redaction scopes
    future = pool.submit(context.run, _call_now, call, effect)
    pool.shutdown(wait=False)
    try:
        value = future.result(timeout=timeout)
    except FutureTimeout:
        error = DeadlineExceeded(
            f"the run's deadline passed during the model call ({timeout:.3g} s left)"
        )
        return call_failed(error, start, effect)
    except Exception as exc:
        return call_failed(exc, start, effect)
    return call_returned(value, start)


async def call_async(call: Callable[..., Any], effect: ModelCall) -> CallResult:
    """`call_sync` on the running loop (awaiting what the call returns, if awaitable); a call
    past `effect.timeout_s` is cancelled."""

    start = time.perf_counter()
    try:
        value = call(list(map(dict, effect.messages)), **effect.params)
        if inspect.isawaitable(value):
            if effect.timeout_s is None:
                value = await value
            else:
                value = await _limited(
                    value, effect.timeout_s, "the run's deadline passed during the model call"
                )
    except Exception as exc:
        return call_failed(exc, start, effect)
    return call_returned(value, start)


async def _limited(awaitable: Awaitable[Any], timeout_s: float, what: str) -> Any:
    import asyncio

    timeout = max(timeout_s, 0.0)
    try:
        return await asyncio.wait_for(_await(awaitable), timeout)
    except TimeoutError:
        raise DeadlineExceeded(f"{what} ({timeout:.3g} s)") from None


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


async def gather(awaitables: Sequence[Awaitable[Any]], timeout_s: float | None = None) -> list[Any]:
    import asyncio

    def one(awaitable: Awaitable[Any]) -> Awaitable[Any]:
        if timeout_s is None:
            return _await(awaitable)
        return _limited(awaitable, timeout_s, "did not finish in time, limit")

    return list(await asyncio.gather(*(one(a) for a in awaitables), return_exceptions=True))


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


# Packages whose exceptions are the provider's or the transport's: the provider SDKs healjson
# wraps (each wire format names its own, `wire.WireFormat.error_packages`) or meets through
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
