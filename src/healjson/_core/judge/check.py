"""L1 + L2 for one reply: recover the JSON, validate it, run the contracts.

`evaluate` is a generator so that async contracts can be awaited by whichever driver runs it;
`validate` is the public no-model-call entry point built on it. `accepted_evaluations` lets an
integration see the evaluations that accepted a value in a block: the JSON data L1 read for
it (`Evaluation.data`), which a framework that validates data itself is handed instead of the
validated value (a value healjson validated is never validated again).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Final

from pydantic_core import from_json

from healjson._core.diagnostic import ROOT, Diagnostic, Source
from healjson._core.flags import Flag
from healjson._core.parse import ParseResult, read, truncation_diagnostic
from healjson._core.parse.align import answer_key
from healjson._core.parse.diagnostics import ambiguity
from healjson._core.parse.read import Ambiguity
from healjson._core.sentinels import NOTHING
from healjson._core.target.target import Target
from healjson._core.wire.effects import AwaitAll
from healjson._core.wire.reply import Reply, ToolCall

from .contracts import Contract, ContractContext
from .judging import judge_value
from .policies import Dropped, settle
from .schema_errors import schema_diagnostics
from .verdict import Verdict, verdict_for

__all__ = [
    "ANSWER_TOOL",
    "Evaluation",
    "Verdict",
    "accepted_evaluations",
    "answer_calls",
    "answer_text",
    "answer_tool_name",
    "answer_tool_names",
    "caller_tools",
    "evaluate",
]


@dataclass(frozen=True, slots=True)
class Evaluation:
    """The verdict on one reply, with L1's result (computed once) and the instance when it
    passed. `answer` is the text read as the answer: the reply without its reasoning, or a tool
    call's arguments."""

    verdict: Verdict
    parse: ParseResult
    diagnostics: tuple[Diagnostic, ...] = ()
    instance: Any = NOTHING
    answer: str | None = None
    warnings: tuple[Diagnostic, ...] = ()
    """The violations of `"warn"` rules by the accepted value (they do not block it)."""
    dropped: tuple[Dropped, ...] = ()
    """Items `"drop"` rules removed from the accepted value."""
    fixed: tuple[str, ...] = ()
    """The `"fix"` rules whose fix the accepted value is the result of."""
    stopped: bool = False
    """A `"stop"` rule was broken: no re-ask (the run degrades with `contract_error`)."""
    before_rules: Any = NOTHING
    """When a `"fix"` or `"drop"` rule changed the accepted value: that value as validated,
    before the rules ran, as JSON data (`policies.answer_data`; NOTHING otherwise): what the
    rules changed is judged against it (`changed_fields`), never against `data`."""
    removing: tuple[str, ...] = ()
    """A failed reply's items a `"drop"` rule removes (their places: `[3]`, `lines[0]`),
    which its diagnostics do not name: a repair neither asks for them nor calls them
    accepted (`Settled.removing`)."""

    @property
    def ok(self) -> bool:
        """True when the reply passed L1 and L2."""
        return self.verdict is Verdict.OK

    @property
    def data(self) -> Any:
        """The JSON data L1 recovered (partial data for a cut reply), or NOTHING. When the
        reply passed and no `"fix"` or `"drop"` rule changed the value (`fixed` and `dropped`
        empty), it is the data `instance` is the validation of (repaired, keys aligned, not
        validated)."""
        value = self.parse.value
        return NOTHING if value is None and not self.parse.ok else value


_ACCEPTED: ContextVar[list[Evaluation] | None] = ContextVar("healjson_accepted", default=None)


@contextmanager
def accepted_evaluations() -> Iterator[list[Evaluation]]:
    """A list of the evaluations that accept a value (`ok`) while the block runs, in this
    thread or asyncio task, in order: for an integration whose framework validates the JSON
    data itself, the data the accepted value is the validation of (`Evaluation.data`, matched
    by `instance is outcome.value`), so the framework's validation is the value's only one."""
    seen: list[Evaluation] = []
    token = _ACCEPTED.set(seen)
    try:
        yield seen
    finally:
        _ACCEPTED.reset(token)


def _accepted(evaluation: Evaluation) -> Evaluation:
    """`evaluation` (an accepted one), kept for the enclosing `accepted_evaluations` block."""
    seen = _ACCEPTED.get()
    if seen is not None:
        seen.append(evaluation)
    return evaluation


ANSWER_TOOL: Final = "answer"
"""The name a dialect gives the answer tool it forces when the target's schema has no title."""


def caller_tools(params: Mapping[str, Any]) -> bool:
    """Whether the caller passed tools of their own (`tools=[]` passes none): the one rule the
    request shapers and the judge share."""
    return bool(params.get("tools"))


def answer_text(
    reply: Reply, target: Target[Any], caller_tools: bool
) -> tuple[str | None, bool, tuple[ToolCall, ...]]:
    """Which text of a reply is the answer: `(text, from_tool, other_calls)`; `from_tool`: the
    text is a tool call's arguments the provider sent as an object (`ToolCall.as_object`), which
    a cut reply may have had closed (arguments the model wrote as text prove themselves).

    A tool call is the answer only when the request's tools were healjson's own (or the
    instructor client's it drives): never when the caller passed `tools=` of their own — then
    every call is another tool's, reported and never validated. Without the caller's tools, a
    call to the answer tool (named after the target, its schema's title, or `ANSWER_TOOL`:
    `answer_tool_names`) is the answer; without one, a reply that says something beside its
    calls answers in its text (the calls are another tool's, never the value), and a reply of
    calls alone answers with its first. (Several calls that may each be the answer are each a
    candidate: `evaluate` chooses among them by L1's rule, `answer_calls`; this is the first.)
    """
    calls = reply.tool_calls
    if not calls or caller_tools:
        return reply.content, False, calls
    names = answer_tool_names(target)
    named = [c for c in calls if answer_tool_name(c.name) in names]
    if named:
        return named[0].arguments, named[0].as_object, ()
    content = reply.content
    if content and not content.isspace():
        return content, False, calls
    return calls[0].arguments, calls[0].as_object, ()


def answer_calls(reply: Reply, target: Target[Any], caller_tools: bool) -> tuple[ToolCall, ...]:
    """The calls of a reply that are each a candidate answer (`answer_text`'s pool: the answer
    tool's calls, else, with nothing said beside them, every call), when there are several;
    () for one or none."""
    calls = reply.tool_calls
    if len(calls) < 2 or caller_tools:
        return ()
    names = answer_tool_names(target)
    named = tuple(c for c in calls if answer_tool_name(c.name) in names)
    if named:
        return named if len(named) > 1 else ()
    content = reply.content
    return () if content and not content.isspace() else calls


def answer_tool_names(target: Target[Any]) -> frozenset[str]:
    """The names an answer tool of `target` may be sent under, as `answer_tool_name` compares
    them: the target's name, its JSON schema's title (instructor's and the dialects' tools are
    named after it), and `ANSWER_TOOL`; each cut to a tool name's 64 characters."""
    names = [target.name, ANSWER_TOOL]
    try:
        title = target.json_schema.get("title")
    except Exception:  # a type pydantic cannot make a schema of: its name stands for it
        title = None
    if isinstance(title, str):
        names.append(title)
    return frozenset(answer_tool_name(name[:64]) for name in names)


def answer_tool_name(name: str) -> str:
    """`name` compared as a tool's name: its ASCII letters and digits, in lower case (an answer
    tool is named in the characters a provider accepts: `Page_Item_` for `Page[Item]`, `Caf_`
    for `Café`)."""
    return "".join(char for char in name if char.isascii() and char.isalnum()).lower()


def evaluate(
    target: Target[Any],
    contracts: Sequence[Contract[Any]],
    reply: Reply,
    ctx: ContractContext,
    *,
    on_ambiguity: Ambiguity = "reask",
    caller_tools: bool = False,
    contract_timeout_s: float | None = None,
) -> Generator[AwaitAll, list[Any], Evaluation]:
    """Run L1 and L2 on one reply (contracts limited to `contract_timeout_s` each)."""
    text, from_tool, other_calls = answer_text(reply, target, caller_tools)
    finish_reason = reply.finish_reason
    if other_calls and not (text or "").strip():
        diagnostic = _tool_call(other_calls)
        return Evaluation(Verdict.SYNTAX, ParseResult(error=diagnostic), (diagnostic,), answer=text)
    candidates = answer_calls(reply, target, caller_tools)
    if candidates:
        result, text = _one_of(candidates, target, reply, ctx, on_ambiguity)
    else:
        result = read(
            text,
            target,
            finish_reason=finish_reason,
            on_ambiguity=on_ambiguity,
            reasoning=reply.reasoning,
            from_tool=from_tool,
            context=ctx.validation_context,
        )
    answer = result.answer if result.answer is not None else text
    if result.error is not None:
        verdict = verdict_for(result.error.source)
        return Evaluation(verdict, result, (result.error,), answer=answer)
    if not result.valid:
        diagnostics = schema_diagnostics(result.schema_errors, result.value) or [
            Diagnostic(
                ROOT,
                result.value,
                f"must be a valid {target.name}",
                f"Reply with a JSON value that is a valid {target.name}.",
                Source.SCHEMA,
            )
        ]
        if finish_reason == "length":
            return _cut(text, result, diagnostics, answer)
        return Evaluation(Verdict.SCHEMA, result, tuple(diagnostics), answer=answer)
    groups = yield from judge_value(
        target, contracts, result.instance, ctx, timeout_s=contract_timeout_s
    )
    found = [diagnostic for group in groups for diagnostic in group]
    if any(d.source is Source.CONTRACT_ERROR for d in found):
        return Evaluation(Verdict.CONTRACT_ERROR, result, tuple(found), answer=answer)
    if not found:
        return _accepted(Evaluation(Verdict.OK, result, (), result.instance, answer=answer))
    blocking = [
        d
        for rule, group in zip(contracts, groups, strict=True)
        if rule.on_fail != "warn"
        for d in group
    ]
    if blocking and finish_reason == "length":
        return _cut(text, result, blocking, answer)
    settled = yield from settle(
        target, contracts, groups, result.instance, ctx, timeout_s=contract_timeout_s
    )
    if settled.error:
        return Evaluation(Verdict.CONTRACT_ERROR, result, settled.error, answer=answer)
    if settled.instance is NOTHING:
        verdict, stopped, removing = Verdict.CONTRACT, settled.stopped, settled.removing
        return Evaluation(
            verdict, result, settled.blocking, answer=answer, stopped=stopped, removing=removing
        )
    if settled.flags:
        result = result.replace(flags=(*result.flags, *settled.flags))
    return _accepted(
        Evaluation(
            Verdict.OK,
            result,
            (),
            settled.instance,
            answer=answer,
            warnings=settled.warnings,
            dropped=settled.dropped,
            fixed=settled.fixed,
            before_rules=settled.before_rules,
        )
    )


def _one_of(
    calls: Sequence[ToolCall],
    target: Target[Any],
    reply: Reply,
    ctx: ContractContext,
    on_ambiguity: Ambiguity,
) -> tuple[ParseResult, str]:
    """One answer among several calls that may each be it (`answer_calls`), by L1's rule for
    the candidates of one text (`parse.read`): each call read as an answer; the first that
    yields no valid value is the reply's failure (as a stream judges the first as it comes);
    calls that validate to the same value are one answer (flag `multiple_candidates`);
    different ones are ambiguous: no value (an `ambiguity` error, every candidate kept) unless
    the policy picks the first or the last (flag `ambiguous_choice`). With the call read."""
    fits: list[tuple[ParseResult, ToolCall]] = []
    for call in {(c.arguments, c.as_object): c for c in calls}.values():
        found = read(
            call.arguments,
            target,
            finish_reason=reply.finish_reason,
            on_ambiguity=on_ambiguity,
            reasoning=reply.reasoning,
            from_tool=call.as_object,
            context=ctx.validation_context,
        )
        if found.error is not None or not found.valid:
            return found, call.arguments
        fits.append((found, call))
    keys = list(dict.fromkeys(answer_key(target, found.instance) for found, _ in fits))
    several: tuple[Flag, ...] = (Flag.MULTIPLE_CANDIDATES,)
    if len(keys) > 1 and on_ambiguity == "reask":
        values = tuple(from_json(key) for key in keys)
        error = ambiguity(values, typed=True)
        return ParseResult(flags=several, error=error, candidates=values), calls[0].arguments
    if len(keys) > 1:
        several += (Flag.AMBIGUOUS_CHOICE,)
    found, call = fits[0] if len(keys) == 1 or on_ambiguity == "first" else fits[-1]
    return found.replace(flags=(*found.flags, *several)), call.arguments


def _tool_call(calls: Sequence[ToolCall]) -> Diagnostic:
    names = ", ".join(f"`{call.name}`" for call in calls)
    return Diagnostic(
        ROOT,
        [{"name": call.name, "arguments": call.arguments} for call in calls],
        f"must be the JSON answer; the reply is a call to {names} instead",
        "Reply with the JSON value the request asks for, not a tool call.",
        Source.TOOL_CALL,
    )


def _cut(
    text: str | None, result: ParseResult, found: Sequence[Diagnostic], answer: str | None
) -> Evaluation:
    """A complete-looking value that fails L2 in a reply cut by the token limit: the cut is the
    likeliest cause (a provider may close a cut tool call's arguments itself), so it is handled
    as a truncation — compact rewrite, `max_tokens` raised — with L2's findings kept."""
    cut = truncation_diagnostic(text or "", cut=True)
    return Evaluation(Verdict.TRUNCATED, result, (cut, *found), answer=answer)
