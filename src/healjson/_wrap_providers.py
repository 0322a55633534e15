"""What a type checker sees of `wrap(Anthropic())`, `wrap(AsyncAnthropic())` and
`wrap_callable(fn)` (protocols only; `healjson.wrap` returns them)."""

from __future__ import annotations

from collections.abc import Coroutine, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, overload

if TYPE_CHECKING:
    from ._core.contracts import Rule
    from ._core.outcome import Outcome
    from ._core.policy import HealPolicy
    from ._core.stream.run import AsyncHealStream, HealStream
    from ._core.tools import ToolCalls
    from .adapters._tool_stream import AsyncToolCallStream, ToolCallStream

__all__ = [
    "AsyncHealingAnthropic",
    "AsyncHealingFunction",
    "HealingAnthropic",
    "HealingFunction",
]

T = TypeVar("T")


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
    @overload
    def create(self, *, response_model: None = ..., **kwargs: Any) -> Any: ...  # passthrough
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
    def stream(self, *, response_model: None = ..., **kwargs: Any) -> Any: ...
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
    @overload
    def create(self, *, response_model: None = ..., **kwargs: Any) -> Any: ...
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
    def stream(self, *, response_model: None = ..., **kwargs: Any) -> Any: ...
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


class HealingFunction(Protocol):
    """`wrap_callable(fn)` for a sync `fn`: `healed(response_model=M, ...)` is `Outcome[M]`."""

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
    def __call__(self, *, response_model: None = ..., **kwargs: Any) -> Any: ...
    def __getattr__(self, name: str) -> Any: ...


class AsyncHealingFunction(Protocol):
    """`wrap_callable(fn)` for an async `fn`: `await healed(response_model=M, ...)` is
    `Outcome[M]`."""

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
    @overload
    def __call__(self, *, response_model: None = ..., **kwargs: Any) -> Any: ...
    def __getattr__(self, name: str) -> Any: ...
