"""Where an attempt ends before any judging, or a run without a repair: the provider's own stops
(a content filter, a refusal under `on_refusal="degrade"`), a stream closed early, a failed
call, and the fallback a degraded run carries.

Every one is a `Diagnostic`; the loop (`engine`) decides when: it records it on the attempt and
degrades (or, for a stream closed early, judges the attempt by it).
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any

from healjson._core.diagnostic import ROOT, Diagnostic, Source, describe_exception
from healjson._core.flags import Flag
from healjson._core.judge.check import Evaluation
from healjson._core.judge.verdict import Verdict
from healjson._core.outcome.attempt import Reason
from healjson._core.parse import ParseResult
from healjson._core.redact import redact_text
from healjson._core.wire.effects import AwaitAll, CallFailure, CallResult
from healjson._core.wire.reply import Reply

from .policy import HealPolicy

__all__ = [
    "aborted_evaluation",
    "call_fallback",
    "failure_diagnostic",
    "provider_stop",
    "refusal_diagnostic",
]


def provider_stop(reply: Reply, policy: HealPolicy) -> tuple[Reason, Diagnostic] | None:
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


def aborted_evaluation(result: CallResult, raw: str | None) -> Evaluation:
    """A stream closed early on violations more tokens could not fix: judged by them. (A
    stream that ended with no finish reason in the middle of a value comes here too, with a
    truncation diagnostic: it is judged as cut.)"""
    diagnostics = result.aborted
    if diagnostics[0].source is Source.TRUNCATION:
        cut = ParseResult(result.partial, (Flag.TRUNCATED,), True, diagnostics[0], answer=raw)
        return Evaluation(Verdict.TRUNCATED, cut, diagnostics, answer=raw)
    contract = any(d.source is Source.CONTRACT for d in diagnostics)
    parse = ParseResult(result.partial, (Flag.STREAM_ABORTED,), answer=raw)
    verdict = Verdict.CONTRACT if contract else Verdict.SCHEMA
    if diagnostics[0].source is Source.DEGENERATE:  # the guard cut it (a whitespace run, a loop)
        verdict = Verdict.DEGENERATE
    return Evaluation(verdict, parse, diagnostics, answer=raw)


def failure_diagnostic(failure: CallFailure, message: str) -> Diagnostic:
    """A failed call as a diagnostic: the provider's own error (status, code, message,
    redacted) and the fix its status calls for, or, with no HTTP answer, the generic advice.
    Its `extra["error_type"]` is telemetry's `error.type`: the exception's class name, else
    the HTTP status the provider answered with, else the failure's kind."""
    fault = failure.fault
    named = failure.error_type or (str(fault.status) if fault is not None else failure.kind)
    if fault is None:
        return Diagnostic(
            ROOT,
            message,
            f"the model call failed ({failure.kind})",
            "Check the provider, network and credentials. healjson does not retry transport "
            "errors: retry them in the client (its retry settings, where it has them) or "
            "around the call.",
            Source.API,
            extra={"error_type": named},
        )
    return Diagnostic(
        ROOT,
        message,
        redact_text(f"the provider refused the call: {fault.said()}"),
        redact_text(fault.advice()),
        Source.API,
        rule=redact_text(fault.label),
        extra={"error_type": named},
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
