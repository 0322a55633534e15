"""One model call over a client whose JSON tiers its adapter shapes itself (a provider module's):
the request in the client's current tier, a refusal of that tier (an HTTP 400 naming its
feature) stepped down within the same call and remembered in the client's `FormatState`.

`prime`: a stream whose request is only sent on its first read (some SDKs') is read up to
its first piece inside the call, so a refused tier is known there too.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from typing import Any

from ._format import FormatState, JsonMode

__all__ = ["stepping"]

Attempt = Callable[..., tuple[JsonMode | None, dict[str, Any]]]
"""A tier (and the call's keywords) -> the tier really used (None: the caller's own format) and
the method's keywords."""
Rejects = Callable[[BaseException, JsonMode | None], bool]
"""True when an exception refuses the tier used."""


def stepping(
    create: Callable[..., Any],
    state: FormatState,
    attempt: Attempt,
    rejects: Rejects,
    *,
    is_async: bool,
    prime: bool = False,
) -> Callable[..., Any]:
    """The call (a coroutine function when `is_async`): `create(**keywords)` in the current
    tier, stepping down while a tier is refused. The call's own keywords go to `attempt` with
    the tier (one call built for many requests: `attempt(mode, **request)`)."""

    def weaker(used: JsonMode | None, exc: Exception) -> JsonMode:
        if used is None or not rejects(exc, used):
            raise exc
        lower = state.step_down(used)
        if lower is None:
            raise exc
        return lower

    if is_async:

        async def acall(**given: Any) -> Any:
            used, body = attempt(state.mode, **given)
            while True:
                try:
                    result = await create(**body)
                    return await _aprimed(result) if prime else result
                except Exception as exc:
                    used, body = attempt(weaker(used, exc), **given)

        return acall

    def call(**given: Any) -> Any:
        used, body = attempt(state.mode, **given)
        while True:
            try:
                result = create(**body)
                return _primed(result) if prime else result
            except Exception as exc:
                used, body = attempt(weaker(used, exc), **given)

    return call


def _primed(stream: Any) -> Any:
    iterator = iter(stream)
    try:
        first = next(iterator)
    except StopIteration:
        return iter(())
    return itertools.chain((first,), iterator)


async def _aprimed(stream: Any) -> Any:
    iterator = aiter(stream)
    try:
        first = await anext(iterator)
    except StopAsyncIteration:
        return _chain(None, iterator, empty=True)
    return _chain(first, iterator)


async def _chain(first: Any, rest: AsyncIterator[Any], *, empty: bool = False) -> Any:
    if not empty:
        yield first
    async for item in rest:
        yield item
