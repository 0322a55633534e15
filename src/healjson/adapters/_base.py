"""The one adapter base: argument checks, healer lookup, format negotiation, sync and async drivers.

A concrete adapter (`_openai.HealingClient`, `_instructor.InstructorClient`) supplies only what
differs between clients: which clients it accepts (`_accept`), how one request reaches the client
and how its answer is read (`_sender`, returning an `Exchange` per request), and — for clients
whose JSON mode healjson chooses — the `FormatState` the negotiation steps down. Everything else
runs here, on the same code path for a sync and an async client except the two drivers
(`_sync_call`, `_async_call`), which differ only in awaiting the client's method.

The call handed to `Healer.run` / `Healer.arun` receives `(messages, **params)` and returns what
the SDK returned (or raises); each healing call runs inside
`secrets_scope(client, params)` — for an async client, in the awaiting task's context.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any

from healjson._core.contracts import Contract
from healjson._core.effects import ProviderError
from healjson._core.healer import Healer
from healjson._core.policy import HealPolicy
from healjson._core.redact import secrets_scope

from ._cache import HealerCache
from ._format import (
    MODES,
    FormatState,
    JsonMode,
    Shapeable,
    check_mode,
    is_format_rejection,
    shape_request,
)
from ._proxy import ChatProxy, CompletionsProxy

if TYPE_CHECKING:
    from healjson import Outcome

__all__ = [
    "UNSET",
    "Completions",
    "Exchange",
    "HealingAdapter",
    "NotACompletion",
    "Send",
    "negotiation",
    "unwrapped",
]

UNSET: Any = object()
"""`response_model` not given: the call passes through."""

Negotiation = Generator[dict[str, Any], tuple[bool, Any], Any]

_DEFAULT_POLICY = HealPolicy()


class NotACompletion(ProviderError):
    """The endpoint answered with something that is not a chat completion (e.g. an HTML page):
    the provider's failure, so the run degrades with `api_error`."""


class Exchange:
    """One request to the wrapped client, as an adapter makes it.

    The drivers `open()` it right before the client call (sync or awaited) and `close()` it
    right after, whatever happens (a `with` statement would cost more on the hot path); `read`
    then turns what the call returned (`ok`) or raised into `(True, completion)` or
    `(False, exception)`. This default does nothing around the call and passes its result on.
    """

    __slots__ = ()

    def open(self) -> None:
        """Right before the client call."""

    def close(self) -> None:
        """Right after it, even when it raised."""

    def read(self, ok: bool, value: Any) -> tuple[bool, Any]:
        """`(ok, value)` as the negotiation should see it."""
        return ok, value


Send = Callable[[dict[str, Any]], tuple[Callable[..., Any], dict[str, Any], Exchange]]
"""Request kwargs from the negotiation -> (client method, its kwargs, the request's Exchange)."""


def unwrapped(client: Any) -> Any:
    """The client a healjson adapter wraps, else `client`: wrapping twice stacks no layers."""
    return client.wrapped if isinstance(client, HealingAdapter) else client


class Completions(CompletionsProxy):
    """An adapter's `chat.completions`: healjson's `create`; the rest is the wrapped client's."""

    def create(
        self,
        *args: Any,
        response_model: Any = UNSET,
        contracts: Iterable[Contract[Any] | Callable[..., Any]] = (),
        policy: HealPolicy | None = None,
        fallback: Any = None,
        examples: Iterable[Any] = (),
        context: Mapping[str, Any] | None = None,
        json_mode: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """`chat.completions.create`; with `response_model=M` it returns `Outcome[M]` (an
        awaitable of it for an async client)."""
        owner: HealingAdapter = self._owner
        if response_model is UNSET:
            return owner.wrapped.chat.completions.create(*args, **kwargs)
        if args:
            raise TypeError("chat.completions.create takes keyword arguments only")
        if kwargs.get("stream"):
            raise ValueError("stream=True cannot be combined with response_model")
        if "messages" not in kwargs:
            raise TypeError("chat.completions.create needs messages=[...]")
        forced = check_mode(json_mode) if json_mode is not None else None
        healer = owner.healer(response_model, contracts, policy, fallback, examples)
        messages = kwargs.pop("messages")
        send = owner._sender(response_model, kwargs)
        negotiate = partial(negotiation, owner._tiers, forced, healer.target)
        if owner.is_async:
            call = _async_call(negotiate, send)
            return _arun(owner.wrapped, healer, call, messages, context=context, params=kwargs)
        with secrets_scope(owner.wrapped, kwargs):  # what healjson stores or logs is redacted
            return healer.run(_sync_call(negotiate, send), messages, context=context, **kwargs)


class HealingAdapter:
    """A wrapped client: healjson's `chat.completions.create`, the wrapped client's everything
    else (`__getattr__`); see `healjson.wrap`."""

    completions_type: type[Completions] = Completions
    _tiers: FormatState | None = None
    """The JSON tier healjson negotiates; None where the client shapes the request itself."""

    def __init__(self, client: Any, *, policy: HealPolicy | None = None) -> None:
        client = unwrapped(client)
        is_async = self._accept(client)
        self.wrapped: Any = client
        self.is_async = is_async
        self.policy = policy
        self.chat = ChatProxy(self, self.completions_type(self))
        self._healers = HealerCache()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)

    def _accept(self, client: Any) -> bool:
        """Raise TypeError unless this adapter can wrap `client`; True if it is async."""
        raise NotImplementedError

    def _sender(self, response_model: Any, params: dict[str, Any]) -> Send:
        """How this healing call's requests reach the client (may pop adapter-only `params`)."""
        raise NotImplementedError

    def healer(
        self,
        response_model: Any,
        contracts: Iterable[Contract[Any] | Callable[..., Any]],
        policy: HealPolicy | None,
        fallback: Any,
        examples: Iterable[Any],
    ) -> Healer[Any]:
        """The cached `Healer` for this configuration (built once: it synthesises an example)."""
        chosen = policy or self.policy or _DEFAULT_POLICY
        return self._healers.get(response_model, contracts, chosen, fallback, examples)


def negotiation(
    tiers: FormatState | None,
    forced: JsonMode | None,
    target: Shapeable,
    messages: Sequence[Mapping[str, Any]],
    params: dict[str, Any],
) -> Negotiation:
    """Yield request kwargs; receive (ok, completion-or-exception); step down on a rejection.

    Without `tiers` (the client shapes the request) or with the caller's own `response_format`
    the request goes once, as given. Otherwise it starts at `forced` or the client's tier, and an
    HTTP 400 rejecting the tier retries one tier weaker — remembered in `tiers` unless forced.
    """
    if tiers is None:
        ok, value = yield {"messages": messages, **params}
        if ok:
            return value
        raise value
    if "response_format" in params:  # the caller chose the format: send it as given
        ok, value = yield {"messages": [dict(m) for m in messages], **params}
        if ok:
            return value
        raise value
    mode: JsonMode = forced or tiers.mode
    while True:
        used, shaped, extra = shape_request(mode, target, messages)
        ok, value = yield {"messages": shaped, **params, **extra}
        if ok:
            return value
        if is_format_rejection(value):
            weaker = _weaker(used) if forced else tiers.step_down(used)
            if weaker is not None:
                mode = weaker
                continue
        raise value


def _sync_call(negotiate: Callable[..., Negotiation], send: Send) -> Callable[..., Any]:
    """The sync driver: the call `Healer.run` makes, one negotiation per model call."""

    def call(messages: list[dict[str, Any]], **params: Any) -> Any:
        flow = negotiate(messages, params)
        request = next(flow)
        while True:
            method, kwargs, exchange = send(request)
            exchange.open()
            try:
                ok, value = True, method(**kwargs)
            except Exception as exc:
                ok, value = False, exc
            finally:
                exchange.close()
            try:
                request = flow.send(exchange.read(ok, value))
            except StopIteration as stop:
                return stop.value

    return call


def _async_call(negotiate: Callable[..., Negotiation], send: Send) -> Callable[..., Any]:
    """The async driver: as `_sync_call`, awaiting the client's method (for `Healer.arun`)."""

    async def call(messages: list[dict[str, Any]], **params: Any) -> Any:
        flow = negotiate(messages, params)
        request = next(flow)
        while True:
            method, kwargs, exchange = send(request)
            exchange.open()
            try:
                ok, value = True, await method(**kwargs)
            except Exception as exc:
                ok, value = False, exc
            finally:
                exchange.close()
            try:
                request = flow.send(exchange.read(ok, value))
            except StopIteration as stop:
                return stop.value

    return call


async def _arun(
    client: Any,
    healer: Healer[Any],
    call: Callable[..., Any],
    messages: Any,
    *,
    context: Mapping[str, Any] | None,
    params: dict[str, Any],
) -> Outcome[Any]:
    """`Healer.arun` inside the call's secrets scope, entered in the awaiting task's context."""
    with secrets_scope(client, params):
        return await healer.arun(call, messages, context=context, **params)


def _weaker(mode: JsonMode) -> JsonMode | None:
    index = MODES.index(mode)
    return MODES[index + 1] if index + 1 < len(MODES) else None
