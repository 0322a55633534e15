"""A third driver: run a flow on replies already received, up to the next model call it wants.

The engine is deterministic given the results of its model calls, so a run does not have to stay
in memory between two calls: keep the results, and `replay` rebuilds the run from them. It stops
at the first `ModelCall` that has no result yet (the request to send next) or at the outcome.
This is how work spread over time and processes heals: a provider Batch API round per call
(whose results are stored in a ledger between rounds), or a pipeline that calls the model
itself and hands healjson each reply (`healjson.ray`).

`AwaitAll` effects (async contracts, fallback factories) are awaited as the sync driver does;
a response cache is not read or written on a replay (each `CacheGet` is a miss).
Contracts run again on each replay of an attempt, so they should not have side effects (the same
rule as for the property tests).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from healjson._core.outcome.outcome import Outcome
from healjson._core.wire.effects import (
    AwaitAll,
    CacheGet,
    CachePut,
    CallFailure,
    CallResult,
    FailureKind,
    ModelCall,
)
from healjson._core.wire.fault import ProviderFault
from healjson._core.wire.reply import Reply, to_reply

from .drive import Flow, run_awaitables_sync

__all__ = ["failed", "replay", "replied"]


def replay(flow: Flow[Outcome[Any]], results: Sequence[CallResult]) -> ModelCall | Outcome[Any]:
    """Send `results` to `flow`'s model calls in order: the outcome, or the next call the flow
    makes once they are used up (the flow is then closed). Results beyond the outcome are
    ignored."""
    sent: Any = None
    used = 0
    try:
        while True:
            effect = flow.send(sent)
            if isinstance(effect, AwaitAll):
                sent = run_awaitables_sync(effect.awaitables, effect.timeout_s)
            elif isinstance(effect, CacheGet | CachePut):
                sent = None  # a replayed run neither reads nor writes the cache
            elif used < len(results):
                sent = results[used]
                used += 1
            else:
                flow.close()
                return effect
    except StopIteration as stop:
        outcome: Outcome[Any] = stop.value
        return outcome


def replied(value: Any, elapsed_s: float = 0.0) -> CallResult:
    """A model call's result from what the provider returned (a response as a dict or object, a
    text, a `Reply`); a shape healjson cannot read is a failed call, as in the drivers."""
    try:
        reply = value if isinstance(value, Reply) else to_reply(value)
    except TypeError as exc:
        return failed("api_error", f"the provider returned no reply healjson can read: {exc}")
    return CallResult(reply, None, elapsed_s)


def failed(
    kind: FailureKind, message: str, elapsed_s: float = 0.0, fault: ProviderFault | None = None
) -> CallResult:
    """A model call that gave no reply, for a reason the run degrades with (`fault`: the
    provider's HTTP error answer, when it gave one)."""
    return CallResult(None, CallFailure(kind, message, fault=fault), elapsed_s)
