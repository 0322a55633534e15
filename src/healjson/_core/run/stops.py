"""Where a run stops without a repair: the provider's own stops, a failed call's diagnostic, and
the fallback a degraded run carries (the loop, `engine`, decides when)."""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from healjson._core.diagnostic import ROOT, Diagnostic, Source, describe_exception
from healjson._core.outcome.attempt import Reason
from healjson._core.redact import redact_text
from healjson._core.wire.effects import AwaitAll, CallFailure
from healjson._core.wire.reply import Reply

from .policy import HealPolicy

__all__ = ["call_fallback", "failure_diagnostic", "provider_stop", "refusal_diagnostic"]


def provider_stop(reply: Reply, policy: HealPolicy) -> tuple[Reason, Diagnostic] | None:
    """A reply no repair follows: a content filter, or a refusal under `on_refusal="degrade"`."""
    if reply.finish_reason == "content_filter":
        return Reason.CONTENT_FILTER, Diagnostic(
            ROOT,
            reply.content or "",
            "the provider's content filter stopped the answer",
            "Rephrase the request; the provider refused to complete it.",
            Source.CONTENT_FILTER,
        )
    if reply.refusal and policy.on_refusal == "degrade":
        return Reason.REFUSAL, refusal_diagnostic(reply.refusal)
    return None


def refusal_diagnostic(refusal: str, prescription: str | None = None) -> Diagnostic:
    """A model's refusal as a diagnostic."""
    return Diagnostic(
        ROOT,
        refusal,
        "the model refused to answer",
        prescription or "Answer the original request with the JSON value it asks for.",
        Source.REFUSAL,
    )


def call_fallback(
    factory: Callable[..., Any], raw: str | None, errors: list[Diagnostic], limit: float | None
) -> Generator[AwaitAll, Any, tuple[Any, Diagnostic | None]]:
    """A fallback factory's value (awaited through the driver when it is a coroutine), or the
    diagnostic of its failure."""
    try:
        value = factory(raw, tuple(errors))
        if hasattr(value, "__await__"):
            (value,) = yield AwaitAll((value,), limit)
            if isinstance(value, Exception):
                raise value
    except Exception as exc:
        return None, Diagnostic(
            ROOT,
            describe_exception(exc),
            "the fallback factory raised",
            "Fix the fallback factory; the degradation carries no fallback value.",
            Source.FALLBACK,
        )
    return value, None


def failure_diagnostic(failure: CallFailure, message: str) -> Diagnostic:
    """A failed call as a diagnostic: the provider's own error (status, code, message,
    redacted) and the fix its status calls for, or, with no HTTP answer, the generic advice."""
    fault = failure.fault
    if fault is None:
        return Diagnostic(
            ROOT,
            message,
            f"the model call failed ({failure.kind})",
            "Check the provider, network and credentials; healjson does not retry transport "
            "errors (the client's own retry policy does).",
            Source.API,
        )
    return Diagnostic(
        ROOT,
        message,
        redact_text(f"the provider refused the call: {fault.said()}"),
        redact_text(fault.advice()),
        Source.API,
        rule=redact_text(fault.label),
    )
