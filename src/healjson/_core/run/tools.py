"""The caller's own tool calls healed: each call checked against its tool, broken ones asked again.

A request that declares tools (the caller's, not healjson's) may be answered with text, with
calls, or with both. `tools_flow` judges every call of a reply on its own, against the tool it
names: L1 on its arguments text (with the tool's target: the local repairs, flagged per call)
and L2 (the target's schema, then the tool's contracts). A call that passes is kept as it is. A
call to a tool the request did not declare, arguments no local repair can save, a contract
breach or a cut call make one repair request that asks again for *the broken calls only*: the
model's turn is sent back with every call, each call answered by a tool message (a kept one
"accepted, not yet run", a broken one its diagnostics), then a user message naming the calls
to make again. The calls of the answer take the broken ones' places (the kept ones keep their
place and id); a repair answer with any other number of calls is judged as a new set. Each
repair request is the original messages plus that one exchange: it does not grow with the
rounds.

A request that forces a call (`ToolSpec.required`) answered without one is asked once more
(the budget allowing), then degrades with `tool_call_missing`; a reply with no call where
calls were optional is a valid answer with no calls. A refusal degrades with `refusal`
(`HealPolicy(on_refusal="retry")`: the request is sent again as it was); a content filter with
`content_filter`. When the attempts are spent, `Degraded` keeps every call as the model sent it
(`partial`). The policy's budgets (attempts, tokens, cost, deadline), `on_truncation` and
`escalate_model` apply as to any run.

The messages here are the core's neutral chat shape (an assistant turn's `tool_calls`, `tool`
messages answering them by `tool_call_id`); each wire format's request builder turns them into
its own.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from healjson._core.diagnostic import ROOT, Diagnostic, Source
from healjson._core.flags import Flag
from healjson._core.judge.check import Evaluation, evaluate
from healjson._core.judge.contracts import Contract, ContractContext
from healjson._core.observe import events as _events
from healjson._core.outcome.calls import HealedCall, ToolCalls
from healjson._core.outcome.outcome import Attempt, Degraded, Healed, Outcome, Reason
from healjson._core.outcome.seal import seal
from healjson._core.redact import redact_params, redact_text, run_secrets
from healjson._core.repair.prompt import Strategy, quote_answer, render_diagnostic
from healjson._core.target.target import Target
from healjson._core.wire.effects import AwaitAll, CallResult, ModelCall
from healjson._core.wire.reply import Reply, ToolCall, Usage

from .engine import (
    _budget,
    _contracts_spent,
    _cost_budget,
    _deadline,
    _estimate,
    _estimated_usage,
    _more_tokens,
    _projected_cost,
    new_run_id,
)
from .policy import HealPolicy, time_left

__all__ = ["Tool", "ToolSpec", "tools_flow"]

TARGET: Final = "ToolCalls"
"""The target name a tool-call outcome carries."""
ACCEPTED: Final = "Accepted: this call passed every check; it has not been run yet."
_MAX_SHOWN = 10  # diagnostics rendered in one call's tool message
_NO_USAGE = Usage()


@dataclass(frozen=True, slots=True)
class Tool:
    """A declared tool as the healer checks its calls: its name, the target its arguments
    must validate against, and its contracts."""

    name: str
    target: Target[Any]
    contracts: tuple[Contract[Any], ...] = ()


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """The tools of one request and how to heal their calls. `required`: False when calls are
    optional, True when the request forces some call, a tool's name when it forces that one."""

    tools: Mapping[str, Tool]
    policy: HealPolicy = field(default_factory=HealPolicy)
    required: bool | str = False

    @property
    def contract_names(self) -> tuple[str, ...]:
        """Every tool's contracts' names, tool by tool."""
        return tuple(rule.name for tool in self.tools.values() for rule in tool.contracts)


@dataclass(frozen=True, slots=True)
class _Slot:
    """One call of the answer being assembled and its verdict."""

    call: ToolCall  # its id set
    evaluation: Evaluation | None  # None: no tool to judge it by
    diagnostics: tuple[Diagnostic, ...] = ()

    @property
    def ok(self) -> bool:
        return self.evaluation is not None and self.evaluation.ok

    @property
    def flags(self) -> tuple[Flag, ...]:
        return () if self.evaluation is None else self.evaluation.parse.flags


@dataclass(frozen=True, slots=True)
class _Named:
    name: str


@dataclass(frozen=True, slots=True)
class _Described:
    """What the run's events and spans read of what is being healed."""

    target: _Named
    contract_names: tuple[str, ...]


class _Run:
    __slots__ = (
        "attempts",
        "changed",
        "events",
        "run_id",
        "slots",
        "spec",
        "started",
        "text",
        "usage",
    )

    def __init__(self, spec: ToolSpec, started: float | None) -> None:
        self.spec = spec
        self.started = time.monotonic() if started is None else started
        self.run_id = new_run_id()
        described = _Described(_Named(TARGET), spec.contract_names)
        self.events = _events.for_run(self.run_id, described)  # None: nothing listens
        self.attempts: list[Attempt] = []
        self.usage = _NO_USAGE
        self.slots: list[_Slot] = []
        self.text: str | None = None
        self.changed: set[int] = set()  # slots a repair replaced

    def time_left(self) -> float | None:
        return time_left(self.spec.policy, self.started)


Flow = Generator[ModelCall | AwaitAll, Any, Outcome[ToolCalls]]


def tools_flow(
    spec: ToolSpec,
    messages: tuple[Mapping[str, Any], ...],
    params: Mapping[str, Any],
    ctx: ContractContext,
    *,
    started: float | None = None,
) -> Flow:
    """The healing loop of a request with the caller's tools (see the module's docstring), as
    a generator the drivers (`drive.drive_sync` / `drive_async`) run. However it ends, the
    run's telemetry context is released."""
    run = _Run(spec, started)
    try:
        return (yield from _loop(run, messages, params, ctx))
    finally:
        if run.events is not None:
            run.events.release()


def _loop(
    run: _Run,
    messages: tuple[Mapping[str, Any], ...],
    params: Mapping[str, Any],
    ctx: ContractContext,
) -> Flow:
    spec = run.spec
    policy = spec.policy
    call_params = dict(params)
    sent: tuple[Mapping[str, Any], ...] = messages
    pending: tuple[int, ...] = ()  # the slots the last request asked for again
    missing = False  # the last reply made no call where one was required
    for number in range(1, policy.max_attempts + 1):
        this_params = dict(call_params)
        if number == policy.max_attempts and number > 1 and policy.escalate_model:
            this_params["model"] = policy.escalate_model
        if number > 1:
            if policy.token_budget is not None:
                projected = run.usage.total_tokens + _estimate(sent)
                if projected > policy.token_budget:
                    return _degrade(run, Reason.BUDGET_EXCEEDED, [_budget(projected)])
            if policy.cost_budget is not None:
                cost = _projected_cost(run.usage, sent)
                if cost is not None and cost > policy.cost_budget:
                    diagnostic = _cost_budget(cost, policy.cost_budget)
                    return _degrade(run, Reason.BUDGET_EXCEEDED, [diagnostic])
            left = run.time_left()
            if left is not None and left <= 0:
                return _degrade(run, Reason.TIMEOUT, [_deadline(policy)])
        left = run.time_left()
        strategy = Strategy.INITIAL if number == 1 else _strategy(run, pending)
        if run.events is not None:
            run.events.call_started(number, this_params)
        result: CallResult = yield ModelCall(
            number, sent, this_params, left, policy.provider_errors
        )
        base: dict[str, Any] = {
            "number": number,
            "strategy": strategy,
            "messages": sent,
            "params": redact_params(this_params),
            "latency_s": result.elapsed_s,
        }
        reply = result.reply
        if reply is None:
            return _failed(run, base, result)
        raw = reply.content if reply.content or not reply.tool_calls else None
        usage = reply.usage or _estimated_usage(sent, _reply_chars(reply))
        run.usage = run.usage + usage
        base.update(
            raw_text=raw,
            tool_calls=reply.tool_calls,
            finish_reason=reply.finish_reason,
            usage=usage,
            model=reply.model or this_params.get("model"),
            reasoning=reply.reasoning,
        )
        stop = _provider_stop(reply)
        if stop is not None:
            reason, diagnostic = stop
            _record(run, Attempt(**base, diagnostics=(diagnostic,)))
            if reason is Reason.REFUSAL and policy.on_refusal == "retry":
                sent = messages  # asked again as it was: a refusal is no answer to repair
                continue
            return _degrade(run, reason, [diagnostic])
        judged = yield from _judge(run, reply, pending, ctx)
        run.usage = _contracts_spent(run.usage, ctx)
        missing = not run.slots and spec.required is not False
        found = _found(run) if not missing else (_missing(spec, reply.content),)
        flags = tuple(dict.fromkeys(f for i in judged for f in run.slots[i].flags))
        _record(run, Attempt(**base, flags=flags, diagnostics=found, ok=not found))
        if not found:
            return _healed(run)
        if any(d.source is Source.CONTRACT_ERROR for d in found) or _stopped(run):
            return _degrade(run, Reason.CONTRACT_ERROR, found)
        truncated = any(d.source is Source.TRUNCATION for d in found)
        if truncated and policy.on_truncation == "degrade":
            return _degrade(run, Reason.TOKEN_TRUNCATED, found)
        if truncated and policy.on_truncation in ("raise_max_tokens", "both"):
            call_params = _more_tokens(call_params, usage, policy)
        pending = () if missing else tuple(i for i, slot in enumerate(run.slots) if not slot.ok)
        sent = _repair_messages(messages, run, pending, missing, spec)
    last = run.attempts[-1]
    reason = _final_reason(last.diagnostics, missing, policy)
    return _degrade(run, reason, last.diagnostics)


def _judge(
    run: _Run, reply: Reply, pending: tuple[int, ...], ctx: ContractContext
) -> Generator[AwaitAll, Any, tuple[int, ...]]:
    """Take the reply's calls into the answer and judge the new ones; the slots judged."""
    calls = reply.tool_calls
    if pending and calls and len(calls) == len(pending):  # the broken calls, made again
        kept = {run.slots[i].call.id for i in range(len(run.slots)) if i not in pending}
        targets = pending
        fresh = [
            _with_id(call, run.slots[at].call.id or f"call_{at}", kept)
            for call, at in zip(calls, pending, strict=True)
        ]
        run.changed.update(pending)
    elif pending and not calls:  # a repair answered without any call: the broken ones stay
        return ()
    else:  # a first answer, or a repair that answered with a new set of calls
        if run.attempts:
            run.changed.update(range(max(len(calls), len(run.slots))))
        if not run.attempts or reply.content is not None:
            run.text = reply.content
        run.slots = [_Slot(call, None) for call in calls]
        targets = tuple(range(len(calls)))
        fresh = [_with_id(call, f"call_{i}", set()) for i, call in enumerate(calls)]
    ids = {run.slots[i].call.id for i in range(len(run.slots)) if i not in targets}
    last = len(calls) - 1
    for position, (at, made) in enumerate(zip(targets, fresh, strict=True)):
        # two calls of one answer with one id: the later one renamed
        one = replace(made, id=f"{made.id}_{at}") if made.id in ids else made
        ids.add(one.id)
        # only the last call of a cut reply can have been cut
        finish = reply.finish_reason if position == last else None
        run.slots[at] = yield from _judge_call(run.spec, one, finish, ctx, run)
    return targets


def _judge_call(
    spec: ToolSpec, call: ToolCall, finish: str | None, ctx: ContractContext, run: _Run
) -> Generator[AwaitAll, Any, _Slot]:
    tool = spec.tools.get(call.name)
    if tool is None:
        return _Slot(call, None, (_unknown(spec, call),))
    forced = spec.required
    if isinstance(forced, str) and not isinstance(forced, bool) and call.name != forced:
        return _Slot(call, None, (_not_forced(forced, call),))
    limit = spec.policy.contract_timeout_s
    left = run.time_left()
    if left is not None:
        limit = max(min(left, limit) if limit is not None else left, 0.0)
    # no arguments at all: the no-argument object (some servers send "" for `{}`)
    arguments = call.arguments if call.arguments.strip() else "{}"
    evaluation = yield from evaluate(
        tool.target,
        tool.contracts,
        Reply(None, finish, tool_calls=(ToolCall(tool.target.name, arguments),)),
        ctx,
        on_ambiguity=spec.policy.on_ambiguity,
        contract_timeout_s=limit,
    )
    return _Slot(call, evaluation, evaluation.diagnostics)


def _with_id(call: ToolCall, default: str, taken: set[str | None]) -> ToolCall:
    """`call` with an id: its own unless it has none or a kept call has it, else `default`."""
    if call.id and call.id not in taken:
        return call
    return replace(call, id=default)


def _found(run: _Run) -> tuple[Diagnostic, ...]:
    """The diagnostics of every broken call, their paths under `calls[i]`."""
    return tuple(
        _under(index, d)
        for index, slot in enumerate(run.slots)
        if not slot.ok
        for d in slot.diagnostics
    )


def _under(index: int, diagnostic: Diagnostic) -> Diagnostic:
    path = diagnostic.path
    if path == ROOT:
        inner = ""
    elif path.startswith("["):
        inner = path
    else:
        inner = f".{path}"
    return replace(diagnostic, path=f"calls[{index}]{inner}")


def _stopped(run: _Run) -> bool:
    return any(s.evaluation is not None and s.evaluation.stopped for s in run.slots if not s.ok)


def _strategy(run: _Run, pending: tuple[int, ...]) -> Strategy:
    if not pending:
        return Strategy.REPAIR
    return Strategy.ITEMS if len(pending) < len(run.slots) else Strategy.REPAIR


def _final_reason(found: Sequence[Diagnostic], missing: bool, policy: HealPolicy) -> Reason:
    if missing:
        return Reason.TOOL_CALL_MISSING
    if found and all(d.source is Source.REFUSAL for d in found):
        return Reason.REFUSAL
    if found and all(d.source is Source.TRUNCATION for d in found):
        return Reason.TOKEN_TRUNCATED
    return Reason.INVALID_OUTPUT if policy.max_attempts == 1 else Reason.MAX_RETRIES_EXCEEDED


# -- the repair request ------------------------------------------------------------------------


def _repair_messages(
    original: tuple[Mapping[str, Any], ...],
    run: _Run,
    pending: tuple[int, ...],
    missing: bool,
    spec: ToolSpec,
) -> tuple[dict[str, Any], ...]:
    """The original messages and one exchange: the answer as it stands (every call, the broken
    ones as last sent), a tool message per call, and what to do now."""
    out = [dict(message) for message in original]
    text = run.text
    if missing:
        out.append({"role": "assistant", "content": quote_answer(text or "")})
        out.append({"role": "user", "content": _ask_for_call(spec)})
        return tuple(out)
    calls = [
        {
            "id": slot.call.id,
            "type": "function",
            "function": {"name": slot.call.name, "arguments": quote_answer(slot.call.arguments)},
        }
        for slot in run.slots
    ]
    shown = quote_answer(text) if text else text
    out.append({"role": "assistant", "content": shown, "tool_calls": calls})
    for slot in run.slots:
        content = ACCEPTED if slot.ok else _call_problems(slot)
        out.append({"role": "tool", "tool_call_id": slot.call.id, "content": content})
    out.append({"role": "user", "content": _ask_again(run, pending)})
    return tuple(out)


def _call_problems(slot: _Slot) -> str:
    diagnostics = slot.diagnostics
    count = len(diagnostics)
    lines = [
        f"Rejected: this call of `{slot.call.name}` failed {count} check{'s' if count != 1 else ''}"
        " and was not run:"
    ]
    for number, diagnostic in enumerate(diagnostics[:_MAX_SHOWN], 1):
        lines.extend(render_diagnostic(number, diagnostic))
    if count > _MAX_SHOWN:
        lines.append(f"... and {count - _MAX_SHOWN} more problems of the same kinds.")
    return "\n".join(lines)


def _ask_again(run: _Run, pending: tuple[int, ...]) -> str:
    broken = [run.slots[i].call for i in pending]
    named = ", ".join(f"`{call.name}` ({call.id})" for call in broken)
    count, total = len(broken), len(run.slots)
    kept = total - count
    calls = "call" if count == 1 else "calls"
    lines = [
        f"Your tool call was rejected: {named}."
        if total == 1
        else f"{count} of your {total} tool calls {'was' if count == 1 else 'were'} rejected: "
        f"{named}."
    ]
    if kept:
        lines.append(
            "The other call was accepted as it is: do not make it again."
            if kept == 1
            else f"The other {kept} calls were accepted as they are: do not make them again."
        )
    lines.append(
        f"Make the rejected {calls} again{' in this order' if count > 1 else ''}, corrected as "
        "the tool messages above say, and no other call: each call complete (every argument, as "
        "a JSON object matching the tool's parameters), to a declared tool."
    )
    return "\n".join(lines)


def _ask_for_call(spec: ToolSpec) -> str:
    if isinstance(spec.required, str) and not isinstance(spec.required, bool):
        return (
            f"This request requires a call to the tool `{spec.required}`, and your answer made "
            "none. Call it now, with its arguments as a JSON object matching its parameters."
        )
    names = ", ".join(f"`{name}`" for name in spec.tools)
    return (
        "This request requires a tool call, and your answer made none. Call one of the "
        f"declared tools ({names}) now, with its arguments as a JSON object matching its "
        "parameters."
    )


# -- the diagnostics of calls no tool judges ---------------------------------------------------


def _unknown(spec: ToolSpec, call: ToolCall) -> Diagnostic:
    names = ", ".join(f"`{name}`" for name in spec.tools) or "(none)"
    return Diagnostic(
        ROOT,
        call.name,
        f"must call a declared tool; `{call.name}` is not one (declared: {names})",
        f"Call one of the declared tools instead: {names}.",
        Source.TOOL_CALL,
    )


def _not_forced(forced: str, call: ToolCall) -> Diagnostic:
    return Diagnostic(
        ROOT,
        call.name,
        f"must be a call to `{forced}` (the request forces that tool)",
        f"Call `{forced}` instead of `{call.name}`.",
        Source.TOOL_CALL,
    )


def _missing(spec: ToolSpec, text: str | None) -> Diagnostic:
    wanted = (
        f"a call to `{spec.required}`"
        if isinstance(spec.required, str) and not isinstance(spec.required, bool)
        else "a tool call"
    )
    return Diagnostic(
        ROOT,
        text or "",
        f"must be {wanted} (the request forces one); the answer made no call",
        f"Answer with {wanted}, not with text.",
        Source.TOOL_CALL,
        extra={"cause": "tool_call_missing"},
    )


def _provider_stop(reply: Reply) -> tuple[Reason, Diagnostic] | None:
    if reply.finish_reason == "content_filter":
        return Reason.CONTENT_FILTER, Diagnostic(
            ROOT,
            reply.content or "",
            "the provider's content filter stopped the answer",
            "Rephrase the request; the provider refused to complete it.",
            Source.CONTENT_FILTER,
        )
    if reply.refusal:
        return Reason.REFUSAL, Diagnostic(
            ROOT,
            reply.refusal,
            "the model refused to answer",
            "Answer the original request.",
            Source.REFUSAL,
        )
    return None


def _reply_chars(reply: Reply) -> str:
    return (reply.content or "") + "".join(call.arguments for call in reply.tool_calls)


# -- the outcomes ------------------------------------------------------------------------------


def _value(run: _Run) -> ToolCalls:
    calls = []
    for slot in run.slots:
        call = slot.call
        value = slot.evaluation.instance if slot.ok and slot.evaluation else call.arguments
        calls.append(
            HealedCall(call.id or "", call.name, value, call.arguments, slot.ok, slot.flags)
        )
    return ToolCalls(run.text, tuple(calls))


def _healed(run: _Run) -> Outcome[ToolCalls]:
    flags = tuple(dict.fromkeys(f for slot in run.slots for f in slot.flags))
    last = run.attempts[-1]
    outcome: Healed[ToolCalls] = Healed(
        value=_value(run),
        raw_text=last.raw_text or "",
        attempts=tuple(run.attempts),
        usage=run.usage,
        flags=flags,
        changed_fields=tuple(f"calls[{i}]" for i in sorted(run.changed) if i < len(run.slots)),
        max_attempts=run.spec.policy.max_attempts,
        run_id=run.run_id,
        target=TARGET,
        contracts=run.spec.contract_names,
    )
    outcome = seal(outcome, run_secrets())
    if run.events is not None:
        run.events.healed(outcome)
    return outcome


def _degrade(run: _Run, reason: Reason, errors: Sequence[Diagnostic]) -> Outcome[ToolCalls]:
    raw = run.attempts[-1].raw_text if run.attempts else None
    outcome: Degraded[ToolCalls] = Degraded(
        reason=reason,
        raw_text=raw,
        errors=tuple(errors),
        partial=_value(run) if run.slots or run.text is not None else None,
        attempts=tuple(run.attempts),
        usage=run.usage,
        max_attempts=run.spec.policy.max_attempts,
        run_id=run.run_id,
        target=TARGET,
        contracts=run.spec.contract_names,
    )
    outcome = seal(outcome, run_secrets())
    if run.events is not None:
        run.events.degraded(outcome)
    return outcome


def _failed(run: _Run, base: dict[str, Any], result: CallResult) -> Outcome[ToolCalls]:
    failure = result.failure
    kind = failure.kind if failure is not None else "api_error"
    message = redact_text(failure.message if failure is not None else "no reply")
    reason = Reason(kind)
    if failure is not None and failure.deadline:
        diagnostic = _deadline(run.spec.policy, message)
    else:
        diagnostic = Diagnostic(
            ROOT,
            message,
            f"the model call failed ({reason})",
            "Check the provider, network and credentials; healjson does not retry transport "
            "errors (the client's own retry policy does).",
            Source.API,
        )
    _record(run, Attempt(**base, diagnostics=(diagnostic,), error=message))
    return _degrade(run, reason, [diagnostic])


def _record(run: _Run, attempt: Attempt) -> None:
    run.attempts.append(attempt)
    if run.events is not None:
        run.events.attempt(attempt)
