"""What durable steps share (`healjson.dbos`, `healjson.temporal`): one model call as a durable
unit whose result is plain data, and the line between a failure worth retrying and one that is
an answer.

A healed call inside a workflow is driven by the ordinary drivers (`Healer.run` / `arun`); only
its `call` changes: each model call runs as its own durable unit (a DBOS step; a Temporal
activity's recorded progress), and what the unit returns is data — the `Reply` the wire readers
made of the SDK's response, or a terminal failure — so a workflow that resumes gets each
finished call's result back and calls the model only for what never finished. The engine is
deterministic given its calls' results (what `Healer.replay` relies on): the healing itself runs
again, not the calls.

Failures, decided once here:

- **transient** (HTTP 408, 409, 429 or 5xx; a connection failure or a timeout with no HTTP
  answer): the unit raises `RetryableError`, so the durable framework retries it (a DBOS step's
  retries, a Temporal activity's retry policy);
- **terminal** (any other HTTP answer: 400, 401, 403, 404, ...; a body no wire format reads): the
  unit returns it as data, and the run degrades with it (`api_error`) like any run: a value,
  never a retry;
- an exception from the caller's own code (a bug) is raised unchanged.

A `Degraded` outcome (a refusal, a content filter, a spent budget, an answer still invalid after
the last attempt) is the healed step's return value, or with `on_degraded="raise"` a
`healjson.DegradedError` the framework does not retry.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, Final, Literal

from ._core.diagnostic import describe_exception
from ._core.run.drive import exception_kind, is_provider_error, settled
from ._core.wire.effects import DeadlineExceeded, ProviderError
from ._core.wire.fault import fault_from_exception
from ._core.wire.reply import Reply, ToolCall, Usage, to_reply

__all__ = [
    "OnDegraded",
    "RetryableError",
    "acall_as_data",
    "call_as_data",
    "check_on_degraded",
    "is_transient",
    "reply_from_data",
]

OnDegraded = Literal["value", "raise"]

TRANSIENT_STATUS: Final = frozenset({408, 409, 429})


class RetryableError(Exception):
    """A transient provider failure in a durable step or activity (HTTP 408, 409, 429, 5xx, a
    connection failure, a timeout): raised so that the durable framework retries the unit. A
    plain run never raises it (its failures degrade); `status` is the HTTP status, if any."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status

    def __reduce__(
        self,
    ) -> tuple[Any, ...]:  # recorded by a framework, read back in another process
        return (type(self), (self.message, self.status))


class RecordedFailure(ProviderError):
    """A terminal failure read back from a durable unit's data: the run degrades with it."""


class RecordedTimeout(RecordedFailure, TimeoutError):
    """A terminal timeout read back (the run degrades with `timeout`)."""


def is_transient(exc: BaseException) -> bool:
    """True for a failure worth retrying: HTTP 408, 409, 429 or 5xx, or (with no HTTP answer)
    a connection failure or a timeout. The run's own deadline is not one."""
    if isinstance(exc, DeadlineExceeded):
        return False
    fault = fault_from_exception(exc)
    if fault is not None:
        return fault.status in TRANSIENT_STATUS or fault.status >= 500
    return (
        isinstance(exc, OSError | TimeoutError)
        or exception_kind(exc) == "timeout"
        or any("Connection" in cls.__name__ for cls in type(exc).__mro__)
    )


def call_as_data(
    call: Callable[..., Any],
    messages: list[dict[str, Any]],
    params: Mapping[str, Any],
    provider_errors: tuple[type[BaseException], ...] = (),
) -> dict[str, Any]:
    """One model call, as a durable unit runs it: `{"reply": ...}` (the reply as data) or
    `{"failure": ...}` (a terminal failure); `RetryableError` for a transient one; an exception
    of the caller's own code raised unchanged."""
    try:
        value = settled(call(list(map(dict, messages)), **params))
    except Exception as exc:
        return _failed(exc, provider_errors)
    return reply_as_data(value)


async def acall_as_data(
    call: Callable[..., Any],
    messages: list[dict[str, Any]],
    params: Mapping[str, Any],
    provider_errors: tuple[type[BaseException], ...] = (),
) -> dict[str, Any]:
    """`call_as_data` for a call that may be async (awaited on the running loop)."""
    try:
        value = call(list(map(dict, messages)), **params)
        if inspect.isawaitable(value):
            value = await value
    except Exception as exc:
        return _failed(exc, provider_errors)
    return reply_as_data(value)


def _failed(exc: Exception, provider_errors: tuple[type[BaseException], ...]) -> dict[str, Any]:
    """A call's exception: a terminal failure as data, `RetryableError` for a transient one, a
    bug raised unchanged."""
    if not is_provider_error(exc, provider_errors):
        raise exc
    if is_transient(exc):
        fault = fault_from_exception(exc)
        raise RetryableError(describe_exception(exc), fault.status if fault else None) from exc
    return {"failure": {"kind": exception_kind(exc), "message": describe_exception(exc)}}


def reply_as_data(value: Any) -> dict[str, Any]:
    """What a call returned, read (`to_reply`) and kept as data; a shape no format reads is a
    terminal failure."""
    try:
        reply = value if type(value) is Reply else to_reply(value)
    except TypeError as exc:
        return {"failure": {"kind": "api_error", "message": str(exc)}}
    usage = reply.usage
    return {
        "reply": {
            "content": reply.content,
            "finish_reason": reply.finish_reason,
            "refusal": reply.refusal,
            "model": reply.model,
            "reasoning": reply.reasoning,
            "tool_calls": [[call.name, call.arguments, call.id] for call in reply.tool_calls],
            "usage": None
            if usage is None
            else {
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "estimated": usage.estimated,
                "reasoning_tokens": usage.reasoning_tokens,
                "cache_read_tokens": usage.cache_read_tokens,
                "cache_write_tokens": usage.cache_write_tokens,
                "requests": usage.requests,
                "model": usage.model,
            },
        }
    }


def reply_from_data(data: Mapping[str, Any]) -> Reply:
    """A durable unit's data back as the reply the flow is sent (a terminal failure raised as
    the provider's error, so the run degrades with it)."""
    failure = data.get("failure")
    if failure is not None:
        kind = RecordedTimeout if failure.get("kind") == "timeout" else RecordedFailure
        raise kind(str(failure.get("message", "the model call failed")))
    reply = data["reply"]
    usage = reply.get("usage")
    return Reply(
        reply.get("content"),
        reply.get("finish_reason"),
        reply.get("refusal"),
        None if usage is None else Usage(**usage),
        reply.get("model"),
        reply.get("reasoning"),
        tuple(ToolCall(name, arguments, ident) for name, arguments, ident in reply["tool_calls"]),
    )


def check_on_degraded(on_degraded: Any) -> OnDegraded:
    """`on_degraded`, checked at once (a configuration mistake)."""
    if on_degraded not in ("value", "raise"):
        raise ValueError(f'on_degraded must be "value" or "raise", got {on_degraded!r}')
    mode: OnDegraded = on_degraded
    return mode
