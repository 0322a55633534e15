"""`healjson.dbos` (extra `dbos`): a healed call inside a DBOS workflow, each model call a step.

    from dbos import DBOS
    from healjson.dbos import healed_step

    @DBOS.workflow()
    def extract(rows):
        return [healed_step(healer, call, row["messages"], model="gpt-4o-mini") for row in rows]

`healed_step(healer, call, messages, **params)` runs `healer` on `messages` with the ordinary
driver; every model call it makes is a DBOS step (`DBOS.run_step`), whose result is checkpointed
in DBOS's system database as data (the reply the wire readers made of the SDK's response).
A workflow recovered after a crash re-runs its code: the calls that finished return their
recorded results, so no finished model call is made again — not even the first call of a row
whose repair was in flight — and the healing, deterministic given those results, reaches the
same point. Each step is keyed by the workflow's id and its position in it (DBOS's own key),
and named `healjson call N` (`name=` changes the prefix).

Failures (`healjson._durable`): a transient provider failure (HTTP 408, 409, 429, 5xx, a dropped
connection, a timeout) raises `healjson.RetryableError` inside the step, which DBOS retries
(`retries` attempts, `retry_interval_s` apart, doubling); a terminal one (HTTP 400, 401, 404,
...) is recorded and the run degrades with `api_error`. A `Degraded` outcome — a refusal, a
content filter, a spent budget, an answer still invalid after the last attempt — is returned as a
value and retries nothing; with `on_degraded="raise"` it raises `healjson.DegradedError`
instead (DBOS records the workflow's error; it does not retry it).

`healed_step(healer, call)` without messages returns the step function, `step(messages,
**params)`, to call inside workflows. `healed_step_async` is the same for async workflows
(`await`; the call may be async). The healer's contracts run again on a recovery, so they must
be deterministic (they are in any healjson run that can be replayed).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

from ._core.outcome.outcome import DegradedError, Outcome
from ._core.run.healer import Healer
from ._durable import (
    RetryableError,
    acall_as_data,
    call_as_data,
    check_on_degraded,
    reply_from_data,
)
from ._extras import require_extra

__all__ = ["RetryableError", "healed_step", "healed_step_async"]

_FACTORY: Final[Any] = object()
NAME: Final = "healjson call"


def healed_step(
    healer: Healer[Any],
    call: Callable[..., Any],
    messages: Any = _FACTORY,
    *,
    context: Mapping[str, Any] | None = None,
    name: str = NAME,
    retries: int = 5,
    retry_interval_s: float = 1.0,
    on_degraded: str = "value",
    **params: Any,
) -> Any:
    """Run `healer` on `messages` inside a DBOS workflow, each model call a DBOS step (see the
    module docstring); the `Outcome`. Without `messages`: the step function to call in
    workflows, `step(messages, *, context=None, **params)`."""
    mode = check_on_degraded(on_degraded)
    dbos = require_extra("dbos", "dbos").DBOS
    options = _options(retries, retry_interval_s)

    def step(messages: Any, *, context: Mapping[str, Any] | None = None, **more: Any) -> Any:
        counter = iter(range(1, 1_000_000))

        def durable(sent: list[dict[str, Any]], **kwargs: Any) -> Any:
            named = {**options, "name": f"{name} {next(counter)}"}
            errors = healer.policy.provider_errors
            data = dbos.run_step(named, call_as_data, call, list(sent), kwargs, errors)
            return reply_from_data(data)

        outcome: Outcome[Any] = healer.run(durable, messages, context=context, **{**params, **more})
        return _settle(outcome, mode)

    if messages is _FACTORY:
        return step
    return step(messages, context=context)


async def healed_step_async(
    healer: Healer[Any],
    call: Callable[..., Any],
    messages: Any,
    *,
    context: Mapping[str, Any] | None = None,
    name: str = NAME,
    retries: int = 5,
    retry_interval_s: float = 1.0,
    on_degraded: str = "value",
    **params: Any,
) -> Outcome[Any]:
    """`healed_step` in an async workflow (`await`): each model call an async DBOS step
    (`DBOS.run_step_async`); `call` may be a coroutine function."""
    mode = check_on_degraded(on_degraded)
    dbos = require_extra("dbos", "dbos").DBOS
    options = _options(retries, retry_interval_s)
    counter = iter(range(1, 1_000_000))

    async def durable(sent: list[dict[str, Any]], **kwargs: Any) -> Any:
        named = {**options, "name": f"{name} {next(counter)}"}
        errors = healer.policy.provider_errors
        data = await dbos.run_step_async(named, acall_as_data, call, list(sent), kwargs, errors)
        return reply_from_data(data)

    outcome: Outcome[Any] = await healer.arun(durable, messages, context=context, **params)
    settled: Outcome[Any] = _settle(outcome, mode)
    return settled


def _options(retries: int, retry_interval_s: float) -> dict[str, Any]:
    """The steps' DBOS options: retried on `RetryableError` only."""
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 1:
        raise ValueError(f"retries must be an int >= 1 (attempts of a step), got {retries!r}")
    if not isinstance(retry_interval_s, int | float) or retry_interval_s < 0:
        raise ValueError(f"retry_interval_s must be a number >= 0, got {retry_interval_s!r}")
    return {
        "retries_allowed": True,
        "max_attempts": retries,
        "interval_seconds": float(retry_interval_s),
        "backoff_rate": 2.0,
        "should_retry": _retryable,
    }


def _retryable(error: BaseException) -> bool:
    return isinstance(error, RetryableError)


def _settle(outcome: Outcome[Any], mode: str) -> Outcome[Any]:
    """The outcome as the step returns it: a `Degraded` raised with `on_degraded="raise"`."""
    if mode == "raise" and not outcome.ok:
        raise DegradedError(outcome)
    return outcome
