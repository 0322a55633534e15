"""The happy path past the generator: the first call made directly, the loop only if needed.

Most runs end at their first reply: strictly valid data with nothing more to check. Such a run
needs none of the loop's machinery, and on the hot path the machinery is what costs: right after
the SDK's call the CPU caches hold the SDK's data, and every Python frame healjson adds fetches
its code and objects from memory again (a few microseconds each, measured: see
`benchmarks/bench_overhead.py`). So when nothing follows the run's steps (no logger enabled for
INFO, no OpenTelemetry SDK: `events.for_run` is None, or its `steps` is False: a stdlib logger
at WARNING hears only of a degraded run, which the loop still tells it) and no deadline
applies, `heal_sync` / `heal_async` make the first model call themselves, as the drivers
perform the loop's first `ModelCall` (`drive.call_sync`), and hand the reply to
`engine.first_healed`: the same check and the same `Healed` as the loop's first step. Any other
result (a failed call, a reply that needs L1 or L2, a contract to run) starts `heal_flow` from
that same result: the model is never called twice for it, and the outcome is the one the loop
alone reaches (the tests compare the two on generated replies).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from . import events as _events
from .contracts import ContractContext
from .drive import call_failed, call_returned, drive_async, drive_sync, settled
from .effects import CallResult, ModelCall
from .enforcement import Enforcement
from .engine import HealSpec, first_healed, heal_flow, new_run_id
from .outcome import Outcome
from .redact import secrets_scope
from .reply import SDK_COMPLETIONS, Reply, read_completion

__all__ = ["heal_async", "heal_sync"]

_clock = time.perf_counter


def heal_sync(
    spec: HealSpec,
    original: tuple[dict[str, Any], ...],
    params: Mapping[str, Any],
    ctx: ContractContext,
    call: Callable[..., Any],
    *,
    started: float,
    client: Any = None,
    enforcement: Enforcement | None = None,
) -> Outcome[Any]:
    """`drive_sync(heal_flow(...), call)`, with the first call made here when nothing listens.
    `client`: the wrapped client (adapters), whose `secrets_scope` this run enters only where
    something may be redacted — around the loop, around a failed call's description; the
    first attempt's parameters are redacted with the client's secrets directly."""
    run_id = new_run_id()
    events = _events.for_run(run_id, spec)
    if (events is not None and events.steps) or spec.policy.deadline_s is not None:
        # a listener (the loop announces every step) or a deadline (`call_sync` limits the call)
        flow = heal_flow(
            spec,
            original,
            params,
            ctx,
            started=started,
            opened=(run_id, events),
            enforcement=enforcement,
        )
        with _secrets(client, params):
            return drive_sync(flow, call)
    start = _clock()
    try:
        value = call(list(map(dict, original)), **params)
        if type(value) not in SDK_COMPLETIONS and type(value) is not Reply:
            value = settled(value)
    except Exception as exc:  # the provider's failure, else raised again
        with _secrets(client, params):
            result = call_failed(exc, start, _first_call(spec, original, params))
    else:
        judged = _first_result(
            spec, original, params, value, ctx, start=start, run_id=run_id, client=client
        )
        if not isinstance(judged, CallResult):
            return judged
        result = judged
    flow = heal_flow(
        spec,
        original,
        params,
        ctx,
        started=started,
        opened=(run_id, events),
        first=result,
        enforcement=enforcement,
    )
    with _secrets(client, params):
        return drive_sync(flow, call)


async def heal_async(
    spec: HealSpec,
    original: tuple[dict[str, Any], ...],
    params: Mapping[str, Any],
    ctx: ContractContext,
    call: Callable[..., Any],
    *,
    started: float,
    client: Any = None,
    enforcement: Enforcement | None = None,
) -> Outcome[Any]:
    """`heal_sync` for `Healer.arun`: the call awaited on the running loop (the secrets scope
    entered in the awaiting task's context)."""
    run_id = new_run_id()
    events = _events.for_run(run_id, spec)
    if (events is not None and events.steps) or spec.policy.deadline_s is not None:
        flow = heal_flow(
            spec,
            original,
            params,
            ctx,
            started=started,
            opened=(run_id, events),
            enforcement=enforcement,
        )
        with _secrets(client, params):
            return await drive_async(flow, call)
    start = _clock()
    try:
        value = call(list(map(dict, original)), **params)
        kind = type(value)
        if kind not in SDK_COMPLETIONS and kind is not Reply and inspect.isawaitable(value):
            value = await value
    except Exception as exc:
        with _secrets(client, params):
            result = call_failed(exc, start, _first_call(spec, original, params))
    else:
        judged = _first_result(
            spec, original, params, value, ctx, start=start, run_id=run_id, client=client
        )
        if not isinstance(judged, CallResult):
            return judged
        result = judged
    flow = heal_flow(
        spec,
        original,
        params,
        ctx,
        started=started,
        opened=(run_id, events),
        first=result,
        enforcement=enforcement,
    )
    with _secrets(client, params):
        return await drive_async(flow, call)


def _first_result(
    spec: HealSpec,
    original: tuple[dict[str, Any], ...],
    params: Mapping[str, Any],
    value: Any,
    ctx: ContractContext,
    *,
    start: float,
    run_id: str,
    client: Any,
) -> Outcome[Any] | CallResult:
    """The run's `Healed` if the first call's `value` is one at once, else its `CallResult`
    (what `call_sync` would have sent the loop)."""
    kind = type(value)
    if kind in SDK_COMPLETIONS or kind is Reply:  # the SDK's ChatCompletion, or a call's reply
        reply = read_completion(value) if kind is not Reply else value  # read here, no detour
        elapsed = _clock() - start
        healed = first_healed(
            spec,
            original,
            params,
            reply,
            elapsed_s=elapsed,
            run_id=run_id,
            client=client,
            context=ctx.validation_context,
        )
        return CallResult(reply, None, elapsed) if healed is None else healed
    result = call_returned(value, start)
    if result.reply is None:
        return result
    healed = first_healed(
        spec,
        original,
        params,
        result.reply,
        elapsed_s=result.elapsed_s,
        run_id=run_id,
        client=client,
        context=ctx.validation_context,
    )
    return result if healed is None else healed


def _secrets(client: Any, params: Mapping[str, Any]) -> AbstractContextManager[None]:
    """The client's secrets scope (nothing to enter without a client: the caller's scope, if
    any, is in effect already)."""
    return nullcontext() if client is None else secrets_scope(client, params)


def _first_call(
    spec: HealSpec, original: tuple[dict[str, Any], ...], params: Mapping[str, Any]
) -> ModelCall:
    """The loop's first `ModelCall` as `heal_flow` yields it (no deadline applies here)."""
    return ModelCall(1, original, params, None, spec.policy.provider_errors)
