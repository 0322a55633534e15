"""What a part's results cost, counted exactly as the rows count them.

A row's usage is the sum of its model calls' (the engine's rule: a reply's reported usage, or
its request and answer estimated when it reported none; a failure's usage, or its request
estimated when it may have run without an answer). A part's tokens and cost (`RoundSummary`,
`RunReport.tokens` / `cost`) are the sum of what its results add to its rows' usage (`added`):
a reply, a body that is no reply but reports usage, an error answer, an estimated failure; a
request resubmitted as it was adds nothing, as it adds nothing to its row.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Final

from healjson._core.wire.effects import CallResult
from healjson._core.wire.reply import Reply, Usage, call_usage

from .result_lines import Result, attempts, call_result

__all__ = ["BATCH_DISCOUNT", "added", "part_usage"]

BATCH_DISCOUNT: Final = 0.5
"""The providers' batch price: half the listed price."""

Sent = Callable[[Sequence[CallResult]], Sequence[Mapping[str, Any]] | None]
"""The messages of the request a row makes after the given calls (None: it makes none)."""


def added(
    results: Sequence[Result],
    result: Result,
    resubmits: int,
    sent: Sent,
    read: CallResult | None = None,
) -> Usage | None:
    """What `result`, the next result of a row whose results so far are `results`, adds to
    the row's usage; None when it adds nothing (a request resubmitted as it was). `read`:
    `result` already read as a call (`call_result`); `sent` is asked only for an estimate."""
    if _counted((*results, result), resubmits) == _counted(results, resubmits):
        return None
    call = read if read is not None else call_result(result)

    def before() -> Sequence[Mapping[str, Any]]:
        return sent(attempts(results, resubmits)) or ()

    if call.reply is not None:
        usage = call.reply.usage
        if usage is not None and not usage.estimated:
            return usage
        # none reported, or a count that was no count (marked estimated): estimated
        return call_usage(usage, before(), len(_chars(call.reply)))
    assert call.failure is not None
    if call.failure.usage is not None:
        return call.failure.usage
    return call_usage(None, before(), 0)


def part_usage(spent: Iterable[Usage]) -> tuple[int, int, float | None]:
    """The tokens and cost (at batch prices) of a part's results: `added` of each. A result
    without a token (no request, or an error answer: neither is billed) costs nothing; any
    other whose cost cannot be known (an estimate, an unpriced model) makes the part's cost
    None, as it makes its row's."""
    prompt = completion = 0
    cost: float | None = 0.0
    for usage in spent:
        if not usage.requests and not usage.total_tokens and not usage.cache_hits:
            continue
        prompt += usage.prompt_tokens
        completion += usage.completion_tokens
        if not usage.total_tokens and not usage.estimated:  # an error answer: nothing billed
            continue
        price = usage.cost
        cost = None if price is None or cost is None else cost + price * BATCH_DISCOUNT
    return prompt, completion, cost


def _counted(results: Sequence[Result], resubmits: int) -> int:
    """How many of `results` are model calls (`attempts`: the first `resubmits` transient
    failures are not)."""
    retried = sum(1 for result in results if result.body is None and result.retry)
    return len(results) - min(retried, resubmits)


def _chars(reply: Reply) -> str:
    """The text an answer without reported usage is estimated by (the engine's rule)."""
    return (reply.content or "") + "".join(call.arguments for call in reply.tool_calls)
