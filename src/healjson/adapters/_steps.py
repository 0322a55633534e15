"""One model call over a client whose JSON tiers its adapter shapes itself (a provider module's):
the request in the client's current tier, a refusal of that tier (an HTTP 400 naming its
feature) stepped down within the same call and remembered in the client's `FormatState`, the
answer taken through the request's `Exchange`. Every call of such a client is one (`stepped`):
a whole answer, a stream, the SDK's own structured calls.

`prime`: a stream whose request is only sent on its first read (some SDKs') is read up to
its first piece inside the call, so a refused tier is known there too.

`SteppedAdapter` is such an adapter's base: its tier state and the cached driver of its calls
that are not streams (`_route`).
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Final

from healjson._core.judge.enforcement import Enforcement
from healjson._core.run.policy import HealPolicy
from healjson._providers.tiers import NATIVE_MODES, Shapeable

from ._base import Exchange, HealingAdapter
from ._format import FormatState, JsonMode, check_mode

__all__ = ["SteppedAdapter", "stepped"]

_MAX_ROUTES: Final = 256  # cached drivers per client (as many as healers)


class SteppedAdapter(HealingAdapter):
    """A client adapter that shapes its client's tiers itself (a provider module's): `format`,
    its tier state (`json_mode`, the strongest tier the endpoint supports), and `_route`, the
    driver of a call that is not a stream. A subclass says how a call chooses its own output
    (`_chooses_format`) and builds that driver (`_whole_call`)."""

    def __init__(
        self, client: Any, *, json_mode: str = "json_schema", policy: HealPolicy | None = None
    ) -> None:
        super().__init__(client, policy=policy)
        self.format = FormatState(check_mode(json_mode, NATIVE_MODES))
        # (target, caller's own format, async) -> the driver and enforcement of a call that is
        # not a stream, with the client and tier state they were built over (`_route`)
        self._routes: dict[tuple[Any, bool, bool], tuple[Any, Any, Callable[..., Any], Any]] = {}

    @staticmethod
    def _chooses_format(params: Mapping[str, Any]) -> bool:
        """True when a call's parameters choose the output themselves (the caller's own format
        or tools): the adapter shapes no tier then."""
        raise NotImplementedError

    def _whole_call(self, target: Shapeable, params: dict[str, Any]) -> Callable[..., Any]:
        """The driver of a call that is not a stream (`stepped`, its answer read whole)."""
        raise NotImplementedError

    def _route(
        self, target: Any, response_model: Any, params: dict[str, Any]
    ) -> tuple[Callable[..., Any], Enforcement | None]:
        """The driver and enforcement check of a call that is not a stream, built once per
        target and choice (the tiers, or the caller's own format: they read nothing else of a
        call's parameters); rebuilt when the wrapped client or the tier state is replaced."""
        core = self._core
        key = (target, self._chooses_format(params), core.is_async)
        found = self._routes.get(key)
        wrapped, state = core.wrapped, self.format
        if found is not None and found[0] is wrapped and found[1] is state:
            return found[2], found[3]
        call = self._whole_call(target, params)
        checked = self._enforcement(target, None)
        if len(self._routes) >= _MAX_ROUTES:
            self._routes.clear()
        self._routes[key] = (wrapped, state, call, checked)
        return call, checked


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
