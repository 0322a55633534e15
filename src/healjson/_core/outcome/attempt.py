"""One model call and what healjson made of it (`Attempt`), and why a run degraded (`Reason`)."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from healjson._core.diagnostic import Diagnostic
from healjson._core.flags import Flag
from healjson._core.frozen import builder
from healjson._core.redact import redact_text
from healjson._core.repair.prompt import RepairPrompt, Strategy
from healjson._core.wire.reply import ToolCall, Usage

__all__ = ["Attempt", "Reason", "first_attempt", "model_calls", "new_attempt", "was_given"]


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
    TOOL_CALL_MISSING = "tool_call_missing"
    """The request forced a tool call (`tool_choice`) and the answers made none."""
    DEGENERATE_OUTPUT = "degenerate_output"
    """The answer turned into a run of whitespace or one passage repeated past the policy's
    bounds (`HealPolicy.max_whitespace_run`, `max_repeats`), however it was repaired."""


@dataclass(frozen=True, slots=True)
class Attempt:
    """One model call and what healjson made of it.

    `raw_text` is the reply as received (a tool call's arguments when the reply was only tool
    calls; every call is in `tool_calls`); `reasoning` is the model's reasoning, set aside and
    never read as the answer (the provider's reasoning field and any inline `<think>` blocks).
    `cache_hit` is True for an answer served from the response cache (no model call: its
    usage counts no request and no token, `Usage.cache_hits` one), judged again as any reply.
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
    cache_hit: bool = False

    def __repr__(self) -> str:
        # the dataclass's repr, through the redactor: printed model text is redacted too
        shown = ", ".join(f"{item.name}={getattr(self, item.name)!r}" for item in fields(self))
        return redact_text(f"Attempt({shown})")


new_attempt = builder(Attempt)
"""`Attempt(...)` for the engine (`frozen.builder`: the same object, built cheaper)."""


def first_attempt(  # noqa: PLR0917  (called by position: every run's hot path)
    messages: tuple[Mapping[str, Any], ...],
    params: Mapping[str, Any],
    raw_text: str,
    finish_reason: str | None,
    flags: tuple[Flag, ...],
    usage: Usage,
    model: str | None,
    latency_s: float,
    reasoning: str | None,
    /,
) -> Attempt:
    """The record of a run's first call whose answer stood as it came (`Attempt(number=1,
    strategy=INITIAL, ok=True, ...)`, nothing else set), built by position in the field order
    (a keyword call's binding costs as much as the record)."""
    return new_attempt(
        1,
        Strategy.INITIAL,
        messages,
        params,
        raw_text,
        finish_reason,
        flags,
        (),
        usage,
        model,
        latency_s,
        None,
        None,
        True,
        reasoning,
    )


def was_given(attempt: Attempt) -> bool:
    """Whether the attempt's reply was handed in (`validate`, `healjson heal`), not requested:
    no request, no tokens, no time, no error."""
    usage = attempt.usage
    return not (usage.requests or usage.total_tokens or attempt.latency_s or attempt.error)


def model_calls(attempts: tuple[Attempt, ...]) -> int:
    """Model calls among `attempts`: those neither a cache answered (healjson's response cache
    answers only a run's first; a framework's own, DSPy's, may answer a repair too) nor handed
    in (`was_given`)."""
    return sum(not (attempt.cache_hit or was_given(attempt)) for attempt in attempts)
