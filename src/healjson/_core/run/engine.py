"""The sans-I/O attempt loop: yields the next request, consumes the reply, returns an outcome.

One generator holds every decision common to every run — the budget, the cost, the deadline,
the escalation to a stronger model, the call itself, the attempt record, the provider's stops
(a content filter, a refusal), degrade or heal — and knows nothing about HTTP, event loops or
provider objects: it yields `effects` and receives its own types back. The drivers (`drive`)
perform the effects.

What the answer is — one JSON value of a target (`answers.JsonAnswers`), or the calls of the
caller's own tools (`tools.CallAnswers`) — is an *answer kind*: how a reply is judged (an
`Evaluation`), what the next repair asks (a `RepairPrompt`, rendered once for the request, the
record, the events and the trace), what a healed run's value is and what a degraded one keeps.
A spec (`answers.HealSpec`, `tools.ToolSpec`) makes its kind's per-run state (`answers()`).
One place builds `Healed` (`new_healed`), one builds `Degraded` (`_degrade`).
"""

from __future__ import annotations

import itertools
import os
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from healjson._core.diagnostic import Diagnostic, Source
from healjson._core.flags import Flag
from healjson._core.frozen import builder
from healjson._core.judge.check import Evaluation
from healjson._core.judge.contracts import ContractContext
from healjson._core.judge.enforcement import Enforcement
from healjson._core.judge.verdict import Verdict
from healjson._core.observe import events as _events
from healjson._core.outcome.attempt import Attempt, Reason, new_attempt
from healjson._core.outcome.outcome import Degraded, Healed, Outcome
from healjson._core.outcome.seal import seal
from healjson._core.redact import redact_params, redact_text, run_secrets
from healjson._core.repair.prompt import RepairPrompt, Strategy, history_line
from healjson._core.sentinels import NOTHING
from healjson._core.wire.effects import (
    AwaitAll,
    CacheGet,
    CachePut,
    CallFailure,
    CallResult,
    DeadlineExceeded,
    ModelCall,
    new_call_result,
    new_model_call,
)
from healjson._core.wire.reply import Reply, Usage

from .budget import deadline_passed, estimated_usage, more_tokens, over_budget
from .policy import HealPolicy, time_left
from .stops import (
    aborted_evaluation,
    call_fallback,
    failure_diagnostic,
    provider_stop,
)

__all__ = [
    "AnswerSpec",
    "Answers",
    "Flow",
    "RunCache",
    "RunState",
    "heal_flow",
    "new_healed",
    "new_run_id",
]

_NO_USAGE = Usage()
# a run id: this process's random prefix and a counter (unique across processes and threads,
# and cheap: no system call per run)
_RUN_PREFIX = os.urandom(6).hex()
_RUN_COUNTER = itertools.count(1)


new_run_id: Callable[[], str] = map(f"{_RUN_PREFIX}-%06d".__mod__, _RUN_COUNTER).__next__
"""A fresh run id, e.g. `3f9a1c2b7d4e-000042` (one C-level call: no Python frame per run; `%`
formats a third cheaper than `str.format`)."""

Flow = Generator[ModelCall | AwaitAll | CacheGet | CachePut, Any, Outcome[Any]]


class RunCache(Protocol):
    """A run's use of a response cache (`cache.CachedRun`): looked up before the first call,
    written after a healed run."""

    def lookup(
        self, ctx: ContractContext, run_id: str, events: _events.RunEvents | None
    ) -> Generator[Any, Any, Healed[Any] | None]:
        """The run's outcome from a stored answer judged again; None: call the model."""
        ...

    def store(self, outcome: Healed[Any], accepted: Any) -> CachePut | None:
        """The effect that stores a healed run's answer (None: nothing to store); `accepted`:
        the JSON data of the answer the run accepted (`RunState.accepted`)."""
        ...


class RunState:
    """The mutable bookkeeping of one run, common to every answer kind (its kind keeps its
    own): the attempts so far, the usage, the history lines, the clock and the events."""

    __slots__ = (
        "accepted",
        "attempts",
        "context",
        "events",
        "history",
        "original",
        "partial",
        "policy",
        "run_id",
        "started",
        "usage",
    )

    def __init__(
        self,
        policy: HealPolicy,
        original: tuple[Mapping[str, Any], ...],
        context: ContractContext,
        *,
        started: float,
        run_id: str,
        events: _events.RunEvents | None,
    ) -> None:
        self.policy = policy
        self.original = original
        self.context = context
        self.attempts: list[Attempt] = []
        self.usage: Usage = _NO_USAGE
        self.history: list[str] = []
        self.partial: Any = None  # what a stream that failed part-way had read
        self.accepted: Any = NOTHING  # the JSON data of the answer accepted (its kind's value)
        self.started = started
        self.run_id = run_id
        self.events = events

    def time_left(self) -> float | None:
        """Seconds before the policy's deadline (None: no deadline)."""
        return time_left(self.policy, self.started)

    def contract_limit(self) -> float | None:
        """How long user code (async contracts, fallback factories) may run now."""
        limits = [self.policy.contract_timeout_s, self.time_left()]
        known = [limit for limit in limits if limit is not None]
        return max(min(known), 0.0) if known else None


class Answers(Protocol):
    """One answer kind's judge and repairer for one run (see the module docstring)."""

    def raw(self, reply: Reply) -> str | None:
        """What an attempt records as the model's output."""
        ...

    def judge(
        self, reply: Reply, number: int, params: Mapping[str, Any]
    ) -> Generator[AwaitAll, Any, Evaluation]:
        """L1 + L2 on one reply (awaiting async contracts through the driver)."""
        ...

    def ends(self, evaluation: Evaluation) -> Reason | None:
        """A reason this failure ends the run with at once, beyond the loop's own (a contract
        error, a `stop` rule, a cut under `on_truncation="degrade"`); None: repair it."""
        ...

    def prompt(self, evaluation: Evaluation, number: int) -> RepairPrompt:
        """The repair request after attempt `number` failed as `evaluation` says."""
        ...

    def value(self, evaluation: Evaluation) -> tuple[Any, str, tuple[Flag, ...], tuple[str, ...]]:
        """A healed run's value, raw text, flags and changed fields."""
        ...

    def partial(self) -> Any:
        """What a degraded run keeps as its best-effort data (`RunState.partial` holds what a
        stream that failed part-way had read)."""
        ...

    def final_reason(self, diagnostics: Sequence[Diagnostic]) -> Reason:
        """Why a run that used up its attempts degrades, from its last attempt's diagnostics."""
        ...


class AnswerSpec(Protocol):
    """The constant part of a run of one answer kind (what a `Healer`, or a request's tools,
    was configured with)."""

    @property
    def policy(self) -> HealPolicy: ...
    @property
    def fallback(self) -> Any: ...
    @property
    def target_name(self) -> str: ...
    @property
    def contract_names(self) -> tuple[str, ...]: ...
    def first(  # noqa: PLR0917  (called by position: every run's hot path)
        self,
        reply: Reply,
        original: tuple[Mapping[str, Any], ...],
        params: Mapping[str, Any],
        elapsed_s: float,
        run_id: str,
        context: ContractContext,
        /,
    ) -> Healed[Any] | None:
        """The run's `Healed` at once when its first reply needs no L1 and nothing else to
        check (its attempt recorded as the loop records one; no event sent), before any of the
        loop's state is built; None: the loop judges the reply."""
        ...

    def answers(self, run: RunState, enforcement: Enforcement | None) -> Answers:
        """This kind's judge and repairer for the run `run`."""
        ...


def heal_flow(
    spec: AnswerSpec,
    messages: tuple[Mapping[str, Any], ...],
    params: Mapping[str, Any],
    ctx: ContractContext,
    *,
    given: Reply | None = None,
    started: float | None = None,
    observed: bool = True,
    enforcement: Enforcement | None = None,
    cache: RunCache | None = None,
    made: CallResult | None = None,
    run_id: str | None = None,
) -> Flow:
    """The whole L1-L4 loop for one request, as a generator the drivers run. `given`: a reply
    already in hand, judged as the first attempt instead of calling the model (`validate`);
    `started`: when the run began (a `time.monotonic()`), for the deadline; `observed=False`:
    no events, spans or metrics (a run replayed from stored results); `enforcement`: the schema
    the adapter's request asked the endpoint to enforce (its first answer is judged against it:
    `healjson._core.judge.enforcement`); `cache`: the run's response cache (`cache.py`: a hit
    judged again is the outcome with no call; a healed run's answer is stored); `made`: the result
    of the run's first call, made by a driver's quick start (`Quick`), whose answer the kind's
    `first` did not accept (the loop judges it as its first attempt); `run_id`: the run's id,
    given by that start. The first reply goes to the kind's `first` before any of the loop's
    state is built: a clean first answer is the run's `Healed` at once. However
    the flow ends (an outcome, a driver that raised, a stream the caller abandoned), the run's
    telemetry context is released."""
    started = time.monotonic() if started is None else started
    run_id = new_run_id() if run_id is None else run_id
    # None: nothing listens (or a replayed run, whose calls were observed when made)
    events = _events.for_run(run_id, spec) if observed else None
    try:
        policy = spec.policy
        healed: Healed[Any] | None = None
        if made is not None:
            result = made
        elif given is not None:
            result = new_call_result(given, None, 0.0)
        else:
            if cache is not None:
                healed = yield from cache.lookup(ctx, run_id, events)
                if healed is not None:  # served from the cache, judged again: no call
                    if events is not None:
                        events.attempt(healed.attempts[0])
                        events.healed(healed)
                    return healed
            spent = over_budget(policy, Usage(), messages)  # a first call past the budget
            if spent is not None:
                run = RunState(policy, messages, ctx, started=started, run_id=run_id, events=events)
                answers = spec.answers(run, enforcement)
                reason = Reason.BUDGET_EXCEEDED
                return (yield from _degrade(spec, run, answers, reason, [spent]))
            if events is not None:
                events.call_started(1, params)
            left = time_left(policy, started)
            result = yield new_model_call(1, messages, params, left, policy.provider_errors)
        if made is None and result.reply is not None and not result.aborted:
            healed = spec.first(result.reply, messages, params, result.elapsed_s, run_id, ctx)
            if healed is not None and events is not None:
                events.attempt(healed.attempts[0])
                events.healed(healed)
        outcome: Outcome[Any] | None = healed
        accepted: Any = NOTHING  # a first reply accepted at once is stored as it came
        if outcome is None:
            run = RunState(policy, messages, ctx, started=started, run_id=run_id, events=events)
            answers = spec.answers(run, enforcement)
            outcome = yield from _loop(spec, run, answers, result, params)
            accepted = run.accepted
        if cache is not None and isinstance(outcome, Healed):
            put = cache.store(outcome, accepted)
            if put is not None:
                yield put
        return outcome
    finally:
        if events is not None:
            events.release()


def _loop(
    spec: AnswerSpec,
    run: RunState,
    answers: Answers,
    first: CallResult,
    params: Mapping[str, Any],
) -> Flow:
    policy = run.policy
    call_params = dict(params)
    prompt: RepairPrompt | None = None
    for number in range(1, policy.max_attempts + 1):
        # `original` holds the run's own copies (normalise_messages): the first request and its
        # attempt record may share them; the driver hands the call fresh copies either way
        sent = tuple(prompt.messages(run.original)) if prompt else run.original
        this_params = dict(call_params)
        if number == policy.max_attempts and number > 1 and policy.escalate_model:
            this_params["model"] = policy.escalate_model
        if number == 1:
            result = first
        else:
            stop = _may_not_call(run, sent)
            if stop is not None:
                return (yield from _degrade(spec, run, answers, stop[0], [stop[1]]))
            if run.events is not None:
                run.events.call_started(number, this_params)
            asked = prompt.items if prompt is not None else ()
            left = run.time_left()
            result = yield new_model_call(
                number,
                sent,
                this_params,
                left,
                policy.provider_errors,
                items=asked,
                shared_prefix=len(run.original),  # a repair opens with the original messages
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
            return (yield from _call_failed(spec, run, answers, base, failure))
        raw = answers.raw(reply)
        usage = reply.usage
        if usage is None or usage.estimated:  # none reported, or a count that was no count
            usage = estimated_usage(sent, _chars(reply), usage, reply.model)
        run.usage = run.usage + usage
        base.update(
            raw_text=raw,
            tool_calls=reply.tool_calls,
            finish_reason=reply.finish_reason,
            usage=usage,
            model=reply.model or this_params.get("model"),
        )
        halt = provider_stop(reply, policy)
        if halt is not None:
            _record(run, new_attempt(**base, diagnostics=(halt[1],), reasoning=reply.reasoning))
            return (yield from _degrade(spec, run, answers, halt[0], [halt[1]], raw=raw))
        if result.aborted:
            evaluation = aborted_evaluation(result, raw)
        else:
            evaluation = yield from answers.judge(reply, number, this_params)
            run.usage = _contracts_spent(run.usage, run.context)
        reasoning = _reasoning(reply.reasoning, evaluation.parse.reasoning)
        flags, found = evaluation.parse.flags, evaluation.diagnostics
        _record(
            run,
            new_attempt(
                **base, flags=flags, diagnostics=found, ok=evaluation.ok, reasoning=reasoning
            ),
        )
        if evaluation.ok:
            return _healed(spec, run, answers, evaluation)
        ends = _ends(evaluation, policy) or answers.ends(evaluation)
        if ends is not None:
            return (yield from _degrade(spec, run, answers, ends, found))
        call_params, prompt = _repair(
            run, answers, evaluation, number, call_params=call_params, usage=usage
        )
    last = run.attempts[-1]
    reason = answers.final_reason(last.diagnostics)
    return (yield from _degrade(spec, run, answers, reason, last.diagnostics))


def _may_not_call(
    run: RunState, sent: Sequence[Mapping[str, Any]]
) -> tuple[Reason, Diagnostic] | None:
    """Why the next call (`sent`) may not be made: the token or cost budget it would pass (its
    answer projected as the last one's size), or the deadline already passed; None when it
    may."""
    answer = run.attempts[-1].usage.completion_tokens if run.attempts else 0
    spent = over_budget(run.policy, run.usage, sent, answer)
    if spent is not None:
        return Reason.BUDGET_EXCEEDED, spent
    left = run.time_left()
    if left is not None and left <= 0:
        return Reason.TIMEOUT, _deadline(run)
    return None


def _deadline(run: RunState, detail: str | None = None, call_s: float = 0.0) -> Diagnostic:
    """The deadline's diagnostic with the time the model calls took (`call_s`: a failed one's)."""
    in_calls = call_s + sum(attempt.latency_s or 0.0 for attempt in run.attempts)
    elapsed = time.monotonic() - run.started
    return deadline_passed(run.policy, detail, elapsed_s=elapsed, in_calls_s=in_calls)


def _repair(
    run: RunState,
    answers: Answers,
    evaluation: Evaluation,
    number: int,
    *,
    call_params: dict[str, Any],
    usage: Usage,
) -> tuple[dict[str, Any], RepairPrompt]:
    """The next request after failed attempt `number`: its parameters (a larger token limit
    after a cut, as the policy says) and its repair prompt, announced; the history grows."""
    policy = run.policy
    truncated = any(d.source is Source.TRUNCATION for d in evaluation.diagnostics)
    if truncated and policy.on_truncation in ("raise_max_tokens", "both"):
        call_params = more_tokens(call_params, usage, policy)
    prompt = answers.prompt(evaluation, number)
    if number < policy.max_attempts and run.events is not None:
        run.events.repair_request(number + 1, prompt)
    if policy.history == "compact":
        run.history.append(history_line(number, evaluation.verdict, evaluation.diagnostics))
    return call_params, prompt


def _ends(evaluation: Evaluation, policy: HealPolicy) -> Reason | None:
    """A failure no repair may follow: a rule declared `on_fail="stop"`, a contract that raised
    (a bug in code: another model call cannot fix it), or a cut answer under
    `on_truncation="degrade"`."""
    if evaluation.stopped or evaluation.verdict is Verdict.CONTRACT_ERROR:
        return Reason.CONTRACT_ERROR
    if evaluation.verdict is Verdict.TRUNCATED and policy.on_truncation == "degrade":
        return Reason.TOKEN_TRUNCATED
    return None


def _chars(reply: Reply) -> str:
    """The text an answer without reported usage is estimated by: its content and calls."""
    if not reply.tool_calls:
        return reply.content or ""
    return (reply.content or "") + "".join(call.arguments for call in reply.tool_calls)


def _record(run: RunState, attempt: Attempt) -> None:
    run.attempts.append(attempt)
    if run.events is not None:
        run.events.attempt(attempt)


def _call_failed(
    spec: AnswerSpec, run: RunState, answers: Answers, base: dict[str, Any], failure: CallFailure
) -> Generator[AwaitAll, Any, Outcome[Any]]:
    reason = Reason(failure.kind)
    message = redact_text(failure.message)  # an error body may echo a credential
    diagnostic = failure_diagnostic(failure, message)
    if failure.deadline:
        diagnostic = _deadline(run, message, base.get("latency_s") or 0.0)
    if failure.raw_text:  # a stream that failed part-way: what had arrived is kept
        base = {**base, "raw_text": redact_text(failure.raw_text)}
        if failure.partial is not None:
            run.partial = failure.partial
    if failure.tool_calls:  # its tool calls too (the outcome's seal removes known secrets)
        base = {**base, "tool_calls": failure.tool_calls}
    if failure.usage is not None:  # the call was made: what it spent counts
        run.usage = run.usage + failure.usage
        base = {**base, "usage": failure.usage}
    _record(run, new_attempt(**base, diagnostics=(diagnostic,), error=message))
    return (yield from _degrade(spec, run, answers, reason, [diagnostic]))


def _contracts_spent(usage: Usage, ctx: ContractContext) -> Usage:
    """The run's usage with what its contracts' own model calls spent (a judge's) added."""
    while ctx.spent:
        spent = ctx.spent.pop(0)
        if isinstance(spent, Usage):
            usage = usage + spent
    return usage


def _reasoning(*parts: str | None) -> str | None:
    return "\n\n".join(part for part in parts if part) or None


def _healed(
    spec: AnswerSpec, run: RunState, answers: Answers, evaluation: Evaluation
) -> Outcome[Any]:
    """A loop's `Healed` (built by `new_healed`), announced."""
    value, raw, flags, changed = answers.value(evaluation)
    attempts = tuple(run.attempts)
    outcome = new_healed(spec, value, raw, attempts, flags, run.usage, changed, run.run_id)
    if evaluation.warnings or evaluation.dropped or evaluation.fixed:
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


def new_healed(  # noqa: PLR0917  (called by position: every run's hot path)
    spec: AnswerSpec,
    value: Any,
    raw: str,
    attempts: tuple[Attempt, ...],
    flags: tuple[Flag, ...],
    usage: Usage,
    changed: tuple[str, ...],
    run_id: str,
    /,
) -> Healed[Any]:
    """The one place a `Healed` is built (by position, in `Healed`'s field order: a keyword
    call's binding costs as much as the record itself)."""
    policy = spec.policy
    return _build_healed(
        value,
        raw,
        attempts,
        usage,
        flags,
        changed,
        policy.max_attempts,
        run_id,
        spec.target_name,
        spec.contract_names,
    )


def _degrade(
    spec: AnswerSpec,
    run: RunState,
    answers: Answers,
    reason: Reason,
    errors: Sequence[Diagnostic],
    *,
    raw: str | None = None,
) -> Generator[AwaitAll, Any, Outcome[Any]]:
    if raw is None and run.attempts:
        raw = run.attempts[-1].raw_text
    errors = list(errors)
    fallback = spec.fallback
    if callable(fallback) and not isinstance(fallback, type):
        # what is left of the deadline (and contract_timeout_s): an async factory is cancelled
        # past it (a sync one cannot be interrupted), so deadline_s bounds the whole run
        limit = run.contract_limit()
        fallback, failure = yield from call_fallback(fallback, raw, errors, limit)
        if failure is not None:
            errors.append(_fallback_late(run, limit, failure))
    outcome: Degraded[Any] = Degraded(
        reason=reason,
        raw_text=raw,
        errors=tuple(errors),
        fallback=fallback,
        partial=answers.partial(),
        attempts=tuple(run.attempts),
        usage=run.usage,
        max_attempts=run.policy.max_attempts,
        run_id=run.run_id,
        target=spec.target_name,
        contracts=spec.contract_names,
    )
    outcome = seal(outcome, run_secrets())
    if run.events is not None:
        run.events.degraded(outcome)
    return outcome


def _fallback_late(run: RunState, limit: float | None, failure: Diagnostic) -> Diagnostic:
    """A fallback factory's failure, said as a time limit when the driver cancelled it there."""
    if limit is None or not str(failure.value).startswith(f"{DeadlineExceeded.__name__}:"):
        return failure
    policy = run.policy
    deadline = policy.contract_timeout_s is None or limit < policy.contract_timeout_s
    which = "what was left of HealPolicy.deadline_s" if deadline else "contract_timeout_s"
    return replace(
        failure,
        value=f"{limit:.3g} s",
        constraint=f"the fallback factory must return within {limit:.3g} s ({which}); it was "
        "cancelled",
        prescription="Make the fallback factory faster, or raise HealPolicy.deadline_s / "
        "contract_timeout_s; the degradation carries no fallback value.",
    )
