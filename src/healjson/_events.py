"""Structured events for every attempt and outcome, through structlog.

Quiet by default: nothing is emitted until the application configures structlog (or captures
logs in a test), so an unconfigured app does not get healjson output on stdout. Message content
is never included here — only sizes, flags, diagnostics' paths and constraints, and usage.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._outcome import Attempt, Degraded, Healed

__all__ = ["attempt", "degraded", "healed"]

LOGGER_NAME = "healjson"


def _emit(event: str, **fields: Any) -> None:
    import structlog

    if not structlog.is_configured():
        return
    structlog.get_logger(LOGGER_NAME).info(event, **fields)


def attempt(record: Attempt) -> None:
    """One model call and its L1/L2 verdict."""
    _emit(
        "healjson.attempt",
        attempt=record.number,
        strategy=str(record.strategy),
        ok=record.ok,
        finish_reason=record.finish_reason,
        flags=[str(f) for f in record.flags],
        diagnostics=[f"{d.path}: {d.constraint}" for d in record.diagnostics],
        prompt_tokens=record.usage.prompt_tokens,
        completion_tokens=record.usage.completion_tokens,
        latency_s=round(record.latency_s, 6),
        model=record.model,
        raw_chars=len(record.raw_text or ""),
        error=record.error,
    )


def healed(outcome: Healed[Any]) -> None:
    """A run that produced a valid value."""
    _emit(
        "healjson.healed",
        calls=outcome.calls,
        flags=[str(f) for f in outcome.flags],
        changed_fields=list(outcome.changed_fields),
        total_tokens=outcome.usage.total_tokens,
    )


def degraded(outcome: Degraded[Any]) -> None:
    """A run that ended in a degradation."""
    _emit(
        "healjson.degraded",
        reason=str(outcome.reason),
        calls=outcome.calls,
        errors=[f"{d.path}: {d.constraint}" for d in outcome.errors],
        total_tokens=outcome.usage.total_tokens,
    )
