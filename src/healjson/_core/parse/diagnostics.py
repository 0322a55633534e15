"""The diagnostics L1 gives when a reply yields no value: empty, cut, ambiguous, not JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_core import from_json

from healjson._core.diagnostic import ROOT, Diagnostic, Source

from .lenient import MAX_REPAIR_CHARS
from .scan import Candidate

__all__ = ["ambiguity", "empty", "no_json", "only_reasoning", "truncation_diagnostic"]


def empty() -> Diagnostic:
    """The reply was empty (or only whitespace)."""
    return Diagnostic(
        path=ROOT,
        value="",
        constraint="must contain a JSON value (the reply was empty)",
        prescription="Answer again with the complete JSON value.",
        source=Source.EMPTY,
    )


def truncation_diagnostic(text: str, cut: bool, reply_chars: int = 0) -> Diagnostic:
    """The diagnostic for a reply cut off by the token limit (`cut`) or ending mid-structure;
    `reply_chars`: the whole reply's length (`text` may be the answer without its whitespace or
    reasoning)."""
    why = "the token limit was reached (finish_reason=length)" if cut else "it ends mid-structure"
    chars = max(reply_chars, len(text))
    return Diagnostic(
        path=ROOT,
        value=text[-120:],
        constraint=f"must be complete; the reply was cut off after {chars} characters: {why}",
        prescription=(
            "Write the complete JSON value again, compactly: no whitespace between tokens and "
            "free-text fields as short as the rules allow."
        ),
        source=Source.TRUNCATION,
        extra={"cause": "token_limit" if cut else "mid_structure"},
    )


def only_reasoning(text: str, cut: bool) -> Diagnostic:
    """The reply holds only reasoning: the answer was never written (`cut`: the token limit
    ended it)."""
    why = (
        "the token limit was reached before the answer was written"
        if cut
        else "the reasoning never finished and no answer followed it"
    )
    return Diagnostic(
        path=ROOT,
        value=text[-120:],
        constraint=f"must contain the answer; the reply holds only reasoning ({why})",
        prescription=(
            "Keep the reasoning short and finish it, then write the complete JSON value."
        ),
        source=Source.TRUNCATION,
        extra={"cause": "reasoning_only"},
    )


def ambiguity(values: Sequence[Any], *, typed: bool) -> Diagnostic:
    """The reply holds several different answers (`typed`: each fits the schema)."""
    fits = "each fit the schema" if typed else "are each valid JSON"
    return Diagnostic(
        path=ROOT,
        value=list(values),
        constraint=(
            f"must hold exactly one answer; the reply held {len(values)} different values that "
            f"{fits}"
        ),
        prescription=(
            "Reply with exactly one JSON value — your final answer — with no examples, drafts, "
            "corrections or alternatives beside it."
        ),
        source=Source.AMBIGUITY,
        extra={"candidates": tuple(values)},
    )


def no_json(text: str, candidates: list[Candidate]) -> Diagnostic:
    """No JSON value could be read from the reply (the first candidate's strict error said)."""
    if len(text) > MAX_REPAIR_CHARS:
        detail = f"the reply is {len(text)} characters, too large to repair locally"
    elif candidates:
        detail = _strict_error(candidates[0].text)
    else:
        detail = "no JSON object or array was found"
    return Diagnostic(
        path=ROOT,
        value=text,
        constraint=f"must be valid JSON ({detail})",
        prescription=(
            "Reply with only the JSON value: no prose, no code fences, double-quoted keys and "
            "strings, balanced brackets."
        ),
        source=Source.SYNTAX,
    )


def _strict_error(text: str) -> str:
    try:
        from_json(text)
    except Exception as exc:
        return str(exc)
    return "it could not be read as the expected value"
