"""One model call over a client whose JSON tiers its adapter shapes itself (a provider module's):
the request in the client's current tier, a refusal of that tier (an HTTP 400 naming its
feature) stepped down within the same call and remembered in the client's `FormatState`, the
answer taken through the request's `Exchange`. Every call of such a client is one (`stepped`):
a whole answer, a stream, the SDK's own structured calls.

`prime`: a stream whose request is only sent on its first read (some SDKs') is read up to
its first piece inside the call, so a refused tier is known there too.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from ._format import FormatState, JsonMode

if TYPE_CHECKING:
    from ._base import Exchange

__all__ = ["stepped"]

Rejects = Callable[[BaseException, JsonMode | None], bool]
"""True when an exception refuses the tier used."""


Shape = Callable[[JsonMode | None, Any, dict[str, Any]], tuple[JsonMode | None, dict[str, Any]]]
"""A tier (None: the caller's own format), a call's messages and its other keywords -> the tier
really used and the method's keywords."""


def stepped(
    create: Callable[..., Any],
    state: FormatState,
    shape: Shape,
    rejects: Rejects,
    exchange: Exchange,
    *,
    is_async: bool,
    own: bool = False,
    prime: bool = False,
) -> Callable[..., Any]:
    """The call a driver makes (`call(messages, **params)`, a coroutine function when
    `is_async`): `create` with `shape`'s keywords in the client's current tier (`own`: the
    caller's own format, no tier), stepped down while a tier is refused, the answer taken
    through `exchange` as the adapters' `sync_call` takes it (a class it knows as it is;
    anything else read, a shape it does not accept the provider's failure). `prime`: the
    answer is a stream, read up to its first piece before it counts as sent (see the module
    docstring). In one frame: no request is copied between layers."""

    def lower(used: JsonMode | None, exc: Exception) -> JsonMode:
        weaker = None if used is None or not rejects(exc, used) else state.step_down(used)
        if weaker is None:
            raise exc
        return weaker

    if is_async:

        async def acall(messages: Any, **params: Any) -> Any:
            wraps = exchange.wraps_call
            if wraps:
                exchange.open()
            try:
                used, body = shape(None if own else state.mode, messages, params)
                while True:
                    try:
                        value = await create(**body)
                        ok, value = True, await _aprimed(value) if prime else value
                        break
                    except Exception as exc:
                        used, body = shape(lower(used, exc), messages, params)
            except Exception as exc:
                ok, value = False, exc
            finally:
                if wraps:
                    exchange.close()
            if ok and type(value) in exchange.known:
                return value
            ok, value = exchange.read(ok, value)
            if ok:
                return value
            raise value

        return acall

    def call(messages: Any, **params: Any) -> Any:
        wraps = exchange.wraps_call
        if wraps:
            exchange.open()
        try:
            used, body = shape(None if own else state.mode, messages, params)
            while True:
                try:
                    value = create(**body)
                    ok, value = True, _primed(value) if prime else value
                    break
                except Exception as exc:
                    used, body = shape(lower(used, exc), messages, params)
        except Exception as exc:
            ok, value = False, exc
        finally:
            if wraps:
                exchange.close()
        if ok and type(value) in exchange.known:
            return value
        ok, value = exchange.read(ok, value)
        if ok:
            return value
        raise value

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
