"""The one adapter base: argument checks, healer lookup, format negotiation, sync and async drivers.

A concrete adapter (`_openai.HealingClient`, `_instructor.InstructorClient`) supplies only what
differs between clients: which clients it accepts (`_accept`), how one request reaches the client
and how its answer is read (`_sender`, returning an `Exchange` per request), and — for clients
whose JSON mode healjson chooses — the `FormatState` the negotiation steps down. Everything else
runs here, on the same code path for a sync and an async client except the two drivers
(`sync_call`, `async_call`), which differ only in awaiting the client's method. A provider
module's adapter, whose client shapes its own tiers, makes every call through
`adapters._steps.stepped` instead (`_run_call`, and its whole-answer route).

The call handed to the healer receives `(messages, **params)` and returns what the SDK returned
(or raises); each healing call redacts as inside `secrets_scope(client, params)` — for an async
client, in the awaiting task's context (`drive_sync` / `drive_async` with its `scope`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Container, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from healjson._core.judge.contracts import Contract
from healjson._core.judge.enforcement import Enforcement
from healjson._core.redact import secrets_scope
from healjson._core.run.drive import drive_async, drive_sync
from healjson._core.run.healer import Healer
from healjson._core.run.policy import HealPolicy
from healjson._core.run.streams import AsyncHealStream, HealStream, stream_async, stream_sync
from healjson._core.wire.effects import CacheStore, ModelCall, ProviderError
from healjson._providers.openai_chat import (
    constrains_one_value,
    enforced_schema,
    names_format,
)
from healjson._providers.openai_tools import ChatCollector
from healjson._providers.tiers import ONE_VALUE, JsonMode, Shapeable

from ._cache import HealerCache
from ._chat_tiers import build_request, retry_mode
from ._choices import check_tool_choice
from ._format import Enforcing, FormatState, check_mode
from ._proxy import ChatProxy, CompletionsProxy, ContextPassthrough, Forwarding
from ._tools import check_tool_call, heal_tool_calls, stream_tool_calls, tool_spec

if TYPE_CHECKING:
    from ._parsed import Received

__all__ = [
    "UNSET",
    "Completions",
    "Exchange",
    "HealingAdapter",
    "NotACompletion",
    "Send",
    "ShapeCheck",
    "async_call",
    "check_one_answer",
    "is_async_client",
    "sync_call",
    "unwrapped",
]

UNSET: Any = object()
"""`response_model` not given: the call passes through."""

_DEFAULT_POLICY = HealPolicy()

# retry counts of other libraries: sent to the SDK they would be its bare TypeError
_RETRY_KEYWORDS = ("max_retries", "max_attempts", "retry")


def _retry_keyword(name: str) -> str:
    return (
        f"{name}= is not a keyword of create(response_model=...): healjson does the retrying; "
        "pass policy=HealPolicy(max_attempts=...) (a first attempt and its repairs)"
    )


def check_one_answer(params: Mapping[str, Any], name: str, where: str, *spellings: str) -> None:
    """Raise TypeError for a healed call that asks for several answers (`n=`, Gemini's
    `candidate_count=`, under `name` or another of its `spellings`, or in `extra_body`): an
    outcome is one answer, and the others would be dropped unread. Only the number 1 (or
    nothing) is one answer."""
    extra = params.get("extra_body")
    places = (params, extra) if isinstance(extra, Mapping) else (params,)
    for place in places:
        for key in (name, *spellings):
            count = place.get(key)
            if count is not None and (type(count) is not int or count != 1):
                raise TypeError(
                    f"{where}: {key}={count!r} asks for several answers in one call; healjson "
                    f"heals one answer per call (response_model= or heal_tools=), so the others "
                    f"would be dropped unread. Leave {key} out and call once per answer you "
                    f"want."
                )


class NotACompletion(ProviderError):
    """The endpoint answered with something that is not a chat completion (e.g. an HTML page):
    the provider's failure, so the run degrades with `api_error`."""


class Exchange:
    """One request to the wrapped client, as an adapter makes it.

    The drivers `open()` it right before the client call (sync or awaited) and `close()` it
    right after, whatever happens (a `with` statement would cost more on the hot path); `read`
    then turns what the call returned (`ok`) or raised into `(True, completion)` or
    `(False, exception)`. This default does nothing around the call and passes its result on
    (and the drivers skip `open` / `close` for a class that keeps both defaults, and `read` for
    an answer whose class is in `known`).
    """

    __slots__ = ()
    wraps_call = False
    """True for a class that overrides `open` or `close` (set for each subclass)."""
    known: Container[type] = ()
    """Classes of answers that need no `read`: they are what the request asks for."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.wraps_call = cls.open is not Exchange.open or cls.close is not Exchange.close

    def open(self) -> None:
        """Right before the client call."""

    def close(self) -> None:
        """Right after it, even when it raised."""

    def read(self, ok: bool, value: Any) -> tuple[bool, Any]:
        """`(ok, value)` as the negotiation should see it."""
        return ok, value


class ShapeCheck(Exchange):
    """A plain call whose answer must pass `accepts` (else it is the provider's failure: the
    endpoint answered with something that is not `what`, e.g. an HTML page). Answers whose
    class is in `known` pass unchecked (the drivers do not call `read` for them)."""

    __slots__ = ("accepts", "known", "what")

    def __init__(
        self, accepts: Callable[[Any], bool], what: str, known: Container[type] = ()
    ) -> None:
        self.accepts = accepts
        self.what = what
        self.known = known

    def read(self, ok: bool, value: Any) -> tuple[bool, Any]:
        if ok and not self.accepts(value):
            return False, NotACompletion(
                f"the endpoint returned {type(value).__name__}, not {self.what}: "
                f"{str(value)[:200]!r}"
            )
        return ok, value


Send = Callable[[dict[str, Any]], tuple[Callable[..., Any], dict[str, Any], Exchange]]
"""Request kwargs from the negotiation -> (client method, its kwargs, the request's Exchange)."""


def is_async_client(client: Any, create: Callable[..., Any]) -> bool:
    """True for an async client: its `create` is a coroutine function (the SDKs wrap it in a
    decorator that hides `async def`: look beneath it), or its class is an `Async...` one
    (`AsyncOpenAI`, `AsyncAzureOpenAI`, ...)."""
    if inspect.iscoroutinefunction(create) or inspect.iscoroutinefunction(inspect.unwrap(create)):
        return True
    return any(cls.__name__.startswith("Async") for cls in type(client).__mro__)


def unwrapped(client: Any) -> Any:
    """The client a healjson adapter wraps, else `client`: wrapping twice stacks no layers."""
    return client.wrapped if isinstance(client, HealingAdapter) else client


class _Core:
    """An adapter's own state, in a plain object: the adapter and its namespaces pass unknown
    attributes on to the wrapped client (`__getattr__`), and on such a class every attribute
    read takes Python's slow generic path; the hot path reads these instead."""

    __slots__ = ("healers", "is_async", "policy", "sync_calls", "tiers", "uncached", "wrapped")

    def __init__(self, wrapped: Any, is_async: bool, policy: HealPolicy | None) -> None:
        self.wrapped = wrapped
        self.is_async = is_async
        self.policy = policy
        self.healers = HealerCache()
        # the healers of the SDK's own structured calls (`adapters._parsed`): they return the
        # SDK's object built from the answer a model call gave, so no answer comes from the
        # response cache
        self.uncached = HealerCache()
        self.tiers: FormatState | None = None
        # (target, forced JSON mode) -> the sync driver for it (with `static_sender`); emptied
        # whenever `tiers` is replaced, which the drivers hold
        self.sync_calls: dict[
            tuple[Any, JsonMode | None], tuple[Callable[..., Any], Enforcement | None]
        ] = {}


class Completions(CompletionsProxy):
    """An adapter's `chat.completions`: healjson's `create`; the rest is the wrapped client's."""

    def __init__(self, owner: HealingAdapter) -> None:
        super().__init__(owner)
        self._core = owner._core

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
        heal_tools: bool = False,
        tool_contracts: Mapping[str, Iterable[Any]] | None = None,
        **kwargs: Any,
    ) -> Any:
        """`chat.completions.create`; with `response_model=M` it returns `Outcome[M]` (an
        awaitable of it for an async client); with `heal_tools=True` (and the caller's
        `tools=`) `Outcome[ToolCalls]` (see `_tools`)."""
        core = self._core  # a plain object: its attributes read fast (this class proxies)
        if heal_tools or tool_contracts is not None:
            if args:
                raise TypeError("chat.completions.create takes keyword arguments only")
            check_tool_call(kwargs, response_model, UNSET, "chat.completions.create")
            check_one_answer(kwargs, "n", "chat.completions.create")
            if not heal_tools:
                raise TypeError("tool_contracts= needs heal_tools=True")
            chosen = policy or core.policy or _DEFAULT_POLICY
            return self._owner._heal_tools(chosen, tool_contracts, context, kwargs)
        if response_model is UNSET:
            return core.wrapped.chat.completions.create(*args, **kwargs)
        if args:
            raise TypeError("chat.completions.create takes keyword arguments only")
        messages = kwargs.pop("messages", UNSET)
        if messages is UNSET:
            raise TypeError("chat.completions.create needs messages=[...]")
        for name in _RETRY_KEYWORDS:
            if name in kwargs:
                raise TypeError(_retry_keyword(name))
        if "n" in kwargs or "extra_body" in kwargs:
            check_one_answer(kwargs, "n", "chat.completions.create")
        if "tool_choice" in kwargs and core.tiers is not None:  # (an instructor client's mode
            check_tool_choice(kwargs, "chat.completions.create")  # sets its own tool_choice)
        forced = check_mode(json_mode) if json_mode is not None else None
        chosen = policy or core.policy or _DEFAULT_POLICY
        healer = core.healers.get(response_model, contracts, chosen, fallback, examples)
        if kwargs.get("stream"):
            return self._owner._stream(healer, forced, messages, context, kwargs)
        if core.is_async:
            send = self._owner._sender(response_model, kwargs)
            call = async_call(core.tiers, forced, healer.target, send)
            checked = self._owner._enforcement(healer.target, forced)
            run = healer.start(messages, context=context, params=kwargs, enforcement=checked)
            return drive_async(run, call, secrets_scope(core.wrapped, kwargs))
        route = (healer.target, forced)
        cached = core.sync_calls.get(route)
        if cached is None:
            owner: HealingAdapter = self._owner
            driver = sync_call(
                core.tiers, forced, healer.target, owner._sender(response_model, kwargs)
            )
            enforcement = owner._enforcement(healer.target, forced)
            if owner.static_sender:  # the same driver serves this target's next requests
                if len(core.sync_calls) >= _MAX_CALLS:
                    core.sync_calls.clear()
                core.sync_calls[route] = (driver, enforcement)
        else:
            driver, enforcement = cached
        # what healjson stores or logs is redacted (the client's secrets scope)
        run = healer.start(messages, context=context, params=kwargs, enforcement=enforcement)
        return drive_sync(run, driver, secrets_scope(core.wrapped, kwargs))


class HealingAdapter(Forwarding, ContextPassthrough):
    """A wrapped client: healjson's `chat.completions.create`, the wrapped client's everything
    else (`__getattr__`; `with` / `async with` where the wrapped client has them, binding this
    client: `ContextPassthrough`); see `healjson.wrap`."""

    completions_type: type[Completions] = Completions
    static_sender = False
    """True when `_sender` reads nothing from a call's parameters (and takes nothing out of
    them) for a plain sync call: its driver is then built once per target and JSON mode."""

    def __init__(self, client: Any, *, policy: HealPolicy | None = None) -> None:
        client = unwrapped(client)
        self._core = _Core(client, self._accept(client), policy)
        self.chat = ChatProxy(self, self.completions_type(self))

    @property
    def wrapped(self) -> Any:
        """The wrapped client."""
        return self._core.wrapped

    @wrapped.setter
    def wrapped(self, client: Any) -> None:
        self._core.wrapped = client
        self._core.sync_calls.clear()

    @property
    def is_async(self) -> bool:
        """True for an async client (detected by `wrap`; settable for a client it misreads)."""
        return self._core.is_async

    @is_async.setter
    def is_async(self, value: bool) -> None:
        self._core.is_async = value

    @property
    def cache(self) -> CacheStore | None:
        """The client's response cache (`wrap(client, cache=...)`; None: none): a request
        answered before is served from it once its answer passes today's checks again."""
        return self._core.healers.cache

    @cache.setter
    def cache(self, cache: CacheStore | None) -> None:
        self._core.healers = HealerCache(cache)  # healers built anew, each with the cache

    @property
    def policy(self) -> HealPolicy | None:
        """The default policy of this client's healing calls (None: `HealPolicy()`)."""
        return self._core.policy

    @policy.setter
    def policy(self, policy: HealPolicy | None) -> None:
        self._core.policy = policy

    @property
    def _tiers(self) -> FormatState | None:
        """The JSON tier healjson negotiates; None where the client shapes the request itself."""
        return self._core.tiers

    @_tiers.setter
    def _tiers(self, state: FormatState | None) -> None:
        self._core.tiers = state
        self._core.sync_calls.clear()  # they negotiate with the state they were built with

    @property
    def _healers(self) -> HealerCache:
        return self._core.healers

    state = "_core"

    def forwarded(self) -> Any:
        return self._core.wrapped

    def _accept(self, client: Any) -> bool:
        """Raise TypeError unless this adapter can wrap `client`; True if it is async."""
        raise NotImplementedError

    def _sender(self, response_model: Any, params: dict[str, Any]) -> Send:
        """How this healing call's requests reach the client (may pop adapter-only `params`)."""
        raise NotImplementedError

    def _stream(
        self,
        healer: Healer[Any],
        forced: JsonMode | None,
        messages: Any,
        context: Mapping[str, Any] | None,
        params: dict[str, Any],
    ) -> HealStream[Any] | AsyncHealStream[Any]:
        """`create(..., stream=True)`: every call of the run streams (repairs too), read by the
        stream drivers; the secrets scope holds around each step of the caller's iteration."""
        self._stream_params(params)
        call = self._run_call(healer.target, forced, params)
        scope = secrets_scope(self.wrapped, params)
        json_mode = self._one_value(healer.target, forced, params)
        enforcement = self._enforcement(healer.target, forced)
        run = healer.start(messages, context=context, params=params, enforcement=enforcement)
        reader = healer.reader(run, json_mode)
        if self.is_async:
            return stream_async(run.flow, call, reader, scope)
        return stream_sync(run.flow, call, reader, scope)

    def sdk_healer(
        self,
        response_model: Any,
        contracts: Iterable[Contract[Any] | Callable[..., Any]],
        policy: HealPolicy | None,
        examples: Iterable[Any],
    ) -> Healer[Any]:
        """The cached `Healer` of one of the SDK's own structured calls (`.parse`): as `healer`,
        without the response cache (the call returns the SDK's object of a model call's answer)
        and without a fallback (its parsed value is None when the run degrades)."""
        chosen = policy or self.policy or _DEFAULT_POLICY
        return self._core.uncached.get(response_model, contracts, chosen, None, examples)

    def heal_recorded(
        self,
        healer: Healer[Any],
        forced: JsonMode | None,
        messages: Any,
        *,
        context: Mapping[str, Any] | None,
        params: dict[str, Any],
        received: Received,
        first: Any = None,
    ) -> Any:
        """One healing run as `create(response_model=...)` makes it, its model calls' answers
        noted in `received`; with `first`, an answer already received is the run's first (only
        its repairs are calls). The outcome (an awaitable of it for an async client)."""
        core = self._core
        call = self._run_call(healer.target, forced, params, received)
        if first is not None:
            call = received.first(call, first, core.is_async)
        enforcement = self._sdk_enforcement(healer.target, forced)
        run = healer.start(messages, context=context, params=params, enforcement=enforcement)
        scope = secrets_scope(core.wrapped, params)
        if core.is_async:
            return drive_async(run, call, scope)
        return drive_sync(run, call, scope)

    def _run_call(
        self,
        target: Shapeable,
        forced: JsonMode | None,
        params: dict[str, Any],
        received: Received | None = None,
    ) -> Callable[..., Any]:
        """The model call of a run that streams (`_stream`) or of one of the SDK's own
        structured calls (`received`: what its calls got back, noted there): `_sender`'s
        requests through the driver of the client's tiers. An adapter whose client shapes its
        own tiers gives its own (a provider module's: `adapters._steps.stepped`)."""
        send = self._sender(target.type_, params)
        if received is not None:
            send = received.recording(send, self.is_async)
        return (async_call if self.is_async else sync_call)(self._tiers, forced, target, send)

    def _sdk_enforcement(self, target: Shapeable, forced: JsonMode | None) -> Enforcement | None:
        """`_enforcement` for the SDK's own structured calls, as `_run_call` asks them."""
        return self._enforcement(target, forced)

    def _one_value(
        self, target: Shapeable, forced: JsonMode | None, params: Mapping[str, Any]
    ) -> Callable[[], bool]:
        """Asked once a streamed call has returned: whether its request constrained the answer
        to one JSON value (the tier it used: a rejected one was stepped down)."""
        tiers = self._tiers

        def json_mode() -> bool:
            if names_format(params):  # the caller's own
                return constrains_one_value(params)
            return tiers is not None and (forced or tiers.mode) in ONE_VALUE

        return json_mode

    def _enforcement(self, target: Shapeable, forced: JsonMode | None) -> Enforcement | None:
        """What this client's requests for `target` ask the endpoint to enforce (judged once a
        run's first answer breaks it: the caller's own format is not)."""
        tiers = self._tiers
        if tiers is None:
            return None
        return Enforcing(tiers, forced, lambda mode, params: enforced_schema(mode, target, params))

    def _stream_params(self, params: dict[str, Any]) -> None:
        """Adjust a streamed call's parameters (e.g. ask for the usage chunk)."""

    def _heal_tools(
        self,
        policy: HealPolicy,
        tool_contracts: Mapping[str, Iterable[Any]] | None,
        context: Mapping[str, Any] | None,
        params: dict[str, Any],
    ) -> Any:
        """`create(..., heal_tools=True)`: the caller's own tool calls healed (`_tools`); each
        request goes to the client as the caller wrote it (no JSON tier: the tools answer)."""
        messages = params.pop("messages", UNSET)
        if messages is UNSET:
            raise TypeError("chat.completions.create needs messages=[...]")
        spec = tool_spec(params, tool_contracts, policy, style="chat")
        if params.get("stream"):
            start = self._tool_stream_start(params)
            return stream_tool_calls(
                self.wrapped,
                start,
                spec,
                messages,
                params,
                collector=ChatCollector,
                is_async=self.is_async,
                context=context,
            )
        call = (async_call if self.is_async else sync_call)(
            None, None, _NO_TARGET, self._tool_sender(params)
        )
        return heal_tool_calls(
            self.wrapped, call, spec, messages, params, is_async=self.is_async, context=context
        )

    def _tool_sender(self, params: dict[str, Any]) -> Send:
        """How a `heal_tools=True` call's requests reach the client (plain chat completions)."""
        raise TypeError(f"heal_tools=True is not supported by {type(self).__name__}")

    def _tool_stream_start(self, params: dict[str, Any]) -> Callable[[ModelCall], Any]:
        """How a streamed `heal_tools=True` call's requests reach the client."""
        raise TypeError(
            f"heal_tools=True with stream=True is not supported by {type(self).__name__}"
        )

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


_MAX_CALLS = 256  # cached sync drivers per adapter (as many as healers)
_NO_TARGET: Any = None  # a driver without a JSON tier never shapes a request for a target


def sync_call(
    tiers: FormatState | None, forced: JsonMode | None, target: Shapeable, send: Send
) -> Callable[..., Any]:
    """The sync driver: the call `Healer.run` makes, one format negotiation per model call
    (`build_request`, `retry_mode`)."""

    def call(messages: list[dict[str, Any]], **params: Any) -> Any:
        mode, request = build_request(tiers, forced, target, messages, params)
        while True:
            method, kwargs, exchange = send(request)
            wraps = exchange.wraps_call
            if wraps:
                exchange.open()
            try:
                ok, value = True, method(**kwargs)
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
            weaker = retry_mode(tiers, forced, mode, value)
            mode, request = build_request(tiers, forced, target, messages, params, mode=weaker)

    return call


def async_call(
    tiers: FormatState | None, forced: JsonMode | None, target: Shapeable, send: Send
) -> Callable[..., Any]:
    """The async driver: as `sync_call`, awaiting the client's method (for `Healer.arun`)."""

    async def call(messages: list[dict[str, Any]], **params: Any) -> Any:
        mode, request = build_request(tiers, forced, target, messages, params)
        while True:
            method, kwargs, exchange = send(request)
            wraps = exchange.wraps_call
            if wraps:
                exchange.open()
            try:
                ok, value = True, await method(**kwargs)
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
            weaker = retry_mode(tiers, forced, mode, value)
            mode, request = build_request(tiers, forced, target, messages, params, mode=weaker)

    return call
