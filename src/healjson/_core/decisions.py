"""What each kind of failure decides: the reply's verdict, the repair strategy, the final reason.

One table, read by L1/L2 (`check`: the verdict of a reply), the repair loop (`engine`: the next
strategy, and the reason a run that used up its attempts degrades with) and `next_prompt`.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import NamedTuple

from .diagnostic import Diagnostic, Source
from .outcome import Reason
from .repair import Strategy

__all__ = ["Verdict", "final_reason", "strategy_for", "verdict_for"]


class Verdict(enum.StrEnum):
    """How one reply fared in L1 + L2."""

    OK = "ok"
    EMPTY = "empty"
    SYNTAX = "syntax"
    TRUNCATED = "truncated"
    AMBIGUOUS = "ambiguous"
    SCHEMA = "schema"
    CONTRACT = "contract"
    CONTRACT_ERROR = "contract_error"
    REFUSAL = "refusal"


class _Decision(NamedTuple):
    verdict: Verdict
    strategy: Strategy | None  # None: an ordinary repair
    reason: Reason | None  # None: `invalid_output` / `max_retries_exceeded`


# in priority order: the first source found among a reply's diagnostics decides
_TABLE: dict[Source, _Decision] = {
    Source.TRUNCATION: _Decision(Verdict.TRUNCATED, Strategy.TRUNCATION, Reason.TOKEN_TRUNCATED),
    Source.EMPTY: _Decision(Verdict.EMPTY, Strategy.EMPTY_RETRY, Reason.EMPTY_OUTPUT),
    Source.REFUSAL: _Decision(Verdict.REFUSAL, None, Reason.REFUSAL),
    Source.SYNTAX: _Decision(Verdict.SYNTAX, Strategy.SYNTAX, None),
    Source.AMBIGUITY: _Decision(Verdict.AMBIGUOUS, None, None),
    Source.TOOL_CALL: _Decision(Verdict.SYNTAX, None, None),
    Source.CONTRACT_ERROR: _Decision(Verdict.CONTRACT_ERROR, None, Reason.CONTRACT_ERROR),
}


def verdict_for(source: Source) -> Verdict:
    """The verdict on a reply L1 could read no value from, by its diagnostic's source."""
    decision = _TABLE.get(source)
    return decision.verdict if decision is not None else Verdict.SYNTAX


def strategy_for(diagnostics: Sequence[Diagnostic]) -> Strategy:
    """The repair strategy a failed answer calls for: a clean retry for an empty answer, a
    compact rewrite for a cut one, a syntax prompt when no JSON was recovered, else a repair."""
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
