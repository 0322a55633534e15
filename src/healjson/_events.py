"""Structured events for every attempt, local repair, diagnostic, repair request and outcome.

Quiet by default: nothing is emitted until the application either binds a logger with
`healjson.set_logger(...)` or configures structlog globally (then the `healjson` structlog logger
is used). Fields are flat. Credentials never appear: call parameters are not logged at all, and
model output / prompt text is included only with `include_content=True`.

Events: `healjson.attempt`, `healjson.local_repair`, `healjson.diagnostic`,
`healjson.repair_request`, `healjson.healed`, `healjson.degraded`.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._diagnostic import short_repr

if TYPE_CHECKING:
    from ._outcome import Attempt, Degraded, Healed
    from ._repair import RepairPrompt

__all__ = ["attempt", "degraded", "healed", "repair_request", "set_logger"]

LOGGER_NAME = "healjson"


@dataclass(frozen=True, slots=True)
class _Settings:
    logger: Any = None
    include_content: bool = False


class _Current:
    """Holds the active settings (one mutable slot instead of a module global)."""

    settings = _Settings()


@contextlib.contextmanager
def _restore(previous: _Settings) -> Iterator[None]:
    try:
        yield
    finally:
        _Current.settings = previous


def set_logger(logger: Any = None, *, include_content: bool = False) -> Any:
    """Send healjson's events to `logger` (any structlog-style logger with `.info(event, **kw)`);
    `None` goes back to the default (structlog's `healjson` logger, only when structlog is
    configured). `include_content=True` adds raw model output and rendered repair prompts.

    Returns a context manager that restores the previous settings on exit, so
    `with healjson.set_logger(log): ...` scopes the change; calling it without `with` keeps it.
    """
    previous = _Current.settings
    _Current.settings = _Settings(logger, include_content)
    return _restore(previous)


def _emit(event: str, **fields: Any) -> None:
    logger = _Current.settings.logger
    if logger is None:
        import structlog

        if not structlog.is_configured():
            return
        logger = structlog.get_logger(LOGGER_NAME)
    try:
        logger.info(event, **fields)
    except Exception:  # a broken log sink must never break the healing run
        return


def attempt(record: Attempt) -> None:
    """One model call, its local repairs and its diagnostics."""
    if _Current.settings.logger is None and not _structlog_ready():
        return
    content = {"raw_text": record.raw_text} if _Current.settings.include_content else {}
    _emit(
        "healjson.attempt",
        attempt=record.number,
        strategy=str(record.strategy),
        ok=record.ok,
        finish_reason=record.finish_reason,
        flags=[str(f) for f in record.flags],
        diagnostics=len(record.diagnostics),
        prompt_tokens=record.usage.prompt_tokens,
        completion_tokens=record.usage.completion_tokens,
        tokens_estimated=record.usage.estimated,
        latency_s=round(record.latency_s, 6),
        model=record.model,
        raw_chars=len(record.raw_text or ""),
        error=record.error,
        **content,
    )
    if record.flags:
        _emit("healjson.local_repair", attempt=record.number, flags=[str(f) for f in record.flags])
    for diagnostic in record.diagnostics:
        value = (
            {"value": short_repr(diagnostic.value, 200)}
            if _Current.settings.include_content
            else {}
        )
        _emit(
            "healjson.diagnostic",
            attempt=record.number,
            path=diagnostic.path,
            source=str(diagnostic.source),
            rule=diagnostic.rule,
            constraint=diagnostic.constraint,
            fields=list(diagnostic.fields),
            **value,
        )


def repair_request(number: int, prompt: RepairPrompt) -> None:
    """The request healjson is about to send to repair attempt `number - 1`."""
    if _Current.settings.logger is None and not _structlog_ready():
        return
    rendered = prompt.render()
    content = {"prompt": rendered} if _Current.settings.include_content else {}
    _emit(
        "healjson.repair_request",
        attempt=number,
        strategy=str(prompt.strategy),
        round=prompt.round,
        diagnostics=len(prompt.diagnostics),
        history_lines=len(prompt.history),
        with_example=prompt.example is not None,
        with_schema=prompt.schema is not None,
        prompt_chars=len(rendered),
        **content,
    )


def healed(outcome: Healed[Any]) -> None:
    """A run that produced a valid value."""
    if _Current.settings.logger is None and not _structlog_ready():
        return
    _emit(
        "healjson.healed",
        calls=outcome.calls,
        max_attempts=outcome.max_attempts,
        flags=[str(f) for f in outcome.flags],
        changed_fields=list(outcome.changed_fields),
        prompt_tokens=outcome.usage.prompt_tokens,
        completion_tokens=outcome.usage.completion_tokens,
        latency_s=round(sum(a.latency_s for a in outcome.attempts), 6),
    )


def degraded(outcome: Degraded[Any]) -> None:
    """A run that ended in a degradation."""
    if _Current.settings.logger is None and not _structlog_ready():
        return
    _emit(
        "healjson.degraded",
        reason=str(outcome.reason),
        calls=outcome.calls,
        max_attempts=outcome.max_attempts,
        errors=[f"{d.path}: {d.constraint}" for d in outcome.errors],
        prompt_tokens=outcome.usage.prompt_tokens,
        completion_tokens=outcome.usage.completion_tokens,
        latency_s=round(sum(a.latency_s for a in outcome.attempts), 6),
    )


def _structlog_ready() -> bool:
    structlog = sys.modules.get("structlog")  # not imported: then it cannot be configured either
    return structlog is not None and bool(structlog.is_configured())
