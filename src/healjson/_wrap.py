"""`healjson.wrap`: make an existing client heal, changing one line at the call site."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, TypeVar, overload

from ._core.run.policy import HealPolicy

if TYPE_CHECKING:
    import anthropic
    import instructor
    import openai
    from openai.types.chat import ChatCompletion, ChatCompletionChunk
    from openai.types.responses import Response, ResponseStreamEvent

    from ._core.judge.contracts import Rule
    from ._core.outcome.calls import ToolCalls
    from ._core.outcome.outcome import Outcome
    from ._core.run.streams import AsyncHealStream, HealStream
    from ._wrap_providers import (
        AsyncHealingAnthropic,
        AsyncHealingFunction,
        AsyncHealingInstructor,
        HealingAnthropic,
        HealingFunction,
        HealingInstructor,
    )
    from .adapters._tool_stream import AsyncToolCallStream, ToolCallStream

__all__ = ["wrap", "wrap_callable"]

T = TypeVar("T")
R = TypeVar("R")


class HealingCompletions(Protocol):
    """`wrap(OpenAI()).chat.completions` as a type checker sees it."""

    @overload
    def create(
        self,
        *,
        response_model: type[T],
        messages: Iterable[Any],
        stream: Literal[True],
        contracts: Iterable[Rule[T]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        json_mode: str | None = ...,
        **kwargs: Any,
    ) -> HealStream[T]: ...
    @overload
    def create(
        self,
        *,
        response_model: Mapping[str, Any],
        messages: Iterable[Any],
        stream: Literal[True],
        contracts: Iterable[Rule[Any]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        json_mode: str | None = ...,
        **kwargs: Any,
    ) -> HealStream[Any]: ...
    @overload
    def create(
        self,
        *,
        response_model: type[T],
        messages: Iterable[Any],
        stream: Literal[False] = ...,
        contracts: Iterable[Rule[T]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        json_mode: str | None = ...,
        **kwargs: Any,
    ) -> Outcome[T]: ...
    @overload
    def create(
        self,
        *,
        response_model: Mapping[str, Any],
        messages: Iterable[Any],
        stream: Literal[False] = ...,
        contracts: Iterable[Rule[Any]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        json_mode: str | None = ...,
        **kwargs: Any,
    ) -> Outcome[Any]: ...
    @overload
    def create(
        self,
        *,
        heal_tools: Literal[True],
        tools: Iterable[Any],
        stream: Literal[True],
        tool_contracts: Mapping[str, Iterable[Rule[Any]]] | None = ...,
        policy: HealPolicy | None = ...,
        context: Mapping[str, Any] | None = ...,
        **kwargs: Any,
    ) -> ToolCallStream: ...
    @overload
    def create(
        self,
        *,
        heal_tools: Literal[True],
        tools: Iterable[Any],
        tool_contracts: Mapping[str, Iterable[Rule[Any]]] | None = ...,
        policy: HealPolicy | None = ...,
        context: Mapping[str, Any] | None = ...,
        **kwargs: Any,
    ) -> Outcome[ToolCalls]: ...
    # without response_model: the SDK's own call, its own types
    @overload
    def create(
        self, *, response_model: None = ..., stream: Literal[True], **kwargs: Any
    ) -> openai.Stream[ChatCompletionChunk]: ...
    @overload
    def create(
        self, *, response_model: None = ..., stream: Literal[False] = ..., **kwargs: Any
    ) -> ChatCompletion: ...
    @overload
    def create(
        self, *, response_model: None = ..., stream: bool, **kwargs: Any
    ) -> ChatCompletion | openai.Stream[ChatCompletionChunk]: ...
    @overload
    def parse(
        self,
        *,
        response_format: type[T],
        messages: Iterable[Any],
        contracts: Iterable[Rule[T]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        json_mode: str | None = ...,
        **kwargs: Any,
    ) -> Outcome[T]: ...
    @overload
    def parse(self, **kwargs: Any) -> Any: ...  # passthrough (a dict response_format)
    def __getattr__(self, name: str) -> Any: ...


class AsyncHealingCompletions(Protocol):
    """`wrap(AsyncOpenAI()).chat.completions` as a type checker sees it."""

    @overload
    def create(
        self,
        *,
        response_model: type[T],
        messages: Iterable[Any],
        stream: Literal[True],
        contracts: Iterable[Rule[T]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        json_mode: str | None = ...,
        **kwargs: Any,
    ) -> AsyncHealStream[T]: ...
    @overload
    def create(
        self,
        *,
        response_model: Mapping[str, Any],
        messages: Iterable[Any],
        stream: Literal[True],
        contracts: Iterable[Rule[Any]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        json_mode: str | None = ...,
        **kwargs: Any,
    ) -> AsyncHealStream[Any]: ...
    @overload
    def create(
        self,
        *,
        response_model: type[T],
        messages: Iterable[Any],
        stream: Literal[False] = ...,
        contracts: Iterable[Rule[T]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        json_mode: str | None = ...,
        **kwargs: Any,
    ) -> Coroutine[Any, Any, Outcome[T]]: ...
    @overload
    def create(
        self,
        *,
        response_model: Mapping[str, Any],
        messages: Iterable[Any],
        stream: Literal[False] = ...,
        contracts: Iterable[Rule[Any]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        json_mode: str | None = ...,
        **kwargs: Any,
    ) -> Coroutine[Any, Any, Outcome[Any]]: ...
    @overload
    def create(
        self,
        *,
        heal_tools: Literal[True],
        tools: Iterable[Any],
        stream: Literal[True],
        tool_contracts: Mapping[str, Iterable[Rule[Any]]] | None = ...,
        policy: HealPolicy | None = ...,
        context: Mapping[str, Any] | None = ...,
        **kwargs: Any,
    ) -> AsyncToolCallStream: ...
    @overload
    def create(
        self,
        *,
        heal_tools: Literal[True],
        tools: Iterable[Any],
        tool_contracts: Mapping[str, Iterable[Rule[Any]]] | None = ...,
        policy: HealPolicy | None = ...,
        context: Mapping[str, Any] | None = ...,
        **kwargs: Any,
    ) -> Coroutine[Any, Any, Outcome[ToolCalls]]: ...
    # without response_model: the SDK's own call, its own types
    @overload
    def create(
        self, *, response_model: None = ..., stream: Literal[True], **kwargs: Any
    ) -> Coroutine[Any, Any, openai.AsyncStream[ChatCompletionChunk]]: ...
    @overload
    def create(
        self, *, response_model: None = ..., stream: Literal[False] = ..., **kwargs: Any
    ) -> Coroutine[Any, Any, ChatCompletion]: ...
    @overload
    def create(
        self, *, response_model: None = ..., stream: bool, **kwargs: Any
    ) -> Coroutine[Any, Any, ChatCompletion | openai.AsyncStream[ChatCompletionChunk]]: ...
    @overload
    def parse(
        self,
        *,
        response_format: type[T],
        messages: Iterable[Any],
        contracts: Iterable[Rule[T]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        json_mode: str | None = ...,
        **kwargs: Any,
    ) -> Coroutine[Any, Any, Outcome[T]]: ...
    @overload
    def parse(self, **kwargs: Any) -> Any: ...  # passthrough (a dict response_format)
    def __getattr__(self, name: str) -> Any: ...


class HealingResponses(Protocol):
    """`wrap(OpenAI()).responses` as a type checker sees it."""

    @overload
    def create(
        self,
        *,
        response_model: type[T],
        stream: Literal[True],
        contracts: Iterable[Rule[T]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        json_mode: str | None = ...,
        repair_via: Literal["input", "previous_response_id"] = ...,
        **kwargs: Any,
    ) -> HealStream[T]: ...
    @overload
    def create(
        self,
        *,
        response_model: Mapping[str, Any],
        stream: Literal[True],
        contracts: Iterable[Rule[Any]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        json_mode: str | None = ...,
        repair_via: Literal["input", "previous_response_id"] = ...,
        **kwargs: Any,
    ) -> HealStream[Any]: ...
    @overload
    def create(
        self,
        *,
        response_model: type[T],
        stream: Literal[False] = ...,
        contracts: Iterable[Rule[T]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        json_mode: str | None = ...,
        repair_via: Literal["input", "previous_response_id"] = ...,
        **kwargs: Any,
    ) -> Outcome[T]: ...
    @overload
    def create(
        self,
        *,
        response_model: Mapping[str, Any],
        stream: Literal[False] = ...,
        contracts: Iterable[Rule[Any]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        json_mode: str | None = ...,
        repair_via: Literal["input", "previous_response_id"] = ...,
        **kwargs: Any,
    ) -> Outcome[Any]: ...
    @overload
    def create(
        self,
        *,
        heal_tools: Literal[True],
        tools: Iterable[Any],
        stream: Literal[True],
        tool_contracts: Mapping[str, Iterable[Rule[Any]]] | None = ...,
        policy: HealPolicy | None = ...,
        context: Mapping[str, Any] | None = ...,
        **kwargs: Any,
    ) -> ToolCallStream: ...
    @overload
    def create(
        self,
        *,
        heal_tools: Literal[True],
        tools: Iterable[Any],
        tool_contracts: Mapping[str, Iterable[Rule[Any]]] | None = ...,
        policy: HealPolicy | None = ...,
        context: Mapping[str, Any] | None = ...,
        **kwargs: Any,
    ) -> Outcome[ToolCalls]: ...
    # without response_model: the SDK's own call, its own types
    @overload
    def create(
        self, *, response_model: None = ..., stream: Literal[True], **kwargs: Any
    ) -> openai.Stream[ResponseStreamEvent]: ...
    @overload
    def create(
        self, *, response_model: None = ..., stream: Literal[False] = ..., **kwargs: Any
    ) -> Response: ...
    @overload
    def create(
        self, *, response_model: None = ..., stream: bool, **kwargs: Any
    ) -> Response | openai.Stream[ResponseStreamEvent]: ...
    @overload
    def parse(
        self,
        *,
        text_format: type[T],
        contracts: Iterable[Rule[T]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        json_mode: str | None = ...,
        repair_via: Literal["input", "previous_response_id"] = ...,
        **kwargs: Any,
    ) -> Outcome[T]: ...
    @overload
    def parse(self, **kwargs: Any) -> Any: ...  # passthrough
    @overload
    def stream(
        self,
        *,
        text_format: type[T],
        contracts: Iterable[Rule[T]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        json_mode: str | None = ...,
        repair_via: Literal["input", "previous_response_id"] = ...,
        **kwargs: Any,
    ) -> HealStream[T]: ...
    @overload
    def stream(self, **kwargs: Any) -> Any: ...  # passthrough
    def __getattr__(self, name: str) -> Any: ...


class AsyncHealingResponses(Protocol):
    """`wrap(AsyncOpenAI()).responses` as a type checker sees it."""

    @overload
    def create(
        self,
        *,
        response_model: type[T],
        stream: Literal[True],
        contracts: Iterable[Rule[T]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        json_mode: str | None = ...,
        repair_via: Literal["input", "previous_response_id"] = ...,
        **kwargs: Any,
    ) -> AsyncHealStream[T]: ...
    @overload
    def create(
        self,
        *,
        response_model: Mapping[str, Any],
        stream: Literal[True],
        contracts: Iterable[Rule[Any]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        json_mode: str | None = ...,
        repair_via: Literal["input", "previous_response_id"] = ...,
        **kwargs: Any,
    ) -> AsyncHealStream[Any]: ...
    @overload
    def create(
        self,
        *,
        response_model: type[T],
        stream: Literal[False] = ...,
        contracts: Iterable[Rule[T]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        json_mode: str | None = ...,
        repair_via: Literal["input", "previous_response_id"] = ...,
        **kwargs: Any,
    ) -> Coroutine[Any, Any, Outcome[T]]: ...
    @overload
    def create(
        self,
        *,
        response_model: Mapping[str, Any],
        stream: Literal[False] = ...,
        contracts: Iterable[Rule[Any]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        json_mode: str | None = ...,
        repair_via: Literal["input", "previous_response_id"] = ...,
        **kwargs: Any,
    ) -> Coroutine[Any, Any, Outcome[Any]]: ...
    @overload
    def create(
        self,
        *,
        heal_tools: Literal[True],
        tools: Iterable[Any],
        stream: Literal[True],
        tool_contracts: Mapping[str, Iterable[Rule[Any]]] | None = ...,
        policy: HealPolicy | None = ...,
        context: Mapping[str, Any] | None = ...,
        **kwargs: Any,
    ) -> AsyncToolCallStream: ...
    @overload
    def create(
        self,
        *,
        heal_tools: Literal[True],
        tools: Iterable[Any],
        tool_contracts: Mapping[str, Iterable[Rule[Any]]] | None = ...,
        policy: HealPolicy | None = ...,
        context: Mapping[str, Any] | None = ...,
        **kwargs: Any,
    ) -> Coroutine[Any, Any, Outcome[ToolCalls]]: ...
    # without response_model: the SDK's own call, its own types
    @overload
    def create(
        self, *, response_model: None = ..., stream: Literal[True], **kwargs: Any
    ) -> Coroutine[Any, Any, openai.AsyncStream[ResponseStreamEvent]]: ...
    @overload
    def create(
        self, *, response_model: None = ..., stream: Literal[False] = ..., **kwargs: Any
    ) -> Coroutine[Any, Any, Response]: ...
    @overload
    def create(
        self, *, response_model: None = ..., stream: bool, **kwargs: Any
    ) -> Coroutine[Any, Any, Response | openai.AsyncStream[ResponseStreamEvent]]: ...
    @overload
    def parse(
        self,
        *,
        text_format: type[T],
        contracts: Iterable[Rule[T]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        json_mode: str | None = ...,
        repair_via: Literal["input", "previous_response_id"] = ...,
        **kwargs: Any,
    ) -> Coroutine[Any, Any, Outcome[T]]: ...
    @overload
    def parse(self, **kwargs: Any) -> Any: ...  # passthrough
    @overload
    def stream(
        self,
        *,
        text_format: type[T],
        contracts: Iterable[Rule[T]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        json_mode: str | None = ...,
        repair_via: Literal["input", "previous_response_id"] = ...,
        **kwargs: Any,
    ) -> AsyncHealStream[T]: ...
    @overload
    def stream(self, **kwargs: Any) -> Any: ...  # passthrough
    def __getattr__(self, name: str) -> Any: ...


class _Chat(Protocol):
    @property
    def completions(self) -> HealingCompletions: ...
    def __getattr__(self, name: str) -> Any: ...


class _AsyncChat(Protocol):
    @property
    def completions(self) -> AsyncHealingCompletions: ...
    def __getattr__(self, name: str) -> Any: ...


class HealingClient(Protocol):
    """A wrapped sync client: `chat.completions.create(response_model=M, ...)` is `Outcome[M]`;
    every other attribute is the wrapped client's."""

    @property
    def chat(self) -> _Chat: ...
    @property
    def responses(self) -> HealingResponses: ...
    @property
    def is_async(self) -> bool: ...
    def __getattr__(self, name: str) -> Any: ...


class AsyncHealingClient(Protocol):
    """A wrapped async client: `await chat.completions.create(response_model=M, ...)` is
    `Outcome[M]`; every other attribute is the wrapped client's."""

    @property
    def chat(self) -> _AsyncChat: ...
    @property
    def responses(self) -> AsyncHealingResponses: ...
    @property
    def is_async(self) -> bool: ...
    def __getattr__(self, name: str) -> Any: ...


@overload
def wrap(  # type: ignore[overload-overlap]  # instructor's AsyncInstructor is an Instructor
    client: instructor.AsyncInstructor,
    *,
    json_mode: str = ...,
    policy: HealPolicy | None = ...,
) -> AsyncHealingInstructor: ...
@overload
def wrap(
    client: instructor.Instructor,
    *,
    json_mode: str = ...,
    policy: HealPolicy | None = ...,
) -> HealingInstructor: ...
@overload
def wrap(
    client: openai.AsyncOpenAI,
    *,
    json_mode: str = ...,
    policy: HealPolicy | None = ...,
) -> AsyncHealingClient: ...
@overload
def wrap(
    client: openai.OpenAI,
    *,
    json_mode: str = ...,
    policy: HealPolicy | None = ...,
) -> HealingClient: ...
@overload
def wrap(
    client: anthropic.AsyncAnthropic, *, json_mode: str = ..., policy: HealPolicy | None = ...
) -> AsyncHealingAnthropic: ...
@overload
def wrap(
    client: anthropic.Anthropic, *, json_mode: str = ..., policy: HealPolicy | None = ...
) -> HealingAnthropic: ...
@overload
def wrap(client: Any, *, json_mode: str = ..., policy: HealPolicy | None = ...) -> Any: ...
def wrap(client: Any, *, json_mode: str = "json_schema", policy: HealPolicy | None = None) -> Any:
    """Wrap an `openai.OpenAI` / `openai.AsyncOpenAI` client (or an instructor client, or an
    `anthropic.Anthropic` / `anthropic.AsyncAnthropic` client: its `messages.create` and
    `messages.stream` heal the same way, in Anthropic's tiers — native structured output, a
    forced strict tool, the schema in the system prompt — named like the chat tiers; or a
    `google.genai.Client`: `models.generate_content` / `generate_content_stream`, and through
    `aio`, with `response_json_schema`, JSON mime type, or the schema in the instruction).

    `client.chat.completions.create(...)` without `response_model` is passed through unchanged;
    with `response_model=M` (and optional `contracts=`, `policy=`, `fallback=`, `examples=`,
    `context=`, `json_mode=`) it returns `Outcome[M]` (awaitable for an async client) and never
    raises for what the provider or the model does; with `stream=True` too, a `HealStream[M]`
    (`AsyncHealStream[M]`) of `Partial[M]` snapshots whose `.outcome` is the run's.
    `chat.completions.parse(response_format=M)` is healed as `create(response_model=M)`, and
    `client.responses` heals the Responses API alike (`create(response_model=M)`,
    `parse(text_format=M)`, `stream(text_format=M)`; see `healjson.adapters._responses`).

    `json_mode` is the strongest JSON mode the endpoint supports: `json_schema` (OpenAI strict
    structured outputs, the default), `structured_outputs` (vLLM >= 0.12: its `structured_outputs`
    extra field, a `choice` for a target of literal values), `constrained` (the full JSON schema
    as a non-strict `response_format` json_schema, which SGLang, llama.cpp's server, Ollama, LM
    Studio and vLLM enforce while decoding), `json_object` (JSON mode plus the schema in the
    prompt) or `prompt` (schema in the prompt only). A tier the endpoint rejects with HTTP 400 is
    stepped down once and remembered; one it accepts but does not enforce (its first answer
    breaks the schema it was sent) is flagged `schema_not_enforced` on that attempt, and the
    client logs `healjson.schema_not_enforced` once.
    Wrapping a wrapped client wraps the client beneath it (one healing layer, the new settings).
    """
    from ._providers import PROVIDERS, resolve
    from .adapters._base import unwrapped

    client = unwrapped(client)  # the adapter is chosen by the client beneath any healjson layer
    module = type(client).__module__
    for prefix, adapter in _CARRIERS.items():
        if module.startswith(prefix):
            return resolve(adapter)(client, json_mode=json_mode, policy=policy)
    provider = PROVIDERS.for_client(client)  # by its SDK (the default: OpenAI-compatible)
    if provider.adapter is None:
        raise TypeError(
            f"healjson cannot wrap a {type(client).__name__}: {provider.name} has no client"
        )
    return resolve(provider.adapter)(client, json_mode=json_mode, policy=policy)


# libraries whose clients carry a provider's client inside: their adapters, by module prefix
_CARRIERS: Final = {"instructor": "healjson.adapters._instructor:InstructorClient"}


@overload
def wrap_callable(  # type: ignore[overload-overlap]  # a coroutine function is a callable too
    fn: Callable[..., Coroutine[Any, Any, R]],
    *,
    async_: bool | None = ...,
    json_mode: str = ...,
    policy: HealPolicy | None = ...,
) -> AsyncHealingFunction[R]: ...
@overload
def wrap_callable(
    fn: Callable[..., Any],
    *,
    async_: Literal[True],
    json_mode: str = ...,
    policy: HealPolicy | None = ...,
) -> AsyncHealingFunction[Any]: ...
@overload
def wrap_callable(
    fn: Callable[..., R],
    *,
    async_: Literal[False, None] = ...,
    json_mode: str = ...,
    policy: HealPolicy | None = ...,
) -> HealingFunction[R]: ...
def wrap_callable(
    fn: Callable[..., Any],
    *,
    async_: bool | None = None,
    json_mode: str = "json_schema",
    policy: HealPolicy | None = None,
) -> Any:
    """Wrap a chat-completion function: one that takes OpenAI-style keyword arguments
    (`model=`, `messages=`, ...) and returns an OpenAI-shaped completion, object or dict (a
    stream of chunks with `stream=True`) — LiteLLM's `completion` / `acompletion`, a gateway
    client's method, your own.

    `healed = wrap_callable(fn)`; `healed(..., response_model=M)` (or `healed.create(...)`)
    returns `Outcome[M]` — awaitable when `fn` is a coroutine function (or `async_=True`, for
    one whose decorator hides it) — and never raises for what the provider or the model does;
    with `stream=True` a `HealStream[M]` / `AsyncHealStream[M]`. Without `response_model` it
    is `fn(...)`, unchanged. `json_mode` and `policy` as for `wrap`: the function stands where
    a client's `chat.completions.create` stands.
    """
    from .adapters._callable import HealingCallable

    return HealingCallable(fn, async_=async_, json_mode=json_mode, policy=policy)
