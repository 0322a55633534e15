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
and named `healjson call N <request>` (`name=` changes the prefix; `<request>`, 12 hex digits
of a hash of the messages and parameters, the healer's fingerprint and the run's context):
DBOS checks a step's recorded name on a recovery, so
a workflow whose steps would shift (a step more or fewer before them) stops with DBOS's
`DBOSUnexpectedStepError` instead of handing one request another's reply.

A healer with a response cache (`Healer(..., cache=...)`): its lookup is a DBOS step too
(`healjson cache <key>`), recording the entry found or a miss, so a recovered workflow is
served from the cache exactly where the first run was (a lookup that found an entry only on the
recovery would leave out that row's steps and shift every later one). Healed answers are still
stored as in any run.

What a step records passes the redactor (`healjson._durable`): a failure's message, a
`RetryableError`'s text; an answer the redaction would change degrades the run with
`api_error` instead of being healed altered.

Failures (`healjson._durable`): a transient provider failure (HTTP 408, 409, 429, 5xx, a dropped
connection, a timeout) raises `healjson.RetryableError` inside the step, which DBOS retries
(`retries` attempts, `retry_interval_s` apart, doubling; a call that fails on every one
degrades the run with its last failure, `api_error` or `timeout`, and the workflow goes on); a
terminal one (HTTP 400, 401, 404, ...) is recorded and the run degrades with `api_error`. A
`Degraded` outcome — a refusal, a content filter, a spent budget, an answer still invalid after
the last attempt — is returned as a value and retries nothing; with `on_degraded="raise"` it
raises `healjson.DegradedError` instead (DBOS records the workflow's error; it does not retry
it).

`client=`: the SDK client `call` uses, whose key the steps' redactor then knows (a `call` that
is one of its own methods names it already). `healed_step(healer, call)` without messages
returns the step function, `step(messages,
**params)`, to call inside workflows. `healed_step_async` is the same for async workflows
(`await`; the call may be async). The healer's contracts run again on a recovery, so they must
be deterministic (they are in any healjson run that can be replayed).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Mapping
from typing import Any, Final

from ._core.outcome.outcome import DegradedError, Outcome
from ._core.run.healer import Healer
from ._durable import (
    RetryableError,
    acall_as_data,
    call_as_data,
    check_on_degraded,
    durable_scope,
    entry_from_data,
    lookup_as_data,
    out_of_retries,
    reply_from_data,
    request_id,
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
    client: Any = None,
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
    stepped = _recorded_cache(healer, dbos, name)

    def step(messages: Any, *, context: Mapping[str, Any] | None = None, **more: Any) -> Any:
        counter = iter(range(1, 1_000_000))
        given = {**params, **more}
        request = request_id(messages, given, healer, context)

        def durable(sent: list[dict[str, Any]], **kwargs: Any) -> Any:
            named = {**options, "name": f"{name} {next(counter)} {request}"}
            errors = healer.policy.provider_errors
            try:
                data = dbos.run_step(named, call_as_data, call, list(sent), kwargs, errors)
            except Exception as exc:
                spent = _spent(exc, retries)
                if spent is None:
                    raise
                raise spent from None
            return reply_from_data(data)

        with durable_scope(client, call, given):
            outcome: Outcome[Any] = stepped.run(durable, messages, context=context, **given)
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
    client: Any = None,
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
    request = request_id(messages, params, healer, context)

    async def durable(sent: list[dict[str, Any]], **kwargs: Any) -> Any:
        named = {**options, "name": f"{name} {next(counter)} {request}"}
        errors = healer.policy.provider_errors
        try:
            data = await dbos.run_step_async(named, acall_as_data, call, list(sent), kwargs, errors)
        except Exception as exc:
            spent = _spent(exc, retries)
            if spent is None:
                raise
            raise spent from None
        return reply_from_data(data)

    stepped = _recorded_cache(healer, dbos, name)
    with durable_scope(client, call, params):
        outcome: Outcome[Any] = await stepped.arun(durable, messages, context=context, **params)
    settled: Outcome[Any] = _settle(outcome, mode)
    return settled


class _StepCache:
    """A healer's response cache inside a workflow: each lookup a DBOS step that records the
    entry found (or a miss, or the store's failure), read back on a recovery; a write goes to
    the store as in any run. The async driver calls it on a worker thread (`blocking`), where
    a sync step may run."""

    blocking = True

    def __init__(self, store: Any, dbos: Any, name: str) -> None:
        self.store = store
        self.dbos = dbos
        self.name = name

    def get(self, key: str) -> bytes | str | None:
        named = {"name": f"{self.name} cache {key[:12]}"}
        return entry_from_data(self.dbos.run_step(named, lookup_as_data, self.store, key))

    def put(self, key: str, value: bytes) -> None:
        self.store.put(key, value)


# a healer with a cache -> (its store, the steps' name, the twin whose lookups are steps): built
# once, not per row (a `Healer` synthesizes its golden example and runs its rules on it)
_TWINS: weakref.WeakKeyDictionary[Healer[Any], tuple[Any, str, Healer[Any]]] = (
    weakref.WeakKeyDictionary()
)


def _recorded_cache(healer: Healer[Any], dbos: Any, name: str) -> Healer[Any]:
    """`healer`, or when it has a response cache a copy of it (`Healer.with_cache`: all it
    has, its reply reader included, so the same cache keys) whose lookups are DBOS steps."""
    store = healer.cache
    if store is None:
        return healer
    found = _TWINS.get(healer)
    if found is not None and found[0] is store and found[1] == name:
        return found[2]
    twin = healer.with_cache(_StepCache(store, dbos, name))
    _TWINS[healer] = (store, name, twin)
    return twin


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


def _spent(exc: Exception, attempts: int) -> Exception | None:
    """DBOS's "the step was retried `attempts` times without success"
    (`DBOSMaxStepRetriesExceeded`, known by name: no private module of DBOS is imported) as the
    provider's failure the run degrades with (its last `RetryableError`'s kind and message);
    None for any other exception (raised as it is)."""
    if not any(cls.__name__ == "DBOSMaxStepRetriesExceeded" for cls in type(exc).__mro__):
        return None
    return out_of_retries(exc, attempts)


def _settle(outcome: Outcome[Any], mode: str) -> Outcome[Any]:
    """The outcome as the step returns it: a `Degraded` raised with `on_degraded="raise"`."""
    if mode == "raise" and not outcome.ok:
        raise DegradedError(outcome)
    return outcome
