"""The sans-I/O repair loop: yields the next request, consumes the reply, returns an outcome.

One generator holds every decision — whether the first reply is already clean, which strategy
the next round uses, when the budget is spent, which reason a degradation carries — and knows
nothing about HTTP, event loops or provider objects: it yields `effects` and receives its own
types back. The sync and async drivers in `drive` perform the effects. One place builds
`Healed` (`_healed`), one builds `Degraded` (`_degrade`), one table picks the final reason.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from healjson._core.diagnostic import ROOT, Diagnostic, Source, describe_exception, format_path
from healjson._core.flags import Flag
from healjson._core.frozen import builder
from healjson._core.judge.check import Evaluation, evaluate
from healjson._core.judge.contracts import Contract, ContractContext
from healjson._core.judge.enforcement import Enforcement, conforms
from healjson._core.judge.verdict import Verdict
from healjson._core.observe import events as _events
from healjson._core.outcome.attempt import new_attempt
from healjson._core.outcome.decisions import final_reason, strategy_for
from healjson._core.outcome.outcome import Attempt, Degraded, Healed, Outcome, Reason
from healjson._core.outcome.seal import seal
from healjson._core.parse import ParseResult
from healjson._core.parse.align import stands
from healjson._core.redact import redact_params, redact_text, run_secrets
from healjson._core.repair.items import ItemRepair, failed_items, merge_items
from healjson._core.repair.prompt import MAX_HISTORY_LINES, RepairPrompt, Strategy, history_line
from healjson._core.sentinels import NOTHING
from healjson._core.target.target import Target
from healjson._core.wire import formats as wire
from healjson._core.wire.effects import (
    AwaitAll,
    CallFailure,
    CallResult,
    ModelCall,
    new_call_result,
    new_model_call,
)
from healjson._core.wire.reply import Reply, Usage

from .policy import HealPolicy, time_left

__all__ = ["HealSpec", "first_healed", "heal_flow", "new_run_id", "next_prompt"]

_MAX_CHANGED_PATHS = 200
_NO_USAGE = Usage()
# a run id: this process's random prefix and a counter (unique across processes and threads,
# and cheap: no system call per run)
_RUN_PREFIX = os.urandom(6).hex()
_RUN_COUNTER = itertools.count(1)


new_run_id: Callable[[], str] = map(f"{_RUN_PREFIX}-{{:06d}}".format, _RUN_COUNTER).__next__
"""A fresh run id, e.g. `3f9a1c2b7d4e-000042` (one C-level call: no Python frame per run)."""


@dataclass(frozen=True, slots=True)
class HealSpec:
    """The constant part of a healing run (what a `Healer` was configured with)."""

    target: Target[Any]
    contracts: tuple[Contract[Any], ...] = ()
    policy: HealPolicy = field(default_factory=HealPolicy)
    fallback: Any = None
    example: str | None = None
    contract_names: tuple[str, ...] = ()
    """The contracts' names (set from `contracts` when not given)."""
    target_name: str = ""
    """The target's name (set from `target` when not given)."""

    def __post_init__(self) -> None:
        if self.contracts and not self.contract_names:
            names = tuple(rule.name for rule in self.contracts)
            object.__setattr__(self, "contract_names", names)
        if not self.target_name:
            object.__setattr__(self, "target_name", self.target.name)


class _Run:
    """Mutable bookkeeping of one run (private to the generator)."""

    __slots__ = (
        "attempts",
        "enforcement",
        "events",
        "first_data",
        "history",
        "items",
        "original",
        "partial",
        "run_id",
        "spec",
        "started",
        "usage",
        "validation",
    )

    def __init__(
        self,
        spec: HealSpec,
        original: tuple[Mapping[str, Any], ...],
        started: float,
        run_id: str,
        events: _events.RunEvents | None,
    ) -> None:
        self.spec = spec
        self.original = original
        self.attempts: list[Attempt] = []
        self.usage: Usage = _NO_USAGE
        self.history: list[str] = []
        self.items: ItemRepair | None = None  # a per-item repair in progress
        self.first_data: Any = NOTHING
        self.partial: Any = None
        self.validation: Any = None  # pydantic's validation context (the caller's `context=`)
        self.enforcement: Enforcement | None = None  # what the first request asked to enforce
        self.started = started
        self.run_id = run_id
        self.events = events

    def time_left(self) -> float | None:
        """Seconds before the policy's deadline (None: no deadline)."""
        return time_left(self.spec.policy, self.started)

    def contract_limit(self) -> float | None:
        """How long user code (async contracts, fallback factories) may run now."""
        limits = [self.spec.policy.contract_timeout_s, self.time_left()]
        known = [limit for limit in limits if limit is not None]
        return max(min(known), 0.0) if known else None


Flow = Generator[ModelCall | AwaitAll, Any, Outcome[Any]]


def heal_flow(
    spec: HealSpec,
    messages: tuple[Mapping[str, Any], ...],
    params: Mapping[str, Any],
    ctx: ContractContext,
    *,
    given: Reply | None = None,
    started: float | None = None,
    observed: bool = True,
    enforcement: Enforcement | None = None,
) -> Flow:
    """The whole L1-L4 loop for one request, as a generator the drivers run. `given`: a reply
    already in hand, judged as the first attempt instead of calling the model (`validate`);
    `started`: when the run began (a `time.monotonic()`), for the deadline; `observed=False`:
    no events, spans or metrics (a run replayed from stored results); `enforcement`: the schema
    the adapter's request asked the endpoint to enforce (its first answer is judged against it:
    `healjson._core.judge.enforcement`). The first step is every
    run's: the first reply, if it is strictly valid data with nothing more to check, is the
    run's `Healed` at once (`first_healed`), before any of the loop's state is built. However
    the flow ends (an outcome, a driver that raised, a stream the caller abandoned), the run's
    telemetry context is released."""
    started = time.monotonic() if started is None else started
    run_id = new_run_id()
    # None: nothing listens (or a replayed run, whose calls were observed when made)
    events = _events.for_run(run_id, spec) if observed else None
    try:
        policy = spec.policy
        if given is not None:
            result = new_call_result(given, None, 0.0)
        else:
            left = time_left(policy, started)
            if events is not None:
                events.call_started(1, params)
            result = yield new_model_call(1, messages, params, left, policy.provider_errors)
        # the first step: strictly valid data with nothing more to check needs no L1, no loop
        if result.reply is not None and not result.aborted:
            healed = first_healed(
                spec,
                messages,
                params,
                result.reply,
                elapsed_s=result.elapsed_s,
                run_id=run_id,
                context=ctx.validation_context,
            )
            if healed is not None:
                if events is not None:
                    events.attempt(healed.attempts[0])
                    events.healed(healed)
                return healed
        run = _Run(spec, messages, started, run_id, events)
        run.validation = ctx.validation_context
        run.enforcement = enforcement
        first_result = result
        call_params = dict(params)
        prompt: RepairPrompt | None = None
        for number in range(1, policy.max_attempts + 1):
            # `messages` are the run's own copies (normalise_messages): the first request and its
            # attempt record may share them; the driver hands the call fresh copies either way
            sent = tuple(prompt.messages(messages)) if prompt else messages
            this_params = dict(call_params)
            if number == policy.max_attempts and number > 1 and policy.escalate_model:
                this_params["model"] = policy.escalate_model
            if policy.token_budget is not None and number > 1:
                projected = run.usage.total_tokens + _estimate(sent)
                if projected > policy.token_budget:
                    return (yield from _degrade(run, Reason.BUDGET_EXCEEDED, [_budget(projected)]))
            if policy.cost_budget is not None and number > 1:
                cost = _projected_cost(run.usage, sent)
                if cost is not None and cost > policy.cost_budget:
                    diagnostic = _cost_budget(cost, policy.cost_budget)
                    return (yield from _degrade(run, Reason.BUDGET_EXCEEDED, [diagnostic]))
            if number == 1:
                result = first_result
            else:
                left = run.time_left()
                if left is not None and left <= 0:
                    return (yield from _degrade(run, Reason.TIMEOUT, [_deadline(policy)]))
                if run.events is not None:
                    run.events.call_started(number, this_params)
                asked = prompt.items if prompt is not None else ()
                result = yield new_model_call(
                    number, sent, this_params, left, policy.provider_errors, items=asked
                )
            base: dict[str, Any] = {
                "number": number,
                "strategy": prompt.strategy if prompt else Strategy.INITIAL,
                "messages": sent,
                "params": redact_params(this_params),  # stored redacted; the call got the real ones
                "prompt": prompt,
                "latency_s": result.elapsed_s,
            }
            reply = result.reply
            if reply is None:
                failure = result.failure or CallFailure("api_error", "the call returned no reply")
                return (yield from _call_failed(run, base, failure))
            raw = _raw_text(reply)
            usage = reply.usage or _estimated_usage(sent, raw)
            run.usage = run.usage + usage
            base.update(
                raw_text=raw,
                tool_calls=reply.tool_calls,
                finish_reason=reply.finish_reason,
                usage=usage,
                model=reply.model or this_params.get("model"),
            )
            stop = _provider_stop(reply, policy)
            if stop is not None:
                reason, diagnostic = stop
                run.attempts.append(new_attempt(**base, diagnostics=(diagnostic,)))
                if run.events is not None:
                    run.events.attempt(run.attempts[-1])
                return (yield from _degrade(run, reason, [diagnostic], raw))
            if result.aborted:
                evaluation = _aborted_evaluation(result, raw)
            elif reply.refusal:
                evaluation = _refusal_evaluation(reply)
            else:
                merged = merge_items(reply, run.items) if run.items is not None else None
                run.items = None
                evaluation = yield from evaluate(
                    spec.target,
                    spec.contracts,
                    reply if merged is None else merged,
                    ctx,
                    on_ambiguity=policy.on_ambiguity,
                    caller_tools="tools" in this_params,
                    contract_timeout_s=run.contract_limit(),
                )
                run.usage = _contracts_spent(run.usage, ctx)
                if merged is not None:
                    flags = (*evaluation.parse.flags, Flag.ITEMS_MERGED)
                    evaluation = replace(evaluation, parse=evaluation.parse.replace(flags=flags))
                if (
                    number == 1
                    and run.enforcement is not None
                    and (evaluation.parse.flags or evaluation.verdict not in _SCHEMA_KEPT)
                    and _unenforced(run, reply, raw, params)
                ):
                    flags = (*evaluation.parse.flags, Flag.SCHEMA_NOT_ENFORCED)
                    evaluation = replace(evaluation, parse=evaluation.parse.replace(flags=flags))
            attempt = new_attempt(
                **base,
                flags=evaluation.parse.flags,
                diagnostics=evaluation.diagnostics,
                ok=evaluation.ok,
                reasoning=_reasoning(reply.reasoning, evaluation.parse.reasoning),
            )
            run.attempts.append(attempt)
            if run.events is not None:
                run.events.attempt(attempt)
            if evaluation.ok:
                return _healed(
                    run, evaluation.instance, evaluation.parse.flags, raw or "", evaluation
                )
            _remember(run, evaluation)
            if evaluation.stopped:  # a rule declared `on_fail="stop"`: no re-ask
                return (yield from _degrade(run, Reason.CONTRACT_ERROR, evaluation.diagnostics))
            if evaluation.verdict is Verdict.CONTRACT_ERROR:
                # a contract that raises is a bug in code: another model call cannot fix it
                return (yield from _degrade(run, Reason.CONTRACT_ERROR, evaluation.diagnostics))
            if evaluation.verdict is Verdict.TRUNCATED and policy.on_truncation == "degrade":
                return (yield from _degrade(run, Reason.TOKEN_TRUNCATED, evaluation.diagnostics))
            strategy = strategy_for(evaluation.diagnostics)
            if strategy is Strategy.REPAIR:
                run.items = failed_items(spec.target, evaluation)
                if run.items is not None:
                    strategy = Strategy.ITEMS
            if strategy is Strategy.TRUNCATION and policy.on_truncation in (
                "raise_max_tokens",
                "both",
            ):
                call_params = _more_tokens(call_params, usage, policy)
            prompt = _next_prompt(run, strategy, number, evaluation.answer, evaluation)
            if number < policy.max_attempts and run.events is not None:
                run.events.repair_request(number + 1, prompt)
            if policy.history == "compact":
                run.history.append(history_line(number, evaluation.verdict, evaluation.diagnostics))
        last = run.attempts[-1]
        reason = final_reason(last.diagnostics, policy.max_attempts)
        return (yield from _degrade(run, reason, last.diagnostics))
    finally:
        if events is not None:
            events.release()


# verdicts of a reply read as it came (no repair flag) that passed the schema: judged no further
_SCHEMA_KEPT = frozenset({Verdict.OK, Verdict.CONTRACT, Verdict.CONTRACT_ERROR, Verdict.TRUNCATED})


def _unenforced(run: _Run, reply: Reply, raw: str | None, params: Mapping[str, Any]) -> bool:
    """True when the first reply shows that the endpoint did not enforce the schema the request
    asked it to (`enforcement`): its answer is not JSON, or breaks the schema as sent. A cut by
    the token limit says nothing, nor a call of one of the caller's tools; the client warns
    once."""
    enforcement = run.enforcement
    if enforcement is None or reply.finish_reason == "length":
        return False
    if reply.tool_calls and "tools" in params:  # a call of the caller's tool: not an answer
        return False
    schema = enforcement.schema(params)
    if schema is None or conforms(raw, schema):
        return False
    if enforcement.first_breach():
        _events.warn(
            "healjson.schema_not_enforced",
            run_id=run.run_id,
            target=run.spec.target_name,
            model=reply.model,
            hint="the endpoint accepted a request to enforce the schema but its answer breaks "
            "it: declare a weaker json_mode for this endpoint",
        )
    return True


def first_healed(
    spec: HealSpec,
    original: tuple[Mapping[str, Any], ...],
    params: Mapping[str, Any],
    reply: Reply,
    *,
    elapsed_s: float,
    run_id: str,
    context: Any = None,
) -> Healed[Any] | None:
    """The outcome of a first reply (a whole one, not what an aborted stream left) that needs
    no L1: strictly valid data, finished normally, with no contracts to run and nothing else to
    read (no tool calls, no refusal). Its attempt is recorded as the loop records one, and the
    `Healed` is built as `_healed` builds it (no event is sent: the caller announces it, if
    anyone listens). None in every other case: the loop then judges the reply as its first
    attempt, with L1 and L2 as for any reply. The parameters and the outcome are redacted with
    the current scope's secrets. `context`: pydantic's validation context
    (`ContractContext.validation_context`), as in every validation."""
    if spec.contracts:
        return None
    content = reply.content
    if (
        not content
        or reply.refusal
        or reply.tool_calls
        or reply.finish_reason in ("content_filter", "length")
    ):
        return None
    try:
        instance = spec.target.validate_json(content, strict=True, context=context)
    except Exception:  # ValidationError, or text pydantic-core cannot read: L1 decides
        return None
    if not stands(spec.target, content, instance, context):  # a key spells a field left at
        return None  # its default: L1 aligns it, or says why it cannot
    usage = reply.usage or _estimated_usage(original, content)
    attempt = new_attempt(
        number=1,
        strategy=Strategy.INITIAL,
        messages=original,
        params=redact_params(params),  # stored redacted; the call got the real ones
        raw_text=content,
        finish_reason=reply.finish_reason,
        usage=usage,
        model=reply.model or params.get("model"),
        latency_s=elapsed_s,
        ok=True,
        reasoning=reply.reasoning,
    )
    healed = _new_healed(
        spec, instance, content, (attempt,), flags=(), usage=usage, changed=(), run_id=run_id
    )
    return seal(healed, run_secrets())


def _next_prompt(
    run: _Run, strategy: Strategy, number: int, raw: str | None, evaluation: Evaluation
) -> RepairPrompt:
    spec = run.spec
    rich = number >= spec.policy.example_from_repair  # the schema text is built lazily
    schema = spec.target.json_schema_text if rich and spec.target.json_schema else None
    history = tuple(run.history[-MAX_HISTORY_LINES:])
    prompt = _prompt(
        spec.policy,
        strategy,
        number,
        raw,
        evaluation.diagnostics,
        history=history,
        example=spec.example,
        schema=schema,
    )
    if run.items is None:
        return prompt
    # the example shows a whole list: a per-item repair asks for an array of items instead
    items, count = run.items.failed, len(run.items.data)
    return replace(prompt, items=items, item_count=count, example=None)


def _prompt(
    policy: HealPolicy,
    strategy: Strategy,
    repair_round: int,
    raw: str | None,
    diagnostics: tuple[Diagnostic, ...],
    *,
    history: tuple[str, ...],
    example: str | None,
    schema: str | None,
) -> RepairPrompt:
    """The repair request after attempt `repair_round` (the request after attempt N is repair
    round N): the golden example and the schema join from `policy.example_from_repair` on."""
    rich = repair_round >= policy.example_from_repair and strategy is not Strategy.EMPTY_RETRY
    resend = strategy is Strategy.TRUNCATION and policy.on_truncation == "raise_max_tokens"
    return RepairPrompt(
        strategy=Strategy.RESEND if resend else strategy,
        round=repair_round,
        raw_output=raw,
        diagnostics=diagnostics,
        history=history,
        example=example if rich else None,
        schema=schema if rich else None,
    )


_FINAL_REASONS = frozenset(
    {
        Reason.CONTRACT_ERROR,  # a bug in code: another model call cannot fix it
        Reason.REFUSAL,
        Reason.CONTENT_FILTER,
        Reason.API_ERROR,
        Reason.TIMEOUT,
        Reason.BUDGET_EXCEEDED,
    }
)


def next_prompt(
    outcome: Outcome[Any],
    policy: HealPolicy | None = None,
    *,
    example: str | None = None,
    schema: str | None = None,
) -> RepairPrompt | None:
    """The repair request the loop sends after `outcome`'s last attempt, by the loop's own
    rules (`policy`, default `HealPolicy()`); None when the loop would stop there: the value
    healed, or the failure is one another model call cannot fix. `example` / `schema`: the
    golden example and schema text, included from `policy.example_from_repair` on."""
    policy = policy or HealPolicy()
    if not isinstance(outcome, Degraded) or outcome.reason in _FINAL_REASONS:
        return None
    if outcome.reason is Reason.TOKEN_TRUNCATED and policy.on_truncation == "degrade":
        return None
    diagnostics = tuple(outcome.errors)
    repair_round = max(len(outcome.attempts), 1)
    strategy = strategy_for(diagnostics)
    return _prompt(
        policy,
        strategy,
        repair_round,
        outcome.raw_text,
        diagnostics,
        history=(),
        example=example,
        schema=schema,
    )


def _provider_stop(reply: Reply, policy: HealPolicy) -> tuple[Reason, Diagnostic] | None:
    if reply.finish_reason == "content_filter":
        return Reason.CONTENT_FILTER, Diagnostic(
            ROOT,
            reply.content or "",
            "the provider's content filter stopped the answer",
            "Rephrase the request; the provider refused to complete it.",
            Source.CONTENT_FILTER,
        )
    if reply.refusal and policy.on_refusal == "degrade":
        return Reason.REFUSAL, _refusal_diagnostic(reply.refusal)
    return None


def _refusal_diagnostic(refusal: str) -> Diagnostic:
    return Diagnostic(
        ROOT,
        refusal,
        "the model refused to answer",
        "Answer the original request with the JSON value it asks for.",
        Source.REFUSAL,
    )


def _refusal_evaluation(reply: Reply) -> Evaluation:
    diagnostic = _refusal_diagnostic(reply.refusal or "")
    return Evaluation(Verdict.REFUSAL, ParseResult(error=diagnostic), (diagnostic,))


def _aborted_evaluation(result: CallResult, raw: str | None) -> Evaluation:
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
    return Evaluation(verdict, parse, diagnostics, answer=raw)


def _call_failed(
    run: _Run, base: dict[str, Any], failure: CallFailure
) -> Generator[AwaitAll, Any, Outcome[Any]]:
    reason = Reason(failure.kind)
    message = redact_text(failure.message)  # an error body may echo a credential
    diagnostic = _failure_diagnostic(failure, message)
    if failure.deadline:
        diagnostic = _deadline(run.spec.policy, message)
    if failure.raw_text:  # a stream that failed part-way: what had arrived is kept
        base = {**base, "raw_text": redact_text(failure.raw_text)}
        if failure.partial is not None:
            run.partial = failure.partial
    attempt = new_attempt(**base, diagnostics=(diagnostic,), error=message)
    run.attempts.append(attempt)
    if run.events is not None:
        run.events.attempt(attempt)
    return (yield from _degrade(run, reason, [diagnostic]))


def _contracts_spent(usage: Usage, ctx: ContractContext) -> Usage:
    """The run's usage with what its contracts' own model calls spent (a judge's) added."""
    while ctx.spent:
        spent = ctx.spent.pop(0)
        if isinstance(spent, Usage):
            usage = usage + spent
    return usage


def _raw_text(reply: Reply) -> str | None:
    """What the attempt records as the model's output: the content, or — when the reply is
    only tool calls — the first call's arguments (every call is kept in `Attempt.tool_calls`)."""
    if reply.content or not reply.tool_calls:
        return reply.content
    return reply.tool_calls[0].arguments


def _reasoning(*parts: str | None) -> str | None:
    return "\n\n".join(part for part in parts if part) or None


def _remember(run: _Run, evaluation: Evaluation) -> None:
    """Keep the best-effort data of a failed attempt (for `partial` and change tracking); L1's
    result decodes it lazily, so nothing is parsed twice."""
    data = evaluation.data
    if data is NOTHING or data is None:
        return
    run.partial = data
    if evaluation.verdict is not Verdict.TRUNCATED and run.first_data is NOTHING:
        run.first_data = data


def _healed(
    run: _Run,
    instance: Any,
    flags: tuple[Flag, ...],
    raw: str,
    evaluation: Evaluation | None = None,
) -> Outcome[Any]:
    """A loop's `Healed` (built by `_new_healed`), announced."""
    changed: tuple[str, ...] = ()
    if len(run.attempts) > 1 and run.first_data is not NOTHING and evaluation is not None:
        final = _as_data(run.spec.target, evaluation)
        changed = tuple(_diff(run.first_data, final, ()))[:_MAX_CHANGED_PATHS]
    outcome = _new_healed(
        run.spec,
        instance,
        raw,
        tuple(run.attempts),
        flags=flags,
        usage=run.usage,
        changed=changed,
        run_id=run.run_id,
    )
    if evaluation is not None and (evaluation.warnings or evaluation.dropped or evaluation.fixed):
        outcome = replace(
            outcome,
            warnings=evaluation.warnings,
            dropped=evaluation.dropped,
            fixed=evaluation.fixed,
        )
    outcome = seal(outcome, run_secrets())
    if run.events is not None:
        run.events.healed(outcome)
    return outcome


_build_healed = builder(Healed)  # `Healed(...)`, built cheaper (`frozen.builder`)


def _new_healed(
    spec: HealSpec,
    instance: Any,
    raw: str,
    attempts: tuple[Attempt, ...],
    *,
    flags: tuple[Flag, ...],
    usage: Usage,
    changed: tuple[str, ...],
    run_id: str,
) -> Healed[Any]:
    """The one place a `Healed` is built."""
    return _build_healed(
        value=instance,
        raw_text=raw,
        attempts=attempts,
        usage=usage,
        flags=flags,
        changed_fields=changed,
        max_attempts=spec.policy.max_attempts,
        run_id=run_id,
        target=spec.target_name,
        contracts=spec.contract_names,
    )


def _degrade(
    run: _Run, reason: Reason, errors: Sequence[Diagnostic], raw: str | None = None
) -> Generator[AwaitAll, Any, Outcome[Any]]:
    if raw is None and run.attempts:
        raw = run.attempts[-1].raw_text
    errors = list(errors)
    fallback = run.spec.fallback
    if callable(fallback) and not isinstance(fallback, type):
        limit = run.spec.policy.contract_timeout_s
        fallback, failure = yield from _call_fallback(fallback, raw, errors, limit)
        if failure is not None:
            errors.append(failure)
    spec = run.spec
    outcome: Degraded[Any] = Degraded(
        reason=reason,
        raw_text=raw,
        errors=tuple(errors),
        fallback=fallback,
        partial=run.partial,
        attempts=tuple(run.attempts),
        usage=run.usage,
        max_attempts=spec.policy.max_attempts,
        run_id=run.run_id,
        target=spec.target_name,
        contracts=spec.contract_names,
    )
    outcome = seal(outcome, run_secrets())
    if run.events is not None:
        run.events.degraded(outcome)
    return outcome


def _call_fallback(
    factory: Callable[..., Any], raw: str | None, errors: list[Diagnostic], limit: float | None
) -> Generator[AwaitAll, Any, tuple[Any, Diagnostic | None]]:
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


def _more_tokens(params: dict[str, Any], usage: Usage, policy: HealPolicy) -> dict[str, Any]:
    fmt, current = wire.token_limit(params)  # the request's wire format names its limit
    if fmt is None or fmt.with_token_limit is None:
        return params
    if not isinstance(current, int):
        # without a limit we know, only a reported count is a safe base (an estimate may be low)
        current = None if usage.estimated else usage.completion_tokens or None
    if not current:
        return params
    grown = math.ceil(current * policy.max_tokens_growth)
    if policy.max_tokens_cap is not None:
        grown = min(grown, policy.max_tokens_cap)
    return fmt.with_token_limit(params, max(grown, current))


def _deadline(policy: HealPolicy, detail: str | None = None) -> Diagnostic:
    return Diagnostic(
        ROOT,
        detail or f"deadline_s={policy.deadline_s}",
        f"the run must finish within {policy.deadline_s} s (HealPolicy.deadline_s)",
        "Raise HealPolicy.deadline_s, or ask for a shorter answer; the model was too slow.",
        Source.BUDGET,
    )


def _budget(projected: int) -> Diagnostic:
    return Diagnostic(
        ROOT,
        projected,
        "the next call would exceed the token budget",
        "Raise HealPolicy.token_budget, or shorten the prompt.",
        Source.BUDGET,
    )


def _projected_cost(spent: Usage, sent: Sequence[Mapping[str, Any]]) -> float | None:
    """What the run will have cost once the next request's input is paid (its prompt estimated
    as characters / 4, priced on the model of the last call); None when a price is unknown."""
    so_far = spent.cost
    model = spent.model or (spent.parts[-1].model if spent.parts else None)
    if so_far is None or model is None:
        return None
    nxt = Usage(_estimate(sent), 0, requests=1, model=model).cost
    return None if nxt is None else so_far + nxt


def _cost_budget(projected: float, budget: float) -> Diagnostic:
    return Diagnostic(
        ROOT,
        round(projected, 6),
        f"the next call would pass the cost budget of {budget} USD",
        "Raise HealPolicy.cost_budget, or shorten the prompt.",
        Source.BUDGET,
    )


def _estimate(messages: Sequence[Mapping[str, Any]]) -> int:
    return sum(len(str(m.get("content") or "")) for m in messages) // 4 + 4 * len(messages)


def _estimated_usage(messages: Sequence[Mapping[str, Any]], content: str | None) -> Usage:
    return Usage(_estimate(messages), len(content or "") // 4, estimated=True, requests=1)


def _as_data(target: Target[Any], evaluation: Evaluation) -> Any:
    """The healed value as JSON data, fields under their wire names: what `changed_fields` is
    computed over (the fields the answer set, whatever else the first answer held)."""
    try:
        return target.adapter.dump_python(
            evaluation.instance, mode="json", by_alias=True, exclude_unset=True
        )
    except Exception:  # a serializer that fails: the data L1 read is the next best view
        return evaluation.data


def _diff(before: Any, after: Any, loc: tuple[str | int, ...]) -> list[str]:
    """The paths of `after` (the healed value) whose value `before` does not have: a key only
    `before` holds is not one of the target's fields, and is not a change."""
    if isinstance(before, dict) and isinstance(after, dict):
        out: list[str] = []
        for key in after:
            if key not in before:
                out.append(format_path((*loc, key)))
            else:
                out.extend(_diff(before[key], after[key], (*loc, key)))
        return out
    if isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        out = []
        for index, (old, new) in enumerate(zip(before, after, strict=True)):
            out.extend(_diff(old, new, (*loc, index)))
        return out
    if before == after and type(before) is type(after):
        return []
    return [format_path(loc)]


def _failure_diagnostic(failure: CallFailure, message: str) -> Diagnostic:
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
