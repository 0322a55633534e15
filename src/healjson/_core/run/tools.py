"""The tool-call answer kind: the caller's own tool calls, each checked against its tool.

A request that declares tools (the caller's, not healjson's) may be answered with text, with
calls, or with both. `CallAnswers` judges every call of a reply on its own, against the tool it
names: L1 on its arguments text (with the tool's target: the local repairs, flagged per call)
and L2 (the target's schema, then the tool's contracts). A call that passes is kept as it is. A
call to a tool the request did not declare, arguments no local repair can save, a contract
breach or a cut call make one repair request that asks again for *the broken calls only*
(`RepairPrompt.calls`, a `repair.calls.CallsForm`: the model's turn sent back, each call
answered by a tool message, then a user message naming the calls to make again; bounded
whatever the number of calls). A custom tool's call (`ToolCall.kind` `CUSTOM`: free text) is
judged by `judge.free_text`, accepted with its input exactly as sent, and sent back as a custom
call by a repair; a call of the other kind than its tool's is rejected as a broken one.

An accepted call is never lost or renamed by a repair. The answer to a repair (or to the
request sent again after a refusal) is read as replacements for the pending calls — the
broken ones the request named — never as a new set of calls:

- an answer call identical to an accepted call (same tool, same arguments as data: equal as
  JSON values, `tool_calls_match`) *is* that call: it stays once, where it was, with its id;
- a pending call keeps the tool it must be made to — the tool whose arguments first failed at
  its place (the forced tool for a call to another), through every round until a valid call
  to that tool replaces it — and takes the answer's first other call to that tool; one still
  without a call then takes the next call to a tool no pending call wants (the replacement of
  a call that named no declared tool in the first place; for any other, itself a broken call
  that keeps the tool its place wants: a call made again must be to the tool whose arguments
  failed, and the repair request names that tool);
- every other call of the answer is an extra call, judged against its own tool: a second page
  of a split call, a call to another tool, or an accepted call sent again with *changed*
  arguments (a new call: the accepted one keeps its arguments and id). It goes with the
  replacement of its own tool before it in the answer, else with the replacement just before
  it, else with the answer's first replacement;
- a pending call's replacement and its extra calls take its place, in answer order (several
  replacing one are placed together at its place); the accepted calls keep their ids and their
  order; a pending call the answer made no call for stays, as it was (asked again, or the run
  degrades);
- a new call's id is its own, unless it has none or a call that stays or is placed before it
  has it: then the replaced call's id (`<id>_2`, `<id>_3`, ... for the calls after the first).

`changed_fields` names exactly the places (`calls[i]`) of the answer that hold a call a repair
made; the answer's message text is the first answer's. Each repair request is the original
messages plus that one exchange: it does not grow with the rounds.

A request that forces a call (`ToolSpec.required`) answered without one is asked once more
(the budget allowing), then degrades with `tool_call_missing`; a reply with no call where
calls were optional is a valid answer with no calls. A refusal degrades with `refusal`
(`HealPolicy(on_refusal="retry")`: the request is sent again as it was); a content filter with
`content_filter`. When the attempts are spent, `Degraded` keeps every call as the model sent it
(`partial`). Rules declared `warn` or `fix` leave their trace on the outcome as for a JSON
answer (`warnings`, `fixed`, paths under `calls[i]`). The policy's budgets, deadline,
`on_truncation` and `escalate_model` apply as to any run: this is the one loop's answer kind.

The messages here are the core's neutral chat shape (an assistant turn's `tool_calls`, `tool`
messages answering them by `tool_call_id`); each wire format's request builder turns them into
its own.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final

from healjson._core.diagnostic import ROOT, Diagnostic, Source
from healjson._core.flags import Flag
from healjson._core.judge.call_checks import (
    missing_call,
    not_again,
    not_allowed,
    not_forced,
    unknown_tool,
)
from healjson._core.judge.check import Evaluation, evaluate
from healjson._core.judge.contracts import Contract, ContractContext
from healjson._core.judge.enforcement import Enforcement
from healjson._core.judge.free_text import free_text_call, wrong_kind
from healjson._core.judge.verdict import Verdict
from healjson._core.outcome.attempt import Reason
from healjson._core.outcome.calls import HealedCall, ToolCalls
from healjson._core.outcome.outcome import Healed
from healjson._core.parse import ParseResult
from healjson._core.repair.calls import CallsForm, CallState
from healjson._core.repair.prompt import RepairPrompt, Strategy
from healjson._core.target.target import Target
from healjson._core.wire.effects import AwaitAll
from healjson._core.wire.reply import CUSTOM, FUNCTION, Reply, ToolCall

from .engine import RunState, heal_flow
from .messages import make_context, normalise_messages
from .policy import HealPolicy
from .start import Run
from .stops import refusal_diagnostic
from .tool_calls_match import arguments_key, value_key

__all__ = ["TARGET", "CallAnswers", "Tool", "ToolSpec", "start_tools"]

_NO_CONTRACTS = ContractContext()  # what a run without contracts or context hands L2

TARGET: Final = "ToolCalls"
"""The target name a tool-call outcome carries."""


@dataclass(frozen=True, slots=True)
class Tool:
    """A declared tool as the healer checks its calls: its name, the target its arguments
    must validate against, its contracts, and its `kind`: `FUNCTION` (JSON arguments), or
    `CUSTOM`, whose calls carry free text, accepted as sent (`judge.free_text`: the target and
    contracts are not read)."""

    name: str
    target: Target[Any]
    contracts: tuple[Contract[Any], ...] = ()
    kind: str = FUNCTION


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """The tools of one request and how to heal their calls. `required`: False when calls are
    optional, True when the request forces some call, a tool's name when it forces that one,
    None when it allows none (`tool_choice="none"`: a call made all the same is rejected and
    the model asked to answer in text)."""

    tools: Mapping[str, Tool]
    policy: HealPolicy = field(default_factory=HealPolicy)
    required: bool | str | None = False
    fallback: Any = None
    target_name: str = TARGET

    @property
    def contract_names(self) -> tuple[str, ...]:
        """Every tool's contracts' names, tool by tool."""
        return tuple(rule.name for tool in self.tools.values() for rule in tool.contracts)

    @property
    def has_contracts(self) -> bool:
        """True when some tool has contracts (the run's context is then read)."""
        return any(tool.contracts for tool in self.tools.values())

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
        """No shortcut: every call is judged by the loop."""
        return None

    def answers(self, run: RunState, enforcement: Enforcement | None) -> CallAnswers:
        """The judge and repairer of one run."""
        return CallAnswers(self, run)


def start_tools(
    spec: ToolSpec,
    messages: Any,
    *,
    context: Mapping[str, Any] | None = None,
    params: Mapping[str, Any] | None = None,
) -> Run:
    """A run healing the calls of a request with the caller's `spec.tools`, not yet driven:
    its flow, for any driver (the calls read whole, or streamed through a `CallsReader`)."""
    import time

    original = normalise_messages(messages)
    if context is not None or spec.has_contracts:
        ctx = make_context(context, original)
    else:
        ctx = _NO_CONTRACTS
    flow = heal_flow(
        spec, original, {} if params is None else params, ctx, started=time.monotonic()
    )
    return Run(flow, ctx)


@dataclass(frozen=True, slots=True)
class _Slot:
    """One call of the answer being assembled and its verdict."""

    call: ToolCall  # its id set
    evaluation: Evaluation | None  # None: no tool to judge it by
    diagnostics: tuple[Diagnostic, ...] = ()
    repaired: bool = False  # made by an answer to a repair (its place is a changed field)
    # the tool a call made again in its place must call: the tool whose arguments first
    # failed there, kept until a valid call replaces it (None: the call named no declared tool)
    tool: str | None = None

    @property
    def ok(self) -> bool:
        return self.evaluation is not None and self.evaluation.ok

    @property
    def flags(self) -> tuple[Flag, ...]:
        return () if self.evaluation is None else self.evaluation.parse.flags


class CallAnswers:
    """One run's tool-call answers: the calls as they stand (`slots`), judged call by call,
    the broken ones asked for again."""

    __slots__ = ("missing", "pending", "run", "slots", "spec", "text")

    def __init__(self, spec: ToolSpec, run: RunState) -> None:
        self.spec = spec
        self.run = run
        self.slots: list[_Slot] = []
        self.text: str | None = None
        self.pending: tuple[int, ...] = ()  # the slots the last request asked for again
        self.missing = 0  # replies in a row that made no call where one was required

    def raw(self, reply: Reply) -> str | None:
        """The message text (None for a reply that is only calls: they are on the attempt)."""
        return reply.content if reply.content or not reply.tool_calls else None

    def judge(
        self, reply: Reply, number: int, params: Mapping[str, Any]
    ) -> Generator[AwaitAll, Any, Evaluation]:
        """Take the reply's calls into the answer, judge the new ones; the answer's verdict."""
        if reply.refusal:
            diagnostic = refusal_diagnostic(reply.refusal, "Answer the original request.")
            return Evaluation(Verdict.REFUSAL, ParseResult(error=diagnostic), (diagnostic,))
        judged = yield from self._judge(reply, number)
        spec = self.spec
        if not self.slots and spec.required not in (False, None):
            self.missing += 1
            missing = missing_call(spec.required, reply.content)
            return Evaluation(Verdict.SYNTAX, ParseResult(error=missing), (missing,))
        self.missing = 0
        flags = tuple(dict.fromkeys(f for i in judged for f in self.slots[i].flags))
        found = tuple(
            _under(index, d)
            for index, slot in enumerate(self.slots)
            if not slot.ok
            for d in slot.diagnostics
        )
        parse = ParseResult(flags=flags)
        if not found:
            return Evaluation(
                Verdict.OK,
                parse,
                (),
                self._value(),
                warnings=self._gathered("warnings"),
                fixed=tuple(dict.fromkeys(name for s in self.slots for name in _fixed(s))),
            )
        stopped = any(s.evaluation is not None and s.evaluation.stopped for s in self._broken())
        return Evaluation(_verdict(found), parse, found, stopped=stopped)

    def ends(self, evaluation: Evaluation) -> Reason | None:
        """A forced call missing from two replies in a row: `tool_call_missing`."""
        return Reason.TOOL_CALL_MISSING if self.missing >= 2 else None

    def prompt(self, evaluation: Evaluation, number: int) -> RepairPrompt:
        """The broken calls asked for again in one exchange (or the forced call asked for); a
        refusal (under `on_refusal="retry"`) sends the request again as it was."""
        if evaluation.verdict is Verdict.REFUSAL:  # the calls so far stand: an answer replaces
            self.pending = tuple(i for i, slot in enumerate(self.slots) if not slot.ok)
            return RepairPrompt(Strategy.RESEND, number, None, evaluation.diagnostics)
        spec = self.spec
        if self.missing:
            self.pending = ()
            form = CallsForm(
                self.text,
                missing=True,
                forced=False if spec.required is None else spec.required,
                declared=tuple(spec.tools),
                custom=tuple(name for name, tool in spec.tools.items() if tool.kind == CUSTOM),
            )
            return RepairPrompt(
                Strategy.REPAIR, number, self.text, evaluation.diagnostics, calls=form
            )
        self.pending = tuple(i for i, slot in enumerate(self.slots) if not slot.ok)
        calls = tuple(
            CallState(
                slot.call.id or "",
                slot.call.name,
                slot.call.arguments,
                slot.diagnostics,
                None if slot.ok or slot.tool == slot.call.name else slot.tool,
                slot.call.kind,
            )
            for slot in self.slots
        )
        strategy = Strategy.ITEMS if len(self.pending) < len(self.slots) else Strategy.REPAIR
        form = CallsForm(self.text, calls, self.pending, forbidden=spec.required is None)
        if form.forbidden:  # calls the request allows none of: the next answer is taken whole
            self.pending = ()
        raw = self.run.attempts[-1].raw_text if self.run.attempts else None
        return RepairPrompt(strategy, number, raw, evaluation.diagnostics, calls=form)

    def value(self, evaluation: Evaluation) -> tuple[Any, str, tuple[Flag, ...], tuple[str, ...]]:
        """The calls, the last raw text, every call's flags and the places a repair made."""
        flags = tuple(dict.fromkeys(f for slot in self.slots for f in slot.flags))
        changed = tuple(f"calls[{i}]" for i, slot in enumerate(self.slots) if slot.repaired)
        raw = self.run.attempts[-1].raw_text or ""
        return self._value(), raw, flags, changed

    def partial(self) -> Any:
        """Every call as the model sent it, each marked `ok` or not (None: no answer yet)."""
        return self._value() if self.slots or self.text is not None else None

    def final_reason(self, diagnostics: Sequence[Diagnostic]) -> Reason:
        """`tool_call_missing`, `refusal` or `token_truncated` when every problem is one,
        else `max_retries_exceeded` (`invalid_output` with one attempt)."""
        if self.missing:
            return Reason.TOOL_CALL_MISSING
        if diagnostics and all(d.source is Source.REFUSAL for d in diagnostics):
            return Reason.REFUSAL
        if diagnostics and all(d.source is Source.TRUNCATION for d in diagnostics):
            return Reason.TOKEN_TRUNCATED
        one = self.run.policy.max_attempts == 1
        return Reason.INVALID_OUTPUT if one else Reason.MAX_RETRIES_EXCEEDED

    # -- taking a reply's calls in ---------------------------------------------------------

    def _judge(self, reply: Reply, number: int) -> Generator[AwaitAll, Any, tuple[int, ...]]:
        """Take the reply's calls into the answer and judge the new ones; the slots judged."""
        if self.pending:  # an answer to a repair: replacements for the pending calls
            return (yield from self._replace(reply))
        # a first answer (or one after a repair that had no call to keep: a call asked for)
        calls, repaired = reply.tool_calls, number > 1
        if number == 1 or reply.content is not None:
            self.text = reply.content
        self.slots = [_Slot(call, None, (), repaired) for call in calls]
        own: set[str | None] = {call.id for call in calls if call.id}
        assigned: set[str | None] = set()
        last = len(calls) - 1
        for at, call in enumerate(calls):
            if call.id and call.id not in assigned:
                one = call
            else:  # no id, or an earlier call's: one no call of the answer has (ids are unique)
                default = f"{call.id}_{at}" if call.id else f"call_{at}"
                one = replace(call, id=_fresh_id(None, default, own | assigned))
            assigned.add(one.id)
            # only the last call of a cut reply can have been cut
            finish = reply.finish_reason if at == last else None
            slot = yield from self._judge_call(one, finish, None)
            self.slots[at] = replace(slot, repaired=True) if repaired else slot
        return tuple(range(len(calls)))

    def _replace(self, reply: Reply) -> Generator[AwaitAll, Any, tuple[int, ...]]:
        """A repair's answer read as replacements for the pending calls (see the module): the
        accepted calls kept, each pending call's replacements placed at its place, judged."""
        calls, slots, pending = reply.tool_calls, self.slots, self.pending
        where = {at: k for k, at in enumerate(pending)}
        accepted = [slot for at, slot in enumerate(slots) if at not in where]
        fresh = _not_accepted(calls, accepted)
        wanted = [slots[at].tool for at in pending]
        first, blocks = _assign(calls, fresh, wanted)
        taken = {
            slot.call.id
            for at, slot in enumerate(slots)
            if at not in where or not blocks[where[at]]
        }
        out: list[_Slot] = []
        todo: list[tuple[int, ToolCall, str | None, str | None]] = []
        last = len(calls) - 1
        for at, slot in enumerate(slots):
            k = where.get(at)
            if k is None or not blocks[k]:  # accepted, or pending with no call made: as it was
                out.append(slot)
                continue
            base = slot.call.id or f"call_{at}"
            for n, i in enumerate(blocks[k]):
                own = calls[i]
                made = replace(own, id=_fresh_id(own.id, f"{base}_{n + 1}" if n else base, taken))
                # only the last call of a cut reply can have been cut
                finish = reply.finish_reason if i == last else None
                todo.append((len(out), made, finish, wanted[k] if i == first[k] else None))
                out.append(_Slot(made, None, (), True))
        self.slots = out
        for place, made, finish, want in todo:
            judged = yield from self._judge_call(made, finish, want)
            out[place] = replace(judged, repaired=True)
        return tuple(place for place, _, _, _ in todo)

    def _judge_call(
        self, call: ToolCall, finish: str | None, wanted: str | None
    ) -> Generator[AwaitAll, Any, _Slot]:
        spec = self.spec
        if spec.required is None:  # the request allows no call: each is refused, none judged
            return _Slot(call, None, (not_allowed(call),), tool=call.name)
        if wanted is not None and call.name != wanted:  # its place keeps the tool it wants
            return _Slot(call, None, (not_again(wanted, call),), tool=wanted)
        tool = spec.tools.get(call.name)
        if tool is None:
            return _Slot(call, None, (unknown_tool(tuple(spec.tools), call),))
        forced = spec.required
        if isinstance(forced, str) and not isinstance(forced, bool) and call.name != forced:
            return _Slot(call, None, (not_forced(forced, call),), tool=forced)
        if call.kind != tool.kind:  # a custom tool called as a function, or the other way
            return _Slot(call, None, (wrong_kind(tool.kind, call),), tool=call.name)
        if call.kind == CUSTOM:  # free text: never read as JSON, kept exactly
            judged = free_text_call(call, finish)
            return _Slot(call, judged, judged.diagnostics, tool=call.name)
        # no arguments at all: the no-argument object (some servers send "" for `{}`)
        arguments = call.arguments if call.arguments.strip() else "{}"
        evaluation = yield from evaluate(
            tool.target,
            tool.contracts,
            Reply(
                None,
                finish,
                tool_calls=(replace(call, name=tool.target.name, arguments=arguments),),
            ),
            self.run.context,
            on_ambiguity=spec.policy.on_ambiguity,
            contract_timeout_s=self.run.contract_limit(),
        )
        return _Slot(call, evaluation, evaluation.diagnostics, tool=call.name)

    def _broken(self) -> list[_Slot]:
        return [slot for slot in self.slots if not slot.ok]

    def _gathered(self, name: str) -> tuple[Diagnostic, ...]:
        """Every call's `warnings`, their paths under `calls[i]`."""
        return tuple(
            _under(index, d)
            for index, slot in enumerate(self.slots)
            if slot.evaluation is not None
            for d in getattr(slot.evaluation, name)
        )

    def _value(self) -> ToolCalls:
        calls = []
        for slot in self.slots:
            call = slot.call
            value = slot.evaluation.instance if slot.ok and slot.evaluation else call.arguments
            calls.append(
                HealedCall(
                    call.id or "", call.name, value, call.arguments, slot.ok, slot.flags, call.kind
                )
            )
        return ToolCalls(self.text, tuple(calls))


def _fixed(slot: _Slot) -> tuple[str, ...]:
    return () if slot.evaluation is None else slot.evaluation.fixed


def _verdict(found: Sequence[Diagnostic]) -> Verdict:
    """The answer's verdict from its broken calls' problems (the gravest first)."""
    sources = {d.source for d in found}
    if Source.CONTRACT_ERROR in sources:
        return Verdict.CONTRACT_ERROR
    if Source.TRUNCATION in sources:
        return Verdict.TRUNCATED
    if Source.CONTRACT in sources:
        return Verdict.CONTRACT
    if Source.SCHEMA in sources:
        return Verdict.SCHEMA
    return Verdict.SYNTAX


def _not_accepted(calls: Sequence[ToolCall], accepted: Sequence[_Slot]) -> list[int]:
    """The answer's calls (their indices) that are not an accepted call sent again: the same
    tool, the same kind, with the same arguments as data (or as sent, for arguments that are
    not JSON and a custom call's input)."""
    names = {slot.call.name for slot in accepted}
    if not any(call.name in names for call in calls):
        return list(range(len(calls)))
    same: set[tuple[str, str, str]] = set()
    for slot in accepted:
        call = slot.call
        same.add(_sent_key(call))
        if call.kind != CUSTOM and slot.evaluation and slot.evaluation.parse.value is not None:
            same.add((call.name, call.kind, value_key(slot.evaluation.parse.value)))
    return [
        i for i, call in enumerate(calls) if call.name not in names or _sent_key(call) not in same
    ]


def _sent_key(call: ToolCall) -> tuple[str, str, str]:
    """A call as `_not_accepted` compares it: its tool, its kind, its arguments as data (a
    custom call's input exactly as sent)."""
    text = call.arguments if call.kind == CUSTOM else arguments_key(call.arguments)
    return call.name, call.kind, text


def _assign(
    calls: Sequence[ToolCall], fresh: Sequence[int], wanted: Sequence[str | None]
) -> tuple[list[int | None], list[list[int]]]:
    """Which answer calls (`fresh`, indices into `calls`) replace which pending call (each
    wants a call to its tool; None: any), as the module says: per pending call, the index of
    its replacement proper (None: the answer made it no call), and the calls placed at its
    place, in answer order."""
    first: list[int | None] = [None] * len(wanted)
    owner: dict[int, int] = {}
    by_tool: dict[str, list[int]] = {}
    for i in reversed(fresh):  # each tool's calls, the first last (popped first)
        by_tool.setdefault(calls[i].name, []).append(i)
    for k, name in enumerate(wanted):  # each pending call: the first free call to its tool
        free = by_tool.get(name) if name is not None else None
        if free:
            first[k] = i = free.pop()
            owner[i] = k
    named = {name for name in wanted if name is not None}
    others = iter([i for i in fresh if calls[i].name not in named])
    for k in range(len(wanted)):  # still none: the next call to a tool no one was judged by
        if first[k] is None:
            i = next(others, -1)
            if i < 0:
                break
            first[k], owner[i] = i, k
    blocks: list[list[int]] = [[] for _ in wanted]
    latest: dict[str, int] = {}  # a tool's latest replacement so far
    before: int | None = None  # the latest replacement so far
    early: list[int] = []  # extra calls before every replacement
    for i in fresh:
        at = owner.get(i)
        if at is not None:
            latest[calls[i].name] = before = at
            blocks[at].extend(early)  # extra calls before it go with the first replacement
            early = []
        else:
            at = latest.get(calls[i].name, before)
        if at is None:
            early.append(i)
        else:
            blocks[at].append(i)
    if early and blocks:  # never: some pending call takes one of the calls left
        blocks[0].extend(early)
    return first, blocks


def _fresh_id(own: str | None, default: str, taken: set[str | None]) -> str:
    """A new call's id: its own unless it has none or it is `taken`, else `default` (with a
    suffix while that is taken); the id is taken from then on."""
    name = own if own and own not in taken else default
    if name in taken:
        n = 2
        while f"{name}_{n}" in taken:
            n += 1
        name = f"{name}_{n}"
    taken.add(name)
    return name


def _under(index: int, diagnostic: Diagnostic) -> Diagnostic:
    path = diagnostic.path
    if path == ROOT:
        inner = ""
    elif path.startswith("["):
        inner = path
    else:
        inner = f".{path}"
    return replace(diagnostic, path=f"calls[{index}]{inner}")
