"""What each kind of failure decides: the repair strategy and the reason a run degrades with.

One table, read by the repair loop (`run.engine`: the next strategy, and the reason a run that
used up its attempts degrades with) and `next_prompt`. (The verdict on one reply is L2's:
`judge.verdict`.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from healjson._core.diagnostic import Diagnostic, Source
from healjson._core.repair.prompt import Strategy

from .outcome import Reason

__all__ = ["final_reason", "strategy_for"]


class _Decision(NamedTuple):
    strategy: Strategy | None  # None: an ordinary repair
    reason: Reason | None  # None: `invalid_output` / `max_retries_exceeded`


# in priority order: the first source found among a reply's diagnostics decides
_TABLE: dict[Source, _Decision] = {
    Source.DEGENERATE: _Decision(Strategy.DEGENERATE, Reason.DEGENERATE_OUTPUT),
    Source.TRUNCATION: _Decision(Strategy.TRUNCATION, Reason.TOKEN_TRUNCATED),
    Source.EMPTY: _Decision(Strategy.EMPTY_RETRY, Reason.EMPTY_OUTPUT),
    Source.REFUSAL: _Decision(None, Reason.REFUSAL),
    Source.SYNTAX: _Decision(Strategy.SYNTAX, None),
    Source.CONTRACT_ERROR: _Decision(None, Reason.CONTRACT_ERROR),
}


def strategy_for(diagnostics: Sequence[Diagnostic]) -> Strategy:
    """The repair strategy a failed answer calls for: a clean retry for an empty answer, a
    compact rewrite for a cut or a degenerate one (a whitespace run, a loop), a syntax prompt
    when no JSON was recovered, else a repair."""
    for diagnostic in diagnostics:
        decision = _TABLE.get(diagnostic.source)
        if decision is not None and decision.strategy is not None:
            return decision.strategy
    return Strategy.REPAIR


def final_reason(diagnostics: Sequence[Diagnostic], max_attempts: int) -> Reason:
    """Why a run that used up its attempts degrades, from its last attempt's diagnostics."""
    sources = {diagnostic.source for diagnostic in diagnostics}
    for source, decision in _TABLE.items():
        if source in sources and decision.reason is not None:
            return decision.reason
    return Reason.INVALID_OUTPUT if max_attempts == 1 else Reason.MAX_RETRIES_EXCEEDED
