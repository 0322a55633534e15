"""The two thin drivers of the sans-I/O engine: one sync, one async.

The engine is a generator that yields effects — `ModelCall` (call the model) or `AwaitAll`
(await async contracts or fallback factories) — and receives their results. All healing logic
lives in the generator; these drivers only perform the I/O.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ._contracts import AwaitAll

__all__ = [
    "CallResult",
    "ModelCall",
    "call_async",
    "call_sync",
    "drive_async",
    "drive_sync",
    "run_awaitables_sync",
]

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class ModelCall:
    """Effect: call the model with these messages and keyword parameters."""

    number: int
    messages: tuple[Mapping[str, Any], ...]
    params: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class CallResult:
    """What the driver sends back for a `ModelCall`: the return value or the exception."""

    value: Any
    error: Exception | None
    elapsed_s: float


Effect = ModelCall | AwaitAll
Flow = Generator[Effect, Any, R]


def drive_sync(flow: Flow[R], call: Callable[..., Any] | None = None) -> R:
    """Run a flow to completion, performing its effects synchronously."""
    sent: Any = None
    try:
        while True:
            effect = flow.send(sent)
            if isinstance(effect, AwaitAll):
                sent = run_awaitables_sync(effect.awaitables)
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
                sent = await _gather(effect.awaitables)
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
    try:
        value = call([dict(m) for m in effect.messages], **effect.params)
        if inspect.isawaitable(value):  # the ABC caches its verdict per class
            (value,) = run_awaitables_sync((value,))
            if isinstance(value, BaseException):
                raise value
    except Exception as exc:
        return CallResult(None, exc, time.perf_counter() - start)
    return CallResult(value, None, time.perf_counter() - start)


async def call_async(call: Callable[..., Any], effect: ModelCall) -> CallResult:
    """`call_sync` on the running loop (awaiting what the call returns, if awaitable)."""
    start = time.perf_counter()
    try:
        value = call([dict(m) for m in effect.messages], **effect.params)
        if inspect.isawaitable(value):
            value = await value
    except Exception as exc:
        return CallResult(None, exc, time.perf_counter() - start)
    return CallResult(value, None, time.perf_counter() - start)


async def _await(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


async def _gather(awaitables: Sequence[Awaitable[Any]]) -> list[Any]:
    import asyncio

    return list(await asyncio.gather(*(_await(a) for a in awaitables), return_exceptions=True))


def run_awaitables_sync(awaitables: Sequence[Awaitable[Any]]) -> list[Any]:
    """Await from sync code: on a fresh loop, or on a worker thread when a loop is running."""
    import asyncio  # lazily: only async contracts and fallbacks need an event loop here
    from concurrent.futures import ThreadPoolExecutor

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_gather(awaitables))
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, _gather(awaitables)).result()
