"""How one reply fared in L1 + L2 (`Verdict`), and the verdict of a reply L1 read nothing from.

The verdict is L2's word on one reply; what a failed verdict leads to (the repair strategy, the
reason a run degrades with) is decided above it, in `outcome.decisions`.
"""

from __future__ import annotations

import enum

from healjson._core.diagnostic import Source

__all__ = ["Verdict", "verdict_for"]


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
    DEGENERATE = "degenerate"


# the verdict on a reply whose failure L1 found, by the diagnostic's source (the rest: SYNTAX)
_BY_SOURCE: dict[Source, Verdict] = {
    Source.TRUNCATION: Verdict.TRUNCATED,
    Source.EMPTY: Verdict.EMPTY,
    Source.REFUSAL: Verdict.REFUSAL,
    Source.AMBIGUITY: Verdict.AMBIGUOUS,
    Source.CONTRACT_ERROR: Verdict.CONTRACT_ERROR,
    Source.DEGENERATE: Verdict.DEGENERATE,
}


def verdict_for(source: Source) -> Verdict:
    """The verdict on a reply L1 could read no value from, by its diagnostic's source."""
    return _BY_SOURCE.get(source, Verdict.SYNTAX)
