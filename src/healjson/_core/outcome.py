"""L4: what a healing run returns — `Healed[T]` or `Degraded[T]`, never an exception.

Exception tree (there is exactly one, raised only on purpose):

    Exception
     └── DegradedError      raised by Degraded.unwrap(); carries the outcome
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeAlias, TypeVar

from .diagnostic import Diagnostic
from .flags import Flag
from .repair import RepairPrompt, Strategy
from .reply import ToolCall, Usage

__all__ = ["Attempt", "Degraded", "DegradedError", "Healed", "Outcome", "Reason"]

T = TypeVar("T")
D = TypeVar("D")


class Reason(enum.StrEnum):
    """Why a run degraded."""

    MAX_RETRIES_EXCEEDED = "max_retries_exceeded"
    TOKEN_TRUNCATED = "token_truncated"
    EMPTY_OUTPUT = "empty_output"
    INVALID_OUTPUT = "invalid_output"
    REFUSAL = "refusal"
    CONTENT_FILTER = "content_filter"
    API_ERROR = "api_error"
    TIMEOUT = "timeout"
    BUDGET_EXCEEDED = "budget_exceeded"
    CONTRACT_ERROR = "contract_error"


@dataclass(frozen=True, slots=True)
class Attempt:
    """One model call and what healjson made of it.

    `raw_text` is the reply as received (a tool call's arguments when the reply was only tool
    calls; every call is in `tool_calls`); `reasoning` is the model's reasoning, set aside and
    never read as the answer (the provider's reasoning field and any inline `<think>` blocks).
    """

    number: int
    strategy: Strategy
    messages: tuple[Mapping[str, Any], ...]
    params: Mapping[str, Any]
    raw_text: str | None = None
    finish_reason: str | None = None
    flags: tuple[Flag, ...] = ()
    diagnostics: tuple[Diagnostic, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model: str | None = None
    latency_s: float = 0.0
    error: str | None = None
    prompt: RepairPrompt | None = None
    ok: bool = False
    reasoning: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()


@dataclass(frozen=True, slots=True)
class Healed(Generic[T]):
    """A value that passed the schema and every contract.

    `changed_fields` lists the paths whose values differ between the first parsed answer and
    this one — a repair that "fixed" a rule by quietly changing another field shows up here.
    """

    value: T
    raw_text: str
    attempts: tuple[Attempt, ...] = ()
    usage: Usage = field(default_factory=Usage)
    flags: tuple[Flag, ...] = ()
    changed_fields: tuple[str, ...] = ()
    max_attempts: int = 0
    ok: Literal[True] = field(default=True, init=False)

    @property
    def calls(self) -> int:
        """Model calls spent."""
        return len(self.attempts)

    def unwrap(self) -> T:
        """The value."""
        return self.value

    def value_or(self, default: object) -> T:
        """The value (the default is for `Degraded`)."""
        return self.value

    def trace(self, format: Literal["markdown", "json"] = "markdown") -> str:
        """The self-healing log: Markdown for people, or JSON that `outcome_from_dict` reads."""
        from .trace import render

        return render(self, format)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data for this outcome (round-trips through `healjson.outcome_from_dict`)."""
        from .serialize import outcome_to_dict

        return outcome_to_dict(self)


@dataclass(frozen=True, slots=True)
class Degraded(Generic[T]):
    """The run could not produce a valid value; everything it learned is kept.

    `raw_text` is the last raw output, `errors` its diagnostics, `partial` the best-effort data
    recovered (for example the complete fields of a truncated answer), `fallback` the caller's
    safe default (or what their fallback factory returned).
    """

    reason: Reason
    raw_text: str | None
    errors: tuple[Diagnostic, ...] = ()
    fallback: Any = None
    partial: Any = None
    attempts: tuple[Attempt, ...] = ()
    usage: Usage = field(default_factory=Usage)
    max_attempts: int = 0
    ok: Literal[False] = field(default=False, init=False)

    @property
    def calls(self) -> int:
        """Model calls spent."""
        return len(self.attempts)

    def unwrap(self) -> T:
        """Raise `DegradedError` — the one deliberate way an outcome becomes an exception."""
        raise DegradedError(self)

    def value_or(self, default: D) -> D:
        """`default` (a degraded run has no value)."""
        return default

    def trace(self, format: Literal["markdown", "json"] = "markdown") -> str:
        """The self-healing log: Markdown for people, or JSON that `outcome_from_dict` reads."""
        from .trace import render

        return render(self, format)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready data for this outcome (round-trips through `healjson.outcome_from_dict`)."""
        from .serialize import outcome_to_dict

        return outcome_to_dict(self)


Outcome: TypeAlias = Healed[T] | Degraded[T]


class DegradedError(Exception):
    """Raised by `Degraded.unwrap()`; `.outcome` holds the whole degradation."""

    def __init__(self, outcome: Degraded[Any]) -> None:
        self.outcome = outcome
        first = outcome.errors[0].describe(max_value_chars=80) if outcome.errors else "no details"
        super().__init__(
            f"healjson degraded ({outcome.reason}) after {outcome.calls} call(s): {first}"
        )
