"""`wrap(client)`: a drop-in OpenAI client whose `create(response_model=...)` heals.

Without `response_model` every call passes straight through to the wrapped client (same return
type, streaming included); every other attribute delegates to it. With `response_model=M`,
`chat.completions.create` returns `Outcome[M]` and never raises at call time. Sync and async
clients share one engine (`Healer`) and one format-negotiation generator.

Each healing call runs inside `secrets_scope(client, params)`: the client's API key, the
credential values of its default headers and query, and credential-named values of the call's
parameters are known to the redactor, so an endpoint that echoes them in an error body leaves no
trace of them in the outcome, its traces or the events.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from typing import Any

from healjson._core.contracts import Contract
from healjson._core.healer import Healer
from healjson._core.outcome import Outcome
from healjson._core.policy import HealPolicy
from healjson._core.redact import secrets_scope
from healjson._core.target import Target

from ._cache import HealerCache
from ._format import FormatState, JsonMode, check_mode, is_format_rejection, shape_request
from ._proxy import ChatProxy, CompletionsProxy

__all__ = ["HealingClient", "NotACompletion"]

_UNSET: Any = object()
Negotiation = Generator[dict[str, Any], tuple[bool, Any], Any]


_DEFAULT_POLICY = HealPolicy()


class NotACompletion(Exception):
    """The endpoint answered with something that is not a chat completion (e.g. an HTML page)."""


class HealingClient:
    """Wraps `openai.OpenAI` or `openai.AsyncOpenAI`; see `healjson.wrap`."""

    def __init__(
        self,
        client: Any,
        *,
        json_mode: str = "json_schema",
        policy: HealPolicy | None = None,
    ) -> None:
        if isinstance(client, HealingClient):
            client = client.wrapped
        self.wrapped: Any
        completions = getattr(getattr(client, "chat", None), "completions", None)
        if completions is None or not callable(getattr(completions, "create", None)):
            raise TypeError(
                f"wrap() needs an OpenAI-style client with chat.completions.create; "
                f"got {type(client).__name__}"
            )
        self.wrapped = client
        self.is_async = _is_async(client, completions.create)
        self.format = FormatState(check_mode(json_mode))
        self.policy = policy
        self.chat = ChatProxy(self, _Completions(self))
        self._healers = HealerCache()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.wrapped, name)

    def __repr__(self) -> str:
        return f"healjson.wrap({self.wrapped!r}, json_mode={self.format.mode!r})"

    def with_options(self, **options: Any) -> HealingClient:
        """The wrapped client's `with_options(...)`, still healing (and sharing the JSON tier)."""
        return self._rewrap(self.wrapped.with_options(**options))

    def copy(self, **options: Any) -> HealingClient:
        """The wrapped client's `copy(...)`, still healing."""
        return self._rewrap(self.wrapped.copy(**options))

    def _rewrap(self, client: Any) -> HealingClient:
        twin = HealingClient(client, json_mode=self.format.mode, policy=self.policy)
        twin.format = self.format  # one endpoint: what it rejected stays rejected
        return twin

    def healer(
        self,
        response_model: Any,
        contracts: Iterable[Contract | Callable[..., Any]],
        policy: HealPolicy | None,
        fallback: Any,
        examples: Iterable[Any],
    ) -> Healer[Any]:
        """The cached `Healer` for this configuration (built once: it synthesises an example)."""
        chosen = policy or self.policy or _DEFAULT_POLICY
        return self._healers.get(response_model, contracts, chosen, fallback, examples)

    def negotiation(
        self,
        target: Target[Any],
        messages: Sequence[Mapping[str, Any]],
        params: dict[str, Any],
        forced: JsonMode | None,
    ) -> Negotiation:
        """Yield request kwargs; receive (ok, result-or-exception); step down on a rejection."""
        if "response_format" in params:  # the caller chose the format: send it as given
            sent = yield {"messages": [dict(m) for m in messages], **params}
            return _completion_or_raise(sent)
        mode: JsonMode = forced or self.format.mode
        while True:
            used, shaped, extra = shape_request(mode, target, messages)
            ok, value = yield {"messages": shaped, **params, **extra}
            if ok:
                return _completion(value)
            if is_format_rejection(value):
                weaker = _weaker(used) if forced else self.format.step_down(used)
                if weaker is not None:
                    mode = weaker
                    continue
            raise value


class _Completions(CompletionsProxy):
    def create(
        self,
        *args: Any,
        response_model: Any = _UNSET,
        contracts: Iterable[Contract | Callable[..., Any]] = (),
        policy: HealPolicy | None = None,
        fallback: Any = None,
        examples: Iterable[Any] = (),
        context: Mapping[str, Any] | None = None,
        json_mode: str | None = None,
        **kwargs: Any,
    ) -> Any:
        """`chat.completions.create`; with `response_model=M` it returns `Outcome[M]`."""
        owner: HealingClient = self._owner
        create = owner.wrapped.chat.completions.create
        if response_model is _UNSET:
            return create(*args, **kwargs)
        if args:
            raise TypeError("chat.completions.create takes keyword arguments only")
        if kwargs.get("stream"):
            raise ValueError("stream=True cannot be combined with response_model")
        if "messages" not in kwargs:
            raise TypeError("chat.completions.create needs messages=[...]")
        forced = check_mode(json_mode) if json_mode is not None else None
        healer = owner.healer(response_model, contracts, policy, fallback, examples)
        messages = kwargs.pop("messages")

        def negotiate(msgs: list[dict[str, Any]], params: dict[str, Any]) -> Negotiation:
            return owner.negotiation(healer.target, msgs, params, forced)

        if owner.is_async:
            return _heal_async(
                healer,
                create,
                negotiate,
                messages,
                client=owner.wrapped,
                context=context,
                params=kwargs,
            )
        with secrets_scope(owner.wrapped, kwargs):  # what healjson stores or logs is redacted
            return healer.run(_sync_call(create, negotiate), messages, context=context, **kwargs)


def _sync_call(create: Callable[..., Any], negotiate: Callable[..., Negotiation]) -> Any:
    def call(messages: list[dict[str, Any]], **params: Any) -> Any:
        flow = negotiate(messages, params)
        request = next(flow)
        while True:
            try:
                sent: tuple[bool, Any] = (True, create(**request))
            except Exception as exc:
                sent = (False, exc)
            try:
                request = flow.send(sent)
            except StopIteration as stop:
                return stop.value

    return call


async def _heal_async(
    healer: Healer[Any],
    create: Callable[..., Any],
    negotiate: Callable[..., Negotiation],
    messages: Any,
    *,
    client: Any,
    context: Mapping[str, Any] | None,
    params: dict[str, Any],
) -> Outcome[Any]:
    async def call(msgs: list[dict[str, Any]], **call_params: Any) -> Any:
        flow = negotiate(msgs, call_params)
        request = next(flow)
        while True:
            try:
                sent: tuple[bool, Any] = (True, await create(**request))
            except Exception as exc:
                sent = (False, exc)
            try:
                request = flow.send(sent)
            except StopIteration as stop:
                return stop.value

    with secrets_scope(client, params):  # entered in the awaiting task's context
        return await healer.arun(call, messages, context=context, **params)


def _is_async(client: Any, create: Callable[..., Any]) -> bool:
    """openai's `create` is wrapped by a decorator that hides `async def`: look beneath it, and
    at the client class (`AsyncOpenAI`, `AsyncAzureOpenAI`, ...)."""
    if inspect.iscoroutinefunction(create) or inspect.iscoroutinefunction(inspect.unwrap(create)):
        return True
    return any(cls.__name__.startswith("Async") for cls in type(client).__mro__)


def _weaker(mode: JsonMode) -> JsonMode | None:
    order: tuple[JsonMode, ...] = ("json_schema", "json_object", "prompt")
    index = order.index(mode)
    return order[index + 1] if index + 1 < len(order) else None


def _completion(value: Any) -> Any:
    if isinstance(value, str | bytes) or not hasattr(value, "choices"):
        raise NotACompletion(
            f"the endpoint returned {type(value).__name__}, not a chat completion: "
            f"{str(value)[:200]!r}"
        )
    return value


def _completion_or_raise(sent: tuple[bool, Any]) -> Any:
    ok, value = sent
    if not ok:
        raise value
    return _completion(value)
