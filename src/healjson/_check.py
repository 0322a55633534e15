"""L1 + L2 for one reply: recover the JSON, validate it, run the contracts.

`evaluate` is a generator so that async contracts can be awaited by whichever driver runs it;
`validate` is the public no-model-call entry point built on it.
"""

from __future__ import annotations

import enum
from collections.abc import Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._contracts import AwaitAll, Contract, ContractContext, as_contract, run_contracts
from ._diagnostic import ROOT, Diagnostic, Source
from ._drive import drive_sync
from ._lenient import NOTHING
from ._outcome import Attempt, Degraded, Healed, Outcome, Reason
from ._parse import ParseResult, recover, truncation_diagnostic
from ._repair import Strategy, normalise_messages
from ._schema_errors import schema_diagnostics
from ._target import Target, target_for

__all__ = ["Evaluation", "Verdict", "evaluate", "make_context", "validate"]


class Verdict(enum.StrEnum):
    """How one reply fared in L1 + L2."""

    OK = "ok"
    EMPTY = "empty"
    SYNTAX = "syntax"
    TRUNCATED = "truncated"
    SCHEMA = "schema"
    CONTRACT = "contract"
    CONTRACT_ERROR = "contract_error"
    REFUSAL = "refusal"


@dataclass(frozen=True, slots=True)
class Evaluation:
    """The verdict on one reply, with the instance when it passed."""

    verdict: Verdict
    parse: ParseResult
    diagnostics: tuple[Diagnostic, ...] = ()
    instance: Any = NOTHING
    data: Any = NOTHING

    @property
    def ok(self) -> bool:
        """True when the reply passed L1 and L2."""
        return self.verdict is Verdict.OK


def evaluate(
    target: Target[Any],
    contracts: Sequence[Contract],
    text: str | None,
    finish_reason: str | None,
    ctx: ContractContext,
) -> Generator[AwaitAll, list[Any], Evaluation]:
    """Run L1 and L2 on one reply."""
    recovery = recover(text, target, finish_reason)
    result = recovery.result
    if result.error is not None:
        verdict = {
            Source.EMPTY: Verdict.EMPTY,
            Source.TRUNCATION: Verdict.TRUNCATED,
        }.get(result.error.source, Verdict.SYNTAX)
        return Evaluation(verdict, result, (result.error,), data=recovery.data)
    if recovery.instance is NOTHING:
        diagnostics = schema_diagnostics(recovery.schema_errors, recovery.data) or [
            Diagnostic(
                ROOT,
                recovery.data,
                f"must be a valid {target.name}",
                f"Reply with a JSON value that is a valid {target.name}.",
                Source.SCHEMA,
            )
        ]
        if finish_reason == "length":
            return _cut(text, result, diagnostics, recovery.data)
        return Evaluation(Verdict.SCHEMA, result, tuple(diagnostics), data=recovery.data)
    found = yield from run_contracts(contracts, recovery.instance, ctx)
    if any(d.source is Source.CONTRACT_ERROR for d in found):
        return Evaluation(Verdict.CONTRACT_ERROR, result, tuple(found), data=recovery.data)
    if found:
        if finish_reason == "length":
            return _cut(text, result, found, recovery.data)
        return Evaluation(Verdict.CONTRACT, result, tuple(found), data=recovery.data)
    return Evaluation(Verdict.OK, result, (), recovery.instance, recovery.data)


def _cut(
    text: str | None, result: ParseResult, found: Sequence[Diagnostic], data: Any
) -> Evaluation:
    """A complete-looking value that fails L2 in a reply cut by the token limit: the cut is the
    likeliest cause (a provider may close a cut tool call's arguments itself), so it is handled
    as a truncation — compact rewrite, `max_tokens` raised — with L2's findings kept."""
    cut = truncation_diagnostic(text or "", cut=True)
    return Evaluation(Verdict.TRUNCATED, result, (cut, *found), data=data)


def make_context(context: Any, messages: Sequence[Mapping[str, Any]] = ()) -> ContractContext:
    """Build the contract context from what the caller passed as `context=`.

    Accepts a `ContractContext`, a mapping of extra data, a prompt string or a list of messages.
    """
    if isinstance(context, ContractContext):
        return context
    if context is None:
        return ContractContext(messages=tuple(messages))
    if isinstance(context, Mapping):
        return ContractContext(messages=tuple(messages), extra=dict(context))
    return ContractContext(messages=normalise_messages(context))


def validate(
    text: str,
    model: Any,
    *,
    contracts: Iterable[Any] = (),
    context: Any = None,
    finish_reason: str | None = None,
) -> Outcome[Any]:
    """L1 + L2 on a reply you already have (no model call): `Healed` or `Degraded`.

    Degrades with `invalid_output` (or, more precisely, `empty_output`, `token_truncated`,
    `contract_error`) — never raises on bad text. A bad `model` or contract raises at once: that is
    a programming error, not a runtime failure.
    """
    target = target_for(model)
    rules = [as_contract(rule) for rule in contracts]
    ctx = make_context(context)
    evaluation = drive_sync(evaluate(target, rules, text, finish_reason, ctx))
    attempt = Attempt(
        number=1,
        strategy=Strategy.INITIAL,
        messages=ctx.messages,
        params={},
        raw_text=text if isinstance(text, str) else None,
        finish_reason=finish_reason,
        flags=evaluation.parse.flags,
        diagnostics=evaluation.diagnostics,
        ok=evaluation.ok,
    )
    raw = text if isinstance(text, str) else ""
    if evaluation.ok:
        return Healed(evaluation.instance, raw, (attempt,), flags=evaluation.parse.flags)
    reason = {
        Verdict.EMPTY: Reason.EMPTY_OUTPUT,
        Verdict.TRUNCATED: Reason.TOKEN_TRUNCATED,
        Verdict.CONTRACT_ERROR: Reason.CONTRACT_ERROR,
    }.get(evaluation.verdict, Reason.INVALID_OUTPUT)
    partial = None if evaluation.data is NOTHING else evaluation.data
    return Degraded(reason, raw, evaluation.diagnostics, partial=partial, attempts=(attempt,))
