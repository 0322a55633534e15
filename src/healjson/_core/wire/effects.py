"""The engine's effects boundary: what the flow yields, and what the drivers send back.

The engine is a generator that yields `ModelCall` (call the model) or `AwaitAll` (await async
contracts or fallback factories) and receives results in its own types: a `CallResult` holding
a `Reply` or a `CallFailure`, never a provider object or an SDK exception. The drivers
(`drive.py`) translate. A run with a response cache also yields `CacheGet` (the stored entry, or
None, comes back) and `CachePut` (None comes back): the flow itself does no I/O.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from healjson._core.diagnostic import Diagnostic
from healjson._core.frozen import builder

from .fault import ProviderFault
from .reply import Reply, ToolCall, Usage

__all__ = [
    "AwaitAll",
    "CacheGet",
    "CachePut",
    "CacheStore",
    "CallFailure",
    "CallResult",
    "DeadlineExceeded",
    "FailureKind",
    "ModelCall",
    "ProviderError",
    "RequestMessages",
    "new_call_result",
    "new_model_call",
    "reported_usage",
]

FailureKind = Literal["api_error", "timeout", "content_filter", "token_truncated"]


@dataclass(frozen=True, slots=True)
class ModelCall:
    """Effect: call the model with these messages and keyword parameters."""

    number: int
    messages: tuple[Mapping[str, Any], ...]
    params: Mapping[str, Any]
    timeout_s: float | None = None
    """The time left before the run's deadline (None: no deadline)."""
    provider_errors: tuple[type[BaseException], ...] = ()
    """Exception types the caller counts as the provider's, besides those healjson knows."""
    items: tuple[int, ...] = ()
    """A per-item repair: the answer is a list of these items of the list being repaired (in
    this order), not the whole list."""
    shared_prefix: int = 0
    """A repair: its first `shared_prefix` messages are the original request's, byte-identical
    (what a provider's prompt cache can read back); 0 for a first call."""


class RequestMessages(list[dict[str, Any]]):
    """The messages a driver hands a repair's call (a plain list to any code that reads it):
    `shared_prefix` says how many of them open the original request, unchanged, so that a wire
    format whose prompt cache needs an explicit mark (Anthropic's `cache_control`) sets it on
    the last of them."""

    __slots__ = ("shared_prefix",)

    def __init__(self, messages: list[dict[str, Any]], shared_prefix: int) -> None:
        super().__init__(messages)
        self.shared_prefix = shared_prefix


@dataclass(frozen=True, slots=True)
class AwaitAll:
    """Effect: await these and send back the results (each a value, or the exception it
    raised)."""

    awaitables: tuple[Awaitable[Any], ...]
    timeout_s: float | None = None
    """Each awaitable still running after this many seconds is cancelled; its result is a
    `TimeoutError` (None: no limit)."""


class CacheStore(Protocol):
    """Where a response cache keeps its entries (`healjson.ResponseCache`, or any object with
    these two methods): bytes or text under a key; `get` None when there is none."""

    def get(self, key: str) -> bytes | str | None:
        """The entry stored under `key`, or None."""
        ...

    def put(self, key: str, value: bytes) -> None:
        """Store `value` under `key` (replacing any entry)."""
        ...


@dataclass(frozen=True, slots=True)
class CacheGet:
    """Effect: read the entry under `key` from `store`; send back what `get` returned (None
    when it failed: a cache that cannot be read is a miss)."""

    store: CacheStore
    key: str


@dataclass(frozen=True, slots=True)
class CachePut:
    """Effect: store `value` under `key` in `store` (a failure to write is only reported)."""

    store: CacheStore
    key: str
    value: bytes


class ProviderError(Exception):
    """Raise it (or subclass it) in a model call for a failure of the provider or the transport
    that healjson cannot recognise by its type (a gateway's own error, a body that is no
    reply): the run degrades with `api_error` instead of the exception propagating."""


def reported_usage(exc: BaseException) -> Usage | None:
    """What a provider's answer that is no reply said the call cost (its format's usage member,
    read into the `ProviderError` raised for it: `reported_usage`), None when it said nothing."""
    usage = getattr(exc, "reported_usage", None) if isinstance(exc, ProviderError) else None
    return usage if isinstance(usage, Usage) and not usage.estimated else None


class DeadlineExceeded(TimeoutError):
    """A model call or an awaited contract ran past its time limit (a `TimeoutError`)."""


@dataclass(frozen=True, slots=True)
class CallFailure:
    """A model call that gave no reply: what kind of failure (the reason the run degrades
    with) and the error's message (not yet redacted)."""

    kind: FailureKind
    message: str
    deadline: bool = False
    """True when the run's own deadline cut the call short."""
    raw_text: str | None = None
    """What had arrived of a streamed answer before it failed."""
    partial: Any = None
    """The JSON data read from `raw_text`, if any."""
    fault: ProviderFault | None = None
    """The provider's HTTP error answer (status, code, message), when the call got one."""
    usage: Usage | None = None
    """What the call spent (`reply.call_usage`: it was made, so it counts), None when unknown."""
    tool_calls: tuple[ToolCall, ...] = ()
    """The tool calls that had arrived of a streamed answer before it failed."""
    error_type: str | None = None
    """The exception's fully-qualified class name (`diagnostic.qualified_name`), None when the
    failure was no exception."""


@dataclass(frozen=True, slots=True)
class CallResult:
    """What the driver sends back for a `ModelCall`: the reply, or why there is none."""

    reply: Reply | None
    failure: CallFailure | None
    elapsed_s: float
    aborted: tuple[Diagnostic, ...] = ()
    """A stream closed early: the violations more tokens could not fix (the reply is what had
    arrived)."""
    partial: Any = None
    """With `aborted`: the JSON data read before the stream was closed."""


new_model_call = builder(ModelCall)
new_call_result = builder(CallResult)
"""`ModelCall(...)` and `CallResult(...)` for the engine and the drivers (`frozen.builder`)."""
