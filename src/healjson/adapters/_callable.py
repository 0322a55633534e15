"""`healjson.wrap_callable(fn)`: a chat-completion function that heals.

For a function that takes OpenAI-style keyword arguments (`model=`, `messages=`, ...) and
returns an OpenAI-shaped chat completion, an object or a dict (or, with `stream=True`, an
iterable of chunks): LiteLLM's `completion` / `acompletion`, a gateway's client method, one's
own; an async generator function of chunks streams on the async path. No such package is
imported. The function stands where an OpenAI client's
`chat.completions.create` stands, so everything `wrap(OpenAI())` does applies: the JSON-mode
tiers (`response_format` stepped down on a 400 naming it, remembered), repairs, streams.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

from healjson._core.run.drive import is_stream
from healjson._core.run.owner import call_client
from healjson._core.run.policy import HealPolicy
from healjson._core.wire.reply import SDK_COMPLETIONS

from ._base import Exchange, Send, ShapeCheck
from ._openai import HealingClient

__all__ = ["HealingCallable"]


class _Create:
    """The function as a client's `chat.completions` (and the client's `chat`)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.create = fn
        self.completions = self


class _FunctionClient:
    """The function as the OpenAI-style client the adapter wraps; `client`: the SDK client the
    function belongs to when it is one of its methods (`call_client`), whose credentials the
    redactor then knows, as a wrapped client's."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.chat = _Create(fn)
        self.function = fn
        self.client = call_client(fn)


def _completion(value: Any) -> bool:
    if isinstance(value, Mapping):
        return "choices" in value
    return not isinstance(value, str | bytes) and hasattr(value, "choices")


class _FunctionReturn(ShapeCheck):
    """What the caller's function returned: a completion (or a stream), else the caller's bug,
    raised as a `TypeError` that says what it must return (not the endpoint's `api_error`: the
    function is the caller's code, whatever endpoint it talks to)."""

    __slots__ = ()

    def read(self, ok: bool, value: Any) -> tuple[bool, Any]:
        if ok and not self.accepts(value):
            raise TypeError(_wrong_return(value, self.what))
        return ok, value


def _wrong_return(value: Any, what: str) -> str:
    must = (
        f"the function given to wrap_callable must return {what} (an object or dict with "
        "`choices`, as openai's `chat.completions.create` or LiteLLM's `completion` returns)"
    )
    if inspect.isawaitable(value):
        close = getattr(value, "close", None)
        if callable(close):
            close()  # never awaited: closed here, so Python does not warn about it
        return (
            f"{must}; it returned {type(value).__name__}, an awaitable: pass an `async def` "
            "function (or `async_=True`) and await the healed call"
        )
    if hasattr(value, "__aiter__") and not hasattr(value, "__iter__"):
        return (
            f"{must}; it returned {type(value).__name__}, an async iterator: with stream=True "
            "pass an async generator function (or `async_=True`) and read the healed stream "
            "with `async for`"
        )
    if value is None:
        return f"{must}; it returned None (a missing `return`?)"
    return f"{must}; it returned {type(value).__name__}: {str(value)[:100]!r}"


_READ_COMPLETION = _FunctionReturn(_completion, "an OpenAI-shaped chat completion", SDK_COMPLETIONS)
_READ_STREAM = _FunctionReturn(  # the sync driver iterates a stream: no async iterator
    lambda value: (is_stream(value) and hasattr(value, "__iter__")) or _completion(value),
    "an OpenAI-shaped chat completion, or with stream=True an iterable of its chunks",
)
_READ_ASYNC_STREAM = _FunctionReturn(  # the async driver reads either kind
    lambda value: is_stream(value) or _completion(value),
    "an OpenAI-shaped chat completion, or with stream=True an (async) iterable of its chunks",
)


def _is_async(fn: Callable[..., Any]) -> bool:
    """A coroutine function or an async generator function (beneath a decorator, too)."""
    return any(
        inspect.iscoroutinefunction(f) or inspect.isasyncgenfunction(f)
        for f in (fn, inspect.unwrap(fn))
    )


def _awaiting(fn: Callable[..., Any]) -> Callable[..., Any]:
    """`fn` for the async driver, which awaits what it calls: its awaitable awaited, anything
    else (an async generator's stream, never awaitable) returned for the shape check."""

    async def call(**kwargs: Any) -> Any:
        value = fn(**kwargs)
        return await value if inspect.isawaitable(value) else value

    return call


class HealingCallable(HealingClient):
    """`fn` healing: `healed(..., response_model=M)` is `Outcome[M]` (awaitable when `fn` is
    async), `healed(..., response_model=M, stream=True)` a healed stream; without
    `response_model` it is `fn(...)` unchanged. `healed.create` is the same call."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        async_: bool | None = None,
        json_mode: str = "json_schema",
        policy: HealPolicy | None = None,
    ) -> None:
        if not callable(fn):
            raise TypeError(f"wrap_callable() needs a function; got {type(fn).__name__}")
        super().__init__(_FunctionClient(fn), json_mode=json_mode, policy=policy)
        if async_ is not None:
            self.is_async = async_

    def _accept(self, client: Any) -> bool:
        return _is_async(client.function)

    @property
    def function(self) -> Callable[..., Any]:
        """The wrapped function."""
        return self.wrapped.function  # type: ignore[no-any-return]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.chat.completions.create(*args, **kwargs)

    def create(self, *args: Any, **kwargs: Any) -> Any:
        """The same as calling this object."""
        return self.chat.completions.create(*args, **kwargs)

    def __repr__(self) -> str:
        return f"healjson.wrap_callable({self.function!r}, json_mode={self.format.mode!r})"

    def with_options(self, **options: Any) -> HealingClient:
        raise AttributeError("a wrapped function has no with_options")

    def copy(self, **options: Any) -> HealingClient:
        raise AttributeError("a wrapped function has no copy")

    def _sender(self, response_model: Any, params: dict[str, Any]) -> Send:
        fn = self.function
        stream = params.get("stream")
        if not self.is_async:
            reader = _READ_STREAM if stream else _READ_COMPLETION
        else:
            reader = _READ_ASYNC_STREAM if stream else _READ_COMPLETION
            if stream or not inspect.iscoroutinefunction(inspect.unwrap(fn)):
                fn = _awaiting(fn)  # a stream may come un-awaited (an async generator's)

        def send(request: dict[str, Any]) -> tuple[Callable[..., Any], dict[str, Any], Exchange]:
            return fn, request, reader

        return send
