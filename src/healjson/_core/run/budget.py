"""What a run may still spend: tokens, dollars, time, and a larger token limit after a cut.

The loop asks these before each call (`engine.heal_flow`: the first one's prompt against the
token budget too; a run with a token budget never starts quick); each limit that stops a run
is a `Diagnostic` of source `budget` that names the policy setting to change. Usage a provider
did not report is estimated as characters / 4 (`estimated_usage`; the rule for any call made,
answered or not, is `wire.reply.call_usage`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from healjson._core.diagnostic import ROOT, Diagnostic, Source
from healjson._core.wire import formats as wire
from healjson._core.wire.reply import Usage, call_usage, estimate_tokens

from .policy import HealPolicy

__all__ = [
    "budget_spent",
    "cost_spent",
    "deadline_passed",
    "estimate",
    "estimated_usage",
    "more_tokens",
    "over_budget",
]


estimate = estimate_tokens
"""The tokens of a request's messages, estimated (characters / 4, and 4 per message)."""


def estimated_usage(
    messages: Sequence[Mapping[str, Any]],
    content: str | None,
    reported: Usage | None = None,
    model: str | None = None,
) -> Usage:
    """The usage of a call whose provider reported none (or counts it marked `estimated`: a
    count that was no count, `reported`): the request and the answer estimated, for the
    reply's `model` (what a streamed call's usage keeps too)."""
    return call_usage(reported, messages, len(content or ""), model)


def over_budget(
    policy: HealPolicy, spent: Usage, sent: Sequence[Mapping[str, Any]], answer: int = 0
) -> Diagnostic | None:
    """Why the next call (`sent`) may not be made under the policy's token and cost budgets,
    or None when it may: the run's spending, plus the call's prompt (estimated) and its answer
    (`answer` tokens: a repair asks for the answer again, so the last answer's size)."""
    if policy.token_budget is not None:
        projected = spent.total_tokens + estimate(sent) + answer
        if projected > policy.token_budget:
            return budget_spent(projected)
    if policy.cost_budget is not None:
        cost = _projected_cost(spent, sent, answer)
        if cost is not None and cost > policy.cost_budget:
            return cost_spent(cost, policy.cost_budget)
    return None


def _projected_cost(spent: Usage, sent: Sequence[Mapping[str, Any]], answer: int) -> float | None:
    """What the run will have cost once the next call is paid (its prompt estimated as
    characters / 4, its answer `answer` tokens, priced on the model of the last call); None
    when a price is unknown."""
    so_far = spent.cost
    model = spent.model or (spent.parts[-1].model if spent.parts else None)
    if so_far is None or model is None:
        return None
    nxt = Usage(estimate(sent), answer, requests=1, model=model).cost
    return None if nxt is None else so_far + nxt


def deadline_passed(
    policy: HealPolicy,
    detail: str | None = None,
    *,
    elapsed_s: float | None = None,
    in_calls_s: float | None = None,
) -> Diagnostic:
    """The run's deadline (`HealPolicy.deadline_s`) passed. With the run's elapsed time and the
    time its model calls took, the prescription says where the time went: the model when its
    calls took at least half of it, else the code around them (contracts, log handlers, event
    hooks, the caller's own callbacks), which a longer model deadline would not fix."""
    prescription = (
        "Raise HealPolicy.deadline_s, or ask for a shorter answer; the model was too slow."
    )
    if elapsed_s is not None and in_calls_s is not None and in_calls_s * 2 < elapsed_s:
        prescription = (
            f"The model calls took {in_calls_s:.3g} s of the run's {elapsed_s:.3g} s: the rest "
            "went to the code around them (contracts, log handlers, event hooks). Make that "
            "code faster, or raise HealPolicy.deadline_s."
        )
    return Diagnostic(
        ROOT,
        detail or f"deadline_s={policy.deadline_s}",
        f"the run must finish within {policy.deadline_s} s (HealPolicy.deadline_s)",
        prescription,
        Source.BUDGET,
        extra={"error_type": "timeout"},  # healjson's own stop, as telemetry names it
    )


def budget_spent(projected: int) -> Diagnostic:
    """The next call would pass the token budget."""
    return Diagnostic(
        ROOT,
        projected,
        "the next call would exceed the token budget",
        "Raise HealPolicy.token_budget, or shorten the prompt.",
        Source.BUDGET,
    )


def cost_spent(projected: float, budget: float) -> Diagnostic:
    """The next call would pass the cost budget."""
    return Diagnostic(
        ROOT,
        round(projected, 6),
        f"the next call would pass the cost budget of {budget} USD",
        "Raise HealPolicy.cost_budget, or shorten the prompt.",
        Source.BUDGET,
    )


def more_tokens(params: dict[str, Any], usage: Usage, policy: HealPolicy) -> dict[str, Any]:
    """The request's parameters with its output-token limit grown by the policy (the limit the
    request's wire format names; a cut answer's reported length when the request set none)."""
    fmt, current = wire.token_limit(params)  # the request's wire format names its limit
    if fmt is None or fmt.with_token_limit is None:
        return params
    if not isinstance(current, int):
        # without a limit we know, only a reported count is a safe base (an estimate may be low)
        current = None if usage.estimated else usage.completion_tokens or None
    if not current:
        return params
    grown = math.ceil(current * policy.max_tokens_growth)
    if policy.max_tokens_cap is not None:
        grown = min(grown, policy.max_tokens_cap)
    return fmt.with_token_limit(params, max(grown, current))
