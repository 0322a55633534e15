"""What a type checker sees of `wrap(Anthropic())`, `wrap(AsyncAnthropic())`, `wrap` of an
instructor client and `wrap_callable(fn)` (protocols only; `healjson.wrap` returns them)."""

from __future__ import annotations

from collections.abc import Coroutine, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, overload

if TYPE_CHECKING:
    import anthropic
    from anthropic.lib.streaming import AsyncMessageStreamManager, MessageStreamManager
    from anthropic.types import Message, RawMessageStreamEvent

    from ._core.judge.contracts import Rule
    from ._core.outcome.calls import ToolCalls
    from ._core.outcome.outcome import Outcome
    from ._core.run.policy import HealPolicy
    from ._core.run.streams import (
        AsyncHealStream,
        AsyncItemStream,
        AsyncToolCallStream,
        HealStream,
        ItemStream,
        ToolCallStream,
    )

__all__ = [
    "AsyncHealingAnthropic",
    "AsyncHealingFunction",
    "AsyncHealingInstructor",
    "HealingAnthropic",
    "HealingFunction",
    "HealingInstructor",
]

T = TypeVar("T")
R_co = TypeVar("R_co", covariant=True)


class _Messages(Protocol):
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
    ) -> anthropic.Stream[RawMessageStreamEvent]: ...
    @overload
    def create(
        self, *, response_model: None = ..., stream: Literal[False] = ..., **kwargs: Any
    ) -> Message: ...
    @overload
    def create(
        self, *, response_model: None = ..., stream: bool, **kwargs: Any
    ) -> Message | anthropic.Stream[RawMessageStreamEvent]: ...
    @overload
    def stream(
        self,
        *,
        response_model: type[T],
        messages: Iterable[Any],
        contracts: Iterable[Rule[T]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        **kwargs: Any,
    ) -> HealStream[T]: ...
    @overload
    def stream(
        self,
        *,
        response_model: Mapping[str, Any],
        messages: Iterable[Any],
        contracts: Iterable[Rule[Any]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        **kwargs: Any,
    ) -> HealStream[Any]: ...
    @overload
    def stream(self, *, response_model: None = ..., **kwargs: Any) -> MessageStreamManager[Any]: ...
    def __getattr__(self, name: str) -> Any: ...


class _AsyncMessages(Protocol):
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
    ) -> Coroutine[Any, Any, anthropic.AsyncStream[RawMessageStreamEvent]]: ...
    @overload
    def create(
        self, *, response_model: None = ..., stream: Literal[False] = ..., **kwargs: Any
    ) -> Coroutine[Any, Any, Message]: ...
    @overload
    def create(
        self, *, response_model: None = ..., stream: bool, **kwargs: Any
    ) -> Coroutine[Any, Any, Message | anthropic.AsyncStream[RawMessageStreamEvent]]: ...
    @overload
    def stream(
        self,
        *,
        response_model: type[T],
        messages: Iterable[Any],
        contracts: Iterable[Rule[T]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        **kwargs: Any,
    ) -> AsyncHealStream[T]: ...
    @overload
    def stream(
        self,
        *,
        response_model: Mapping[str, Any],
        messages: Iterable[Any],
        contracts: Iterable[Rule[Any]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        **kwargs: Any,
    ) -> AsyncHealStream[Any]: ...
    @overload
    def stream(
        self, *, response_model: None = ..., **kwargs: Any
    ) -> AsyncMessageStreamManager[Any]: ...
    def __getattr__(self, name: str) -> Any: ...


class HealingAnthropic(Protocol):
    """`wrap(Anthropic())`: `messages.create(response_model=M, ...)` is `Outcome[M]`."""

    @property
    def messages(self) -> _Messages: ...
    def __getattr__(self, name: str) -> Any: ...


class AsyncHealingAnthropic(Protocol):
    """`wrap(AsyncAnthropic())`: `await messages.create(response_model=M, ...)` is `Outcome[M]`."""

    @property
    def messages(self) -> _AsyncMessages: ...
    def __getattr__(self, name: str) -> Any: ...


class HealingFunction(Protocol[R_co]):
    """`wrap_callable(fn)` for a sync `fn`: `healed(response_model=M, ...)` is `Outcome[M]`;
    without `response_model` it is `fn(...)`, of `fn`'s own return type."""

    @overload
    def __call__(
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
        **kwargs: Any,
    ) -> HealStream[T]: ...
    @overload
    def __call__(
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
        **kwargs: Any,
    ) -> HealStream[Any]: ...
    @overload
    def __call__(
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
        **kwargs: Any,
    ) -> Outcome[T]: ...
    @overload
    def __call__(
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
        **kwargs: Any,
    ) -> Outcome[Any]: ...
    @overload
    def __call__(self, *, response_model: None = ..., **kwargs: Any) -> R_co: ...
    def __getattr__(self, name: str) -> Any: ...


class AsyncHealingFunction(Protocol[R_co]):
    """`wrap_callable(fn)` for an async `fn`: `await healed(response_model=M, ...)` is
    `Outcome[M]`; without `response_model`, `await healed(...)` is `fn`'s own result."""

    @overload
    def __call__(
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
        **kwargs: Any,
    ) -> AsyncHealStream[T]: ...
    @overload
    def __call__(
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
        **kwargs: Any,
    ) -> AsyncHealStream[Any]: ...
    @overload
    def __call__(
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
        **kwargs: Any,
    ) -> Coroutine[Any, Any, Outcome[T]]: ...
    @overload
    def __call__(
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
        **kwargs: Any,
    ) -> Coroutine[Any, Any, Outcome[Any]]: ...
    # without response_model: the function's own call, its own type
    @overload
    def __call__(
        self, *, response_model: None = ..., **kwargs: Any
    ) -> Coroutine[Any, Any, R_co]: ...
    def __getattr__(self, name: str) -> Any: ...


class _InstructorCalls(Protocol):
    """The healed calls an instructor client has (on the client and on `chat.completions`)."""

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
        **kwargs: Any,
    ) -> HealStream[T]: ...
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
        **kwargs: Any,
    ) -> Outcome[T]: ...
    @overload
    def create(self, *args: Any, response_model: None = ..., **kwargs: Any) -> Any: ...
    @overload
    def create_with_completion(
        self,
        *,
        response_model: type[T],
        messages: Iterable[Any],
        contracts: Iterable[Rule[T]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        **kwargs: Any,
    ) -> tuple[Outcome[T], Any]: ...
    @overload
    def create_with_completion(
        self, *args: Any, response_model: None = ..., **kwargs: Any
    ) -> Any: ...  # instructor's own
    @overload
    def create_partial(
        self,
        *,
        response_model: type[T],
        messages: Iterable[Any],
        contracts: Iterable[Rule[T]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        **kwargs: Any,
    ) -> HealStream[T]: ...
    @overload
    def create_partial(self, *args: Any, response_model: None = ..., **kwargs: Any) -> Any: ...
    @overload
    def create_iterable(
        self,
        *,
        response_model: type[T],
        messages: Iterable[Any],
        contracts: Iterable[Rule[list[T]]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        **kwargs: Any,
    ) -> ItemStream[T]: ...
    @overload
    def create_iterable(self, *args: Any, response_model: None = ..., **kwargs: Any) -> Any: ...
    def __getattr__(self, name: str) -> Any: ...


class _AsyncInstructorCalls(Protocol):
    """`_InstructorCalls` of an async instructor client."""

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
        **kwargs: Any,
    ) -> AsyncHealStream[T]: ...
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
        **kwargs: Any,
    ) -> Coroutine[Any, Any, Outcome[T]]: ...
    @overload
    def create(self, *args: Any, response_model: None = ..., **kwargs: Any) -> Any: ...
    @overload
    def create_with_completion(
        self,
        *,
        response_model: type[T],
        messages: Iterable[Any],
        contracts: Iterable[Rule[T]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        **kwargs: Any,
    ) -> Coroutine[Any, Any, tuple[Outcome[T], Any]]: ...
    @overload
    def create_with_completion(
        self, *args: Any, response_model: None = ..., **kwargs: Any
    ) -> Any: ...  # instructor's own
    @overload
    def create_partial(
        self,
        *,
        response_model: type[T],
        messages: Iterable[Any],
        contracts: Iterable[Rule[T]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        **kwargs: Any,
    ) -> AsyncHealStream[T]: ...
    @overload
    def create_partial(self, *args: Any, response_model: None = ..., **kwargs: Any) -> Any: ...
    @overload
    def create_iterable(
        self,
        *,
        response_model: type[T],
        messages: Iterable[Any],
        contracts: Iterable[Rule[list[T]]] = ...,
        policy: HealPolicy | None = ...,
        fallback: Any = ...,
        examples: Iterable[Any] = ...,
        context: Mapping[str, Any] | None = ...,
        **kwargs: Any,
    ) -> AsyncItemStream[T]: ...
    @overload
    def create_iterable(self, *args: Any, response_model: None = ..., **kwargs: Any) -> Any: ...
    def __getattr__(self, name: str) -> Any: ...


class _InstructorChat(Protocol):
    @property
    def completions(self) -> _InstructorCalls: ...
    def __getattr__(self, name: str) -> Any: ...


class _AsyncInstructorChat(Protocol):
    @property
    def completions(self) -> _AsyncInstructorCalls: ...
    def __getattr__(self, name: str) -> Any: ...


class HealingInstructor(_InstructorCalls, Protocol):
    """`wrap(instructor_client)`: `create(response_model=M, ...)` is `Outcome[M]`,
    `create_with_completion` `(Outcome[M], completion)`, `create_partial` a `HealStream[M]`,
    `create_iterable(response_model=Item)` an `ItemStream[Item]`; on the client and on
    `chat.completions` alike. Without `response_model`: instructor's own call."""

    @property
    def chat(self) -> _InstructorChat: ...
    @property
    def is_async(self) -> bool: ...


class AsyncHealingInstructor(_AsyncInstructorCalls, Protocol):
    """`wrap(async_instructor_client)`: as `HealingInstructor`, awaited (the streams are
    `AsyncHealStream[M]` / `AsyncItemStream[Item]`)."""

    @property
    def chat(self) -> _AsyncInstructorChat: ...
    @property
    def is_async(self) -> bool: ...
