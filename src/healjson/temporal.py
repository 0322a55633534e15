"""`healjson.temporal` (extra `temporal`): a healed call as a Temporal activity.

    from healjson.temporal import healed_activity

    extract = healed_activity(healer, call, name="extract_invoice")  # an activity definition
    worker = Worker(client, task_queue="q", workflows=[...], activities=[extract])
    # in the workflow:
    data = await workflow.execute_activity(
        extract, {"messages": [...], "params": {"model": "gpt-4o-mini"}},
        start_to_close_timeout=timedelta(minutes=2), heartbeat_timeout=timedelta(seconds=30),
    )
    outcome = healjson.outcome_from_dict(data, Invoice)

The activity heals the request with the ordinary driver and returns the outcome as data
(`Outcome.to_dict()`, which `healjson.outcome_from_dict` reads back). Each model call that
finishes is recorded in the activity's heartbeat details (the reply as data, redacted as
`healjson._durable` says), under the request's name (`request_id`: its messages and parameters,
the healer's fingerprint and the run's context); an attempt that Temporal
retries reads them back and makes only the calls that never finished — the engine is
deterministic given its calls' results, so the run reaches the same point. Calls recorded for
another request (an activity of your own that heals several: the details hold the last one's)
are never handed to this one: its calls are made again.

A healer's response cache is looked up as in any run: an activity's attempt is its own run, a
lookup happens only before its first call and a hit ends it, so a hit on a retried attempt
serves this request's stored answer and leaves the recorded calls unread (never another's).

Failures (`healjson._durable`): a transient provider failure (HTTP 408, 409, 429, 5xx, a dropped
connection, a timeout) raises `healjson.RetryableError`, which Temporal's retry policy retries; a
terminal one (HTTP 400, 401, 404, ...) degrades the run with `api_error`. A `Degraded` outcome —
a refusal, a content filter, a spent budget, an answer still invalid after the last attempt —
is returned as data and consumes no retry; with `on_degraded="raise"` it raises a non-retryable
`ApplicationError` (type `healjson.Degraded`, the outcome's data as its detail).

`client=`: the SDK client `call` uses, whose key the redactor then knows (a `call` that is one
of its own methods names it already). `healed_activity(healer, call, messages, **params)` with
messages runs the same inside an
activity of your own and returns the `Outcome` (raising as above).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, Final

from ._core.outcome.outcome import Outcome
from ._core.run.healer import Healer
from ._durable import (
    RetryableError,
    acall_as_data,
    call_as_data,
    check_on_degraded,
    durable_scope,
    reply_from_data,
    request_id,
)
from ._extras import require_extra

__all__ = ["RetryableError", "healed_activity"]

_FACTORY: Final[Any] = object()
_KEY: Final = "healjson_calls"
_REQUEST: Final = "healjson_request"


def healed_activity(
    healer: Healer[Any],
    call: Callable[..., Any],
    messages: Any = _FACTORY,
    *,
    context: Mapping[str, Any] | None = None,
    client: Any = None,
    name: str = "healjson_heal",
    on_degraded: str = "value",
    **params: Any,
) -> Any:
    """The activity definition (without `messages`; see the module docstring), or inside a
    running activity the outcome of healing `messages`."""
    mode = check_on_degraded(on_degraded)
    temporal = require_extra("temporalio.activity", "temporal", "temporalio")
    if messages is not _FACTORY:
        if inspect.iscoroutinefunction(call):
            return _arun(healer, call, messages, context, params, mode=mode, client=client)
        return _run(healer, call, messages, context, params, mode=mode, client=client)
    if inspect.iscoroutinefunction(call):

        async def heal_async(request: dict[str, Any]) -> dict[str, Any]:
            given = _request(request)
            outcome = await _arun(
                healer,
                call,
                given[0],
                given[1],
                {**params, **given[2]},
                mode=mode,
                client=client,
            )
            return outcome.to_dict()

        return temporal.defn(name=name)(heal_async)

    def heal(request: dict[str, Any]) -> dict[str, Any]:
        given = _request(request)
        outcome = _run(
            healer, call, given[0], given[1], {**params, **given[2]}, mode=mode, client=client
        )
        return outcome.to_dict()

    return temporal.defn(name=name)(heal)


def _request(request: Mapping[str, Any]) -> tuple[Any, Mapping[str, Any] | None, dict[str, Any]]:
    """An activity's input: `{"messages": ..., "params": {...}, "context": {...}}`."""
    if not isinstance(request, Mapping) or "messages" not in request:
        raise TypeError('the activity takes {"messages": [...], "params": {...}, "context": {...}}')
    return request["messages"], request.get("context"), dict(request.get("params") or {})


class _Recorded:
    """The model calls of this activity's earlier attempts for this request (its heartbeat
    details, when they name it), handed back in order; each call that finishes now is recorded
    with a heartbeat, under the request's name."""

    def __init__(self, request: str) -> None:
        activity = require_extra("temporalio.activity", "temporal", "temporalio")
        self.activity = activity
        self.request = request
        details = activity.info().heartbeat_details
        found = details[-1] if details else None
        ours = isinstance(found, Mapping) and found.get(_REQUEST) == request
        calls = found.get(_KEY) if ours and isinstance(found, Mapping) else None
        self.earlier: list[Any] = list(calls) if isinstance(calls, list) else []
        self.done: list[Any] = []

    def next(self) -> Any:
        """An earlier attempt's result for this call, or None (then make the call)."""
        return self.earlier.pop(0) if self.earlier else None

    def record(self, data: Any) -> Any:
        self.done.append(data)
        # a snapshot (the list grows), named for its request
        self.activity.heartbeat({_REQUEST: self.request, _KEY: list(self.done)})
        return reply_from_data(data)


def _run(
    healer: Healer[Any],
    call: Callable[..., Any],
    messages: Any,
    context: Mapping[str, Any] | None,
    params: dict[str, Any],
    *,
    mode: str,
    client: Any,
) -> Outcome[Any]:
    recorded = _Recorded(request_id(messages, params, healer, context))
    errors = healer.policy.provider_errors

    def durable(sent: list[dict[str, Any]], **kwargs: Any) -> Any:
        data = recorded.next()
        if data is None:
            data = call_as_data(call, sent, kwargs, errors)
        return recorded.record(data)

    with durable_scope(client, call, params):
        outcome = healer.run(durable, messages, context=context, **params)
    return _settle(outcome, mode)


async def _arun(
    healer: Healer[Any],
    call: Callable[..., Any],
    messages: Any,
    context: Mapping[str, Any] | None,
    params: dict[str, Any],
    *,
    mode: str,
    client: Any,
) -> Outcome[Any]:
    recorded = _Recorded(request_id(messages, params, healer, context))
    errors = healer.policy.provider_errors

    async def durable(sent: list[dict[str, Any]], **kwargs: Any) -> Any:
        data = recorded.next()
        if data is None:
            data = await acall_as_data(call, sent, kwargs, errors)
        return recorded.record(data)

    with durable_scope(client, call, params):
        outcome = await healer.arun(durable, messages, context=context, **params)
    return _settle(outcome, mode)


def _settle(outcome: Outcome[Any], mode: str) -> Outcome[Any]:
    """A `Degraded` raised as a non-retryable `ApplicationError` with `on_degraded="raise"`."""
    if mode == "raise" and not outcome.ok:
        exceptions = require_extra("temporalio.exceptions", "temporal", "temporalio")
        raise exceptions.ApplicationError(
            f"healjson degraded: {outcome.reason}",
            outcome.to_dict(),
            type="healjson.Degraded",
            non_retryable=True,
        )
    return outcome
