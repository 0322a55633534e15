"""`@healjson.heal`: put healing on a function, in one of two styles.

(a) The function **is** the model call: `messages -> str | ChatCompletion | Reply`. The decorated
    function takes `(messages, *, context=None, **params)` and returns `Outcome[M]` (a call's
    `context=` replaces one given to `heal(...)`).
(b) The function **builds the prompt** (returns a string or chat messages) and the decorator calls
    a configured `client=` (an OpenAI client, async or not) or `call=` function. The decorated
    function keeps the original parameters and returns `Outcome[M]`.

Sync and async functions both work; `functools.wraps` keeps names, docstrings and signatures.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from typing import Any, Generic, Literal, ParamSpec, Protocol, TypeVar, overload

from ._core.judge.contracts import Contract, Rule, as_contracts
from ._core.outcome.outcome import Outcome
from ._core.run.healer import Healer
from ._core.run.messages import normalise_messages
from ._core.run.policy import HealPolicy
from ._core.run.streams import AsyncHealStream, HealStream
from ._response_cache import ResponseStore

__all__ = ["heal"]

T = TypeVar("T")
P = ParamSpec("P")


class HealedCall(Protocol[T]):
    """A model call decorated in style (a): messages in, `Outcome[T]` out."""

    def __call__(
        self, messages: Any, /, *, context: Mapping[str, Any] | None = None, **params: Any
    ) -> Outcome[T]: ...


class AsyncHealedCall(Protocol[T]):
    """An async model call decorated in style (a): a coroutine function of the messages."""

    def __call__(
        self, messages: Any, /, *, context: Mapping[str, Any] | None = None, **params: Any
    ) -> Coroutine[Any, Any, Outcome[T]]: ...


class _CallDecorator(Protocol, Generic[T]):
    @overload
    def __call__(self, fn: Callable[..., Awaitable[Any]]) -> AsyncHealedCall[T]: ...
    @overload
    def __call__(self, fn: Callable[..., Any]) -> HealedCall[T]: ...


class _PromptDecorator(Protocol, Generic[T]):
    @overload
    def __call__(
        self, fn: Callable[P, Awaitable[Any]]
    ) -> Callable[P, Coroutine[Any, Any, Outcome[T]]]: ...
    @overload
    def __call__(self, fn: Callable[P, Any]) -> Callable[P, Outcome[T]]: ...


class StreamedCall(Protocol[T]):
    """A streaming model call decorated with `stream=True`: messages in, a `HealStream` out."""

    def __call__(
        self, messages: Any, /, *, context: Mapping[str, Any] | None = None, **params: Any
    ) -> HealStream[T]: ...


class AsyncStreamedCall(Protocol[T]):
    """An async streaming model call decorated with `stream=True`: an `AsyncHealStream` out
    (awaiting it gives it back)."""

    def __call__(
        self, messages: Any, /, *, context: Mapping[str, Any] | None = None, **params: Any
    ) -> AsyncHealStream[T]: ...


class _StreamCallDecorator(Protocol, Generic[T]):
    @overload
    def __call__(self, fn: Callable[..., Awaitable[Any]]) -> AsyncStreamedCall[T]: ...
    @overload
    def __call__(self, fn: Callable[..., Any]) -> StreamedCall[T]: ...


class _StreamPromptDecorator(Protocol, Generic[T]):
    @overload
    def __call__(
        self, fn: Callable[P, Awaitable[Any]]
    ) -> Callable[P, Coroutine[Any, Any, AsyncHealStream[T]]]: ...
    @overload
    def __call__(self, fn: Callable[P, Any]) -> Callable[P, HealStream[T] | AsyncHealStream[T]]: ...


@overload
def heal(
    response_model: type[T],
    *,
    contracts: Iterable[Rule[T]] = ...,
    policy: HealPolicy | None = ...,
    fallback: Any = ...,
    examples: Iterable[Any] = ...,
    cache: ResponseStore | None = ...,
    client: None = ...,
    call: None = ...,
    stream: Literal[True],
    **call_params: Any,
) -> _StreamCallDecorator[T]: ...
@overload
def heal(
    response_model: Mapping[str, Any],
    *,
    contracts: Iterable[Rule[Any]] = ...,
    policy: HealPolicy | None = ...,
    fallback: Any = ...,
    examples: Iterable[Any] = ...,
    cache: ResponseStore | None = ...,
    client: None = ...,
    call: None = ...,
    stream: Literal[True],
    **call_params: Any,
) -> _StreamCallDecorator[Any]: ...
@overload
def heal(
    response_model: type[T],
    *,
    contracts: Iterable[Rule[T]] = ...,
    policy: HealPolicy | None = ...,
    fallback: Any = ...,
    examples: Iterable[Any] = ...,
    cache: ResponseStore | None = ...,
    client: Any = ...,
    call: Callable[..., Any] | None = ...,
    stream: Literal[True],
    **call_params: Any,
) -> _StreamPromptDecorator[T]: ...
@overload
def heal(
    response_model: Mapping[str, Any],
    *,
    contracts: Iterable[Rule[Any]] = ...,
    policy: HealPolicy | None = ...,
    fallback: Any = ...,
    examples: Iterable[Any] = ...,
    cache: ResponseStore | None = ...,
    client: Any = ...,
    call: Callable[..., Any] | None = ...,
    stream: Literal[True],
    **call_params: Any,
) -> _StreamPromptDecorator[Any]: ...
@overload
def heal(
    response_model: type[T],
    *,
    contracts: Iterable[Rule[T]] = ...,
    policy: HealPolicy | None = ...,
    fallback: Any = ...,
    examples: Iterable[Any] = ...,
    cache: ResponseStore | None = ...,
    client: None = ...,
    call: None = ...,
    stream: Literal[False] = ...,
    **call_params: Any,
) -> _CallDecorator[T]: ...
@overload
def heal(
    response_model: Mapping[str, Any],
    *,
    contracts: Iterable[Rule[Any]] = ...,
    policy: HealPolicy | None = ...,
    fallback: Any = ...,
    examples: Iterable[Any] = ...,
    cache: ResponseStore | None = ...,
    client: None = ...,
    call: None = ...,
    stream: Literal[False] = ...,
    **call_params: Any,
) -> _CallDecorator[Any]: ...
@overload
def heal(
    response_model: type[T],
    *,
    contracts: Iterable[Rule[T]] = ...,
    policy: HealPolicy | None = ...,
    fallback: Any = ...,
    examples: Iterable[Any] = ...,
    cache: ResponseStore | None = ...,
    client: Any,
    call: None = ...,
    stream: Literal[False] = ...,
    **call_params: Any,
) -> _PromptDecorator[T]: ...
@overload
def heal(
    response_model: Mapping[str, Any],
    *,
    contracts: Iterable[Rule[Any]] = ...,
    policy: HealPolicy | None = ...,
    fallback: Any = ...,
    examples: Iterable[Any] = ...,
    cache: ResponseStore | None = ...,
    client: Any,
    call: None = ...,
    stream: Literal[False] = ...,
    **call_params: Any,
) -> _PromptDecorator[Any]: ...
@overload
def heal(
    response_model: type[T],
    *,
    contracts: Iterable[Rule[T]] = ...,
    policy: HealPolicy | None = ...,
    fallback: Any = ...,
    examples: Iterable[Any] = ...,
    cache: ResponseStore | None = ...,
    client: None = ...,
    call: Callable[..., Any],
    stream: Literal[False] = ...,
    **call_params: Any,
) -> _PromptDecorator[T]: ...
@overload
def heal(
    response_model: Mapping[str, Any],
    *,
    contracts: Iterable[Rule[Any]] = ...,
    policy: HealPolicy | None = ...,
    fallback: Any = ...,
    examples: Iterable[Any] = ...,
    cache: ResponseStore | None = ...,
    client: None = ...,
    call: Callable[..., Any],
    stream: Literal[False] = ...,
    **call_params: Any,
) -> _PromptDecorator[Any]: ...
def heal(
    response_model: Any,
    *,
    contracts: Iterable[Contract[Any] | Callable[..., Any]] = (),
    policy: HealPolicy | None = None,
    fallback: Any = None,
    examples: Iterable[Any] = (),
    cache: ResponseStore | None = None,
    client: Any = None,
    call: Callable[..., Any] | None = None,
    stream: bool = False,
    **call_params: Any,
) -> Any:
    """Decorate a model call (style a) or a prompt builder (style b, with `client=` or `call=`).

    Extra keyword arguments (`model="gpt-4o-mini"`, `temperature=0`, `max_tokens=...`) are sent
    with every model call. Configuration mistakes raise here, at decoration time. `context={...}`
    is every run's `context=` (the contracts' `ctx.extra`, pydantic's validation context); a
    style (a) function also takes `context=` per call, which replaces it.

    With `stream=True` the decorated function returns a `HealStream` (an `AsyncHealStream` for
    async code) instead of an outcome: the model call must stream (style a: return the SDK's
    stream or an iterable of text pieces; a `client=` is called with `stream=True`).

    `cache=` (a `healjson.ResponseCache`): healed answers are kept, and a request answered
    before is served with no model call once its answer passes today's checks again.
    """
    if client is not None and call is not None:
        raise TypeError("heal() takes client= or call=, not both")
    rules = as_contracts(contracts)  # one rule alone, or one that cannot be called: refused
    shots = tuple(examples)
    healer = Healer(
        response_model,
        contracts=rules,
        policy=policy,
        fallback=fallback,
        examples=shots,
        cache=cache,
    )
    if stream and client is None:
        return functools.partial(_streamed_style, healer, call, call_params)
    if client is None and call is None:
        return functools.partial(_model_call_style, healer, call_params)
    if client is not None:
        from ._wrap import wrap

        wrapped = wrap(client, cache=cache)
        options = {
            "response_model": response_model,
            "contracts": rules,
            "policy": policy,
            "fallback": fallback,
            "examples": shots,
            **({"stream": True} if stream else {}),
            **call_params,
        }
        return functools.partial(_prompt_style_client, wrapped, options)
    assert call is not None
    return functools.partial(_prompt_style_call, healer, call, call_params)


def _options(
    defaults: dict[str, Any], params: dict[str, Any], context: Mapping[str, Any] | None
) -> dict[str, Any]:
    """A call's keyword arguments: the decorator's, then the call's; a `context=` given to the
    call replaces one given to `heal(...)` (which every call gets otherwise)."""
    options = {**defaults, **params}
    if context is not None:
        options["context"] = context
    return options


def _model_call_style(healer: Healer[Any], defaults: dict[str, Any], fn: Callable[..., Any]) -> Any:
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def heal_async(
            messages: Any, /, *, context: Mapping[str, Any] | None = None, **params: Any
        ) -> Outcome[Any]:
            return await healer.arun(fn, messages, **_options(defaults, params, context))

        return heal_async

    @functools.wraps(fn)
    def heal_sync(
        messages: Any, /, *, context: Mapping[str, Any] | None = None, **params: Any
    ) -> Outcome[Any]:
        return healer.run(fn, messages, **_options(defaults, params, context))

    return heal_sync


def _streamed_style(
    healer: Healer[Any],
    call: Callable[..., Any] | None,
    defaults: dict[str, Any],
    fn: Callable[..., Any],
) -> Any:
    """`stream=True` without a client: `fn` streams (style a), or builds the prompt for the
    streaming `call` (style b)."""
    if call is None:
        if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):

            @functools.wraps(fn)
            def stream_async(
                messages: Any, /, *, context: Mapping[str, Any] | None = None, **params: Any
            ) -> AsyncHealStream[Any]:
                return healer.astream(fn, messages, **_options(defaults, params, context))

            return stream_async

        @functools.wraps(fn)
        def stream_sync(
            messages: Any, /, *, context: Mapping[str, Any] | None = None, **params: Any
        ) -> HealStream[Any]:
            return healer.stream(fn, messages, **_options(defaults, params, context))

        return stream_sync
    streaming = call
    if inspect.iscoroutinefunction(fn):

        @functools.wraps(fn)
        async def prompt_async(*args: Any, **kwargs: Any) -> AsyncHealStream[Any]:
            prompt = await fn(*args, **kwargs)
            return healer.astream(streaming, normalise_messages(prompt), **defaults)

        return prompt_async
    asynchronous = inspect.iscoroutinefunction(call) or inspect.isasyncgenfunction(call)

    @functools.wraps(fn)
    def prompt_sync(*args: Any, **kwargs: Any) -> HealStream[Any] | AsyncHealStream[Any]:
        messages = normalise_messages(fn(*args, **kwargs))
        if asynchronous:
            return healer.astream(streaming, messages, **defaults)
        return healer.stream(streaming, messages, **defaults)

    return prompt_sync


def _prompt_style_call(
    healer: Healer[Any], call: Callable[..., Any], defaults: dict[str, Any], fn: Callable[..., Any]
) -> Any:
    if inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(call):

        @functools.wraps(fn)
        async def heal_async(*args: Any, **kwargs: Any) -> Outcome[Any]:
            prompt = fn(*args, **kwargs)
            if inspect.isawaitable(prompt):
                prompt = await prompt
            return await healer.arun(call, normalise_messages(prompt), **defaults)

        return heal_async

    @functools.wraps(fn)
    def heal_sync(*args: Any, **kwargs: Any) -> Outcome[Any]:
        return healer.run(call, normalise_messages(fn(*args, **kwargs)), **defaults)

    return heal_sync


def _prompt_style_client(wrapped: Any, options: dict[str, Any], fn: Callable[..., Any]) -> Any:
    create = wrapped.chat.completions.create
    if wrapped.is_async:

        @functools.wraps(fn)
        async def heal_async(*args: Any, **kwargs: Any) -> Outcome[Any]:
            prompt = fn(*args, **kwargs)
            if inspect.isawaitable(prompt):
                prompt = await prompt
            outcome: Outcome[Any] = await create(messages=normalise_messages(prompt), **options)
            return outcome

        return heal_async
    if inspect.iscoroutinefunction(fn):
        raise TypeError("an async prompt builder needs an async client (openai.AsyncOpenAI)")

    @functools.wraps(fn)
    def heal_sync(*args: Any, **kwargs: Any) -> Outcome[Any]:
        outcome: Outcome[Any] = create(messages=normalise_messages(fn(*args, **kwargs)), **options)
        return outcome

    return heal_sync
