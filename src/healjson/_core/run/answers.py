"""The JSON answer kind: one value of a target, judged by L1 + L2, repaired whole or by item.

`HealSpec` is what a `Healer` was configured with (target, contracts, policy, fallback, golden
example, reply reader); `JsonAnswers` is its judge and repairer for one run of the loop
(`engine`): the first clean answer taken at once (`HealSpec.first`), a reply's `Evaluation` (a
refusal, a reply in a reader's format read first, a per-item repair's answer spliced into the
list, the endpoint's enforcement of the schema checked on the first reply), the next
`RepairPrompt` (a syntax prompt, a compact rewrite, a per-item repair, a clean retry; the
golden example and schema from `example_from_repair` on), and which fields a repair changed.
`next_prompt` gives the repair the loop would send after an outcome.

A reply reader (`HealSpec.reply_reader`, a `ReplyReader`) is how an integration whose model
writes another text format (DSPy's `[[ ## field ## ]]` sections, XML tags) has its replies
judged: it turns the model's text into the JSON text L1 and L2 judge (`ReadReply`: the answers
it found, the local repairs it made), and the run keeps the model's text as the reply's
everywhere else: each attempt's `raw_text` (so the events, spans, trace and records), the
outcome's, the answer a repair quotes back. Its repairs are the attempt's flags, before L1's.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypeAlias

from healjson._core.diagnostic import ROOT, Diagnostic, Source, describe_exception
from healjson._core.flags import Flag
from healjson._core.judge.check import Evaluation, answer_text, caller_tools, evaluate
from healjson._core.judge.contracts import Contract, ContractContext, value_at
from healjson._core.judge.enforcement import Enforcement, conforms
from healjson._core.judge.policies import answer_data
from healjson._core.judge.verdict import Verdict
from healjson._core.observe import events as _events
from healjson._core.outcome.attempt import Reason, first_attempt
from healjson._core.outcome.changes import changed_paths
from healjson._core.outcome.decisions import final_reason, strategy_for
from healjson._core.outcome.outcome import Degraded, Healed, Outcome
from healjson._core.outcome.seal import seal, seal_first
from healjson._core.parse import ParseResult
from healjson._core.parse.align import stands
from healjson._core.redact import run_params
from healjson._core.repair.example import Golden
from healjson._core.repair.items import ItemRepair, failed_items, merge_items
from healjson._core.repair.prompt import MAX_HISTORY_LINES, RepairPrompt, Strategy
from healjson._core.sentinels import MISSING, NOTHING
from healjson._core.target.target import Target
from healjson._core.wire.degenerate import degenerate
from healjson._core.wire.effects import AwaitAll
from healjson._core.wire.reply import Reply

from .budget import estimated_usage
from .engine import RunState, new_healed
from .policy import HealPolicy
from .stops import refusal_diagnostic

__all__ = ["HealSpec", "JsonAnswers", "ReadReply", "ReplyReader", "next_prompt"]

_MAX_CHANGED_PATHS = 200


@dataclass(frozen=True, slots=True)
class ReadReply:
    """A reply's text as a `ReplyReader` read it: `answers`, the JSON text of each answer it
    found (one; several when the reply holds several different answers: judged as L1 judges a
    reply of several JSON values, under `HealPolicy.on_ambiguity`, the lines between them being
    the reader's, not prose), and `flags`, the local repairs it made to read them (the
    attempt's flags, before L1's)."""

    answers: tuple[str, ...]
    flags: tuple[Flag, ...] = ()


ReplyReader: TypeAlias = Callable[[str], ReadReply | None]
"""Reads a reply's text (never empty) in an integration's own format: its `ReadReply`, or None
when the text holds nothing of that format (then L1 reads the text as it came). It should not
raise: one that does is a bug in code, and the run degrades with `contract_error`."""


@dataclass(frozen=True, slots=True)
class HealSpec:
    """The constant part of a healing run (what a `Healer` was configured with)."""

    target: Target[Any]
    contracts: tuple[Contract[Any], ...] = ()
    policy: HealPolicy = field(default_factory=HealPolicy)
    fallback: Any = None
    golden: Golden | str | None = None
    """The golden example, or what finds it at its first use (`example`)."""
    contract_names: tuple[str, ...] = ()
    """The contracts' names (set from `contracts` when not given)."""
    target_name: str = ""
    """The target's name (set from `target` when not given)."""
    reply_reader: ReplyReader | None = None
    """Reads each reply's text into the JSON text judged (see the module docstring); None: the
    text is judged as it came."""

    def __post_init__(self) -> None:
        if self.contracts and not self.contract_names:
            names = tuple(rule.name for rule in self.contracts)
            object.__setattr__(self, "contract_names", names)
        if not self.target_name:
            object.__setattr__(self, "target_name", self.target.name)

    @property
    def example(self) -> str | None:
        """The golden example's JSON text (`example_for` with an empty context)."""
        return self.example_for(ContractContext())

    def example_for(self, ctx: ContractContext) -> str | None:
        """The golden example's JSON text, found at the first repair prompt that shows it (a
        synthesised example's contracts run then, with that run's context)."""
        golden = self.golden
        return golden.text_for(ctx) if isinstance(golden, Golden) else golden

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
        """The outcome of a first reply (a whole one, not what an aborted stream left) that
        needs no L1: strictly valid data, finished normally, with no contracts to run and
        nothing else to read (no tool calls, no refusal). None in every other case: the loop
        then judges the reply as its first attempt, with L1 and L2 as for any reply. The
        parameters and the outcome are redacted with the current scope's secrets; pydantic's
        validation context is the run's, as in every validation. A reply reader's run is judged
        by the loop (its reply is read first)."""
        if self.contracts or self.reply_reader is not None:
            return None
        content = reply.content
        if (
            not content
            or reply.refusal
            or reply.tool_calls
            or reply.finish_reason in ("content_filter", "length")
        ):
            return None
        size, policy = len(content), self.policy
        if (size > _GUARD_FLOOR or size > (policy.max_whitespace_run or size)) and _degenerate(
            content, policy
        ) is not None:
            return None  # the loop judges it degenerate, as a stream of it would be
        validation = context.validation_context
        try:
            instance = self.target.validate_json(content, strict=True, context=validation)
        except Exception:  # ValidationError, or text pydantic-core cannot read: L1 decides
            return None
        if not stands(self.target, content, instance, validation):  # a key spells a field
            return None  # left at its default: L1 aligns it, or says why it cannot
        usage = reply.usage
        if usage is None or usage.estimated:  # none reported, or a count that was no count
            usage = estimated_usage(original, content, usage, reply.model)
        # reasoning in the provider's own field is set aside here as L1 would (`parse.read`)
        flags = (Flag.REASONING_SET_ASIDE,) if reply.reasoning and reply.reasoning.strip() else ()
        forms, stored = run_params(params)  # the run's secrets; the params as stored
        attempt = first_attempt(
            original,
            stored,  # the call got the real ones
            content,
            reply.finish_reason,
            flags,
            usage,
            reply.model or params.get("model"),
            elapsed_s,
            reply.reasoning,
        )
        healed = new_healed(self, instance, content, (attempt,), flags, usage, (), run_id)
        return seal(healed, forms) if reply.reasoning else seal_first(healed, forms)

    def answers(self, run: RunState, enforcement: Enforcement | None) -> JsonAnswers:
        """The judge and repairer of one run."""
        return JsonAnswers(self, run, enforcement)


class JsonAnswers:
    """One run's JSON answers: judged, remembered (the first data, for `changed_fields`; the
    last, for `partial`), repaired."""

    __slots__ = ("enforcement", "first_data", "items", "run", "spec")

    def __init__(self, spec: HealSpec, run: RunState, enforcement: Enforcement | None) -> None:
        self.spec = spec
        self.run = run
        self.enforcement = enforcement  # what the first request asked the endpoint to enforce
        self.items: ItemRepair | None = None  # a per-item repair in progress
        self.first_data: Any = NOTHING

    def raw(self, reply: Reply) -> str | None:
        """The content, or — when the reply is only tool calls — the arguments of the call
        judged as the answer (`check.answer_text`'s: a call to the answer tool, else the first;
        every call is kept in `Attempt.tool_calls`)."""
        if reply.content or not reply.tool_calls:
            return reply.content
        return answer_text(reply, self.spec.target, False)[0]

    def judge(
        self, reply: Reply, number: int, params: Mapping[str, Any]
    ) -> Generator[AwaitAll, Any, Evaluation]:
        """L1 + L2 on one reply: a refusal is judged as one; a reply reader's reply is read
        first (L1 and L2 judge what it read; its flags come first, and the answer a repair
        quotes is the model's text); a per-item repair's answer is spliced into the list first
        (flag `items_merged`); the first reply of a request that asked the endpoint to enforce
        the schema is checked against it."""
        spec, run = self.spec, self.run
        if reply.refusal:
            diagnostic = refusal_diagnostic(reply.refusal)
            evaluation = Evaluation(Verdict.REFUSAL, ParseResult(error=diagnostic), (diagnostic,))
            self._remember(evaluation)
            return evaluation
        found = _degenerate(self.raw(reply), run.policy)
        if found is not None:  # checked before parsing, as a stream is while it arrives
            # a per-item repair stays in progress: the next answer is read as its items
            parse = ParseResult(error=found, answer=self.raw(reply))
            return Evaluation(Verdict.DEGENERATE, parse, (found,), answer=self.raw(reply))
        read: ReadReply | None = None
        if spec.reply_reader is not None and reply.content:
            try:
                read = spec.reply_reader(reply.content)
            except Exception as exc:  # a bug in the reader's code, not in the model's answer
                return _reader_failed(exc, reply.content)
        judged = reply if read is None else replace(reply, content="\n".join(read.answers))
        merged = None
        if self.items is not None:  # read as any answer: the run's context, ambiguity, tools
            merged = merge_items(
                judged,
                self.items,
                run.context.validation_context,
                on_ambiguity=run.policy.on_ambiguity,
                caller_tools=caller_tools(params),
            )
        self.items = None
        evaluation = yield from evaluate(
            spec.target,
            spec.contracts,
            judged if merged is None else merged.reply,
            run.context,
            on_ambiguity=run.policy.on_ambiguity,
            caller_tools=caller_tools(params),
            contract_timeout_s=run.contract_limit(),
        )
        if merged is not None:  # the answer's flags (`items_merged`), a note when not spliced
            evaluation = merged.judged(evaluation)
        if (
            number == 1
            and self.enforcement is not None
            and (evaluation.parse.flags or evaluation.verdict not in _SCHEMA_KEPT)
            and self._unenforced(reply, self.raw(judged), params)
        ):
            flags = (*evaluation.parse.flags, Flag.SCHEMA_NOT_ENFORCED)
            evaluation = replace(evaluation, parse=evaluation.parse.replace(flags=flags))
        if spec.reply_reader is not None:  # the model's text is the answer a repair quotes
            evaluation = _as_read(evaluation, read, reply.content)
        if not evaluation.ok:
            self._remember(evaluation)
        return evaluation

    def ends(self, evaluation: Evaluation) -> Reason | None:
        """Nothing beyond the loop's own ends."""
        return None

    def prompt(self, evaluation: Evaluation, number: int) -> RepairPrompt:
        """The repair after attempt `number`: its strategy by the failure (a per-item repair
        when only items failed and some passed), the golden example and the schema from
        `example_from_repair` on."""
        spec, run = self.spec, self.run
        strategy = strategy_for(evaluation.diagnostics)
        if strategy is Strategy.REPAIR:
            self.items = failed_items(spec.target, evaluation)
            if self.items is not None:
                strategy = Strategy.ITEMS
        rich = number >= spec.policy.example_from_repair  # the schema text is built lazily
        schema = spec.target.json_schema_text if rich and spec.target.json_schema else None
        prompt = _prompt(
            spec.policy,
            strategy,
            number,
            evaluation.answer,
            evaluation.diagnostics,
            history=tuple(run.history[-MAX_HISTORY_LINES:]),
            example=spec.example_for(run.context) if rich and self.items is None else None,
            schema=schema,
        )
        if self.items is None:  # a whole-value repair says which items a drop rule removes
            return replace(prompt, removed=evaluation.removing) if evaluation.removing else prompt
        # the example shows a whole list: a per-item repair asks for an array of items instead
        items, count = self.items.failed, len(self.items.data)
        removed = self.items.removed
        return replace(prompt, items=items, item_count=count, removed_items=removed, example=None)

    def value(self, evaluation: Evaluation) -> tuple[Any, str, tuple[Flag, ...], tuple[str, ...]]:
        """The validated instance, the last raw text, L1's flags and the paths where it differs
        from the first answer read: computed whenever the value is not that answer as it stood
        (a repair, or a fix or a drop of the rules' policies, on the first answer too); a first
        answer accepted as it stands changes nothing and costs nothing. What a fix or a drop
        on the first answer changed is judged between that answer's value as validated, before
        the rules ran, and the accepted value, both dumped alike (`Evaluation.before_rules`):
        a field a validator transformed (dollars into cents, a `SecretStr`) is no change."""
        run, target = self.run, self.spec.target
        run.accepted = evaluation.data  # what a response cache stores of a merged list
        changed: list[str] = []
        if len(run.attempts) == 1:  # the first answer: changed only by a fix or a drop
            if evaluation.fixed or evaluation.dropped:
                changed = _changed_by_rules(target, evaluation)
        elif self.first_data is not NOTHING:
            changed = _changed_by_repair(target, self.first_data, evaluation)
        changed = changed[:_MAX_CHANGED_PATHS]
        raw = run.attempts[-1].raw_text or ""
        return evaluation.instance, raw, evaluation.parse.flags, tuple(changed)

    def partial(self) -> Any:
        """The data of the last failed answer L1 read (or of a stream that failed part-way)."""
        return self.run.partial

    def final_reason(self, diagnostics: Sequence[Diagnostic]) -> Reason:
        """By the decision table (`outcome.decisions`)."""
        return final_reason(diagnostics, self.run.policy.max_attempts)

    def _remember(self, evaluation: Evaluation) -> None:
        """Keep the best-effort data of a failed attempt (for `partial` and change tracking);
        L1's result decodes it lazily, so nothing is parsed twice."""
        data = evaluation.data
        if data is NOTHING or data is None:
            return
        self.run.partial = data
        if evaluation.verdict is not Verdict.TRUNCATED and self.first_data is NOTHING:
            self.first_data = data

    def _unenforced(self, reply: Reply, raw: str | None, params: Mapping[str, Any]) -> bool:
        """True when the first reply shows that the endpoint did not enforce the schema the
        request asked it to: its answer is not JSON, or breaks the schema as sent. A cut by the
        token limit says nothing, nor a call of one of the caller's tools; the client warns
        once."""
        enforcement = self.enforcement
        if enforcement is None or reply.finish_reason == "length":
            return False
        if reply.tool_calls and caller_tools(params):  # a call of the caller's tool: no answer
            return False
        schema = enforcement.schema(params)
        if schema is None or conforms(raw, schema):
            return False
        if enforcement.first_breach():
            _events.warn(
                "healjson.schema_not_enforced",
                run_id=self.run.run_id,
                target=self.spec.target_name,
                model=reply.model,
                hint="the endpoint accepted a request to enforce the schema but its answer "
                "breaks it: declare a weaker json_mode for this endpoint",
            )
        return True


def _reader_failed(exc: Exception, text: str) -> Evaluation:
    """A reply reader that raised on `text`: a bug in code, which another model call cannot
    fix (`contract_error`: the run ends)."""
    diagnostic = Diagnostic(
        ROOT,
        type(exc).__name__,
        f"the reply's reader raised {describe_exception(exc)}",
        "This is a bug in the reply reader's code, not in the model's answer: fix the reader "
        "(it returns None for a text that holds nothing of its format).",
        Source.CONTRACT_ERROR,
    )
    parse = ParseResult(error=diagnostic, answer=text)
    return Evaluation(Verdict.CONTRACT_ERROR, parse, (diagnostic,), answer=text)


def _as_read(evaluation: Evaluation, read: ReadReply | None, text: str | None) -> Evaluation:
    """The evaluation of a reply reader's reply: the answer is the model's `text` (what a
    repair quotes back); the reader's flags come first (several answers read: what L1 saw
    around one is the reader's joins, not prose)."""
    if read is None:
        return replace(evaluation, answer=text)
    judged = evaluation.parse.flags
    if len(read.answers) > 1:
        judged = tuple(flag for flag in judged if flag is not Flag.PROSE_AROUND)
    flags = tuple(dict.fromkeys((*read.flags, *judged)))
    return replace(evaluation, parse=evaluation.parse.replace(flags=flags), answer=text)


# the happy path's one length check: no answer this short holds a run past the default bound,
# nor any loop; a policy with a smaller bound is checked on every answer (`_degenerate`)
_GUARD_FLOOR = 2_048


def _degenerate(text: str | None, policy: HealPolicy) -> Diagnostic | None:
    """The degenerate-output guard's finding on an answer read whole (None: none)."""
    if not text:
        return None
    return degenerate(text, policy.max_whitespace_run, policy.max_repeats)


# verdicts of a reply read as it came (no repair flag) that passed the schema: judged no further
_SCHEMA_KEPT = frozenset({Verdict.OK, Verdict.CONTRACT, Verdict.CONTRACT_ERROR, Verdict.TRUNCATED})


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


def _changed_by_rules(target: Target[Any], evaluation: Evaluation) -> list[str]:
    """The paths a fix or a drop changed in an answer: its value as validated before the rules
    ran against the accepted value, dumped alike (L1's data against the accepted value's dump
    when a serializer raises on either)."""
    before = evaluation.before_rules
    after = NOTHING if before is NOTHING else answer_data(target, evaluation.instance)
    if after is NOTHING:
        return changed_paths(evaluation.data, _as_data(target, evaluation))
    return changed_paths(before, after)


def _changed_by_repair(target: Target[Any], first: Any, evaluation: Evaluation) -> list[str]:
    """The paths where the value a repair gave differs from the first answer's JSON (`first`):
    the first answer's data against the accepted value's dump, less the paths where the final
    answer said, as JSON, just what the first one said (the dump of a field a validator
    transformed, dollars into cents, or a `SecretStr`, is no change the model made), unless a
    fix or a drop on the final answer changed them."""
    paths = changed_paths(first, _as_data(target, evaluation))
    if not paths:
        return paths
    said = evaluation.data  # the final answer as L1 read it (spliced, for a per-item repair)
    ruled = _changed_by_rules(target, evaluation) if evaluation.fixed or evaluation.dropped else []
    return [
        path
        for path in paths
        if any(_related(path, other) for other in ruled) or not _said_alike(first, said, path)
    ]


def _said_alike(first: Any, said: Any, path: str) -> bool:
    """Both answers hold the same JSON at `path` (False when either has nothing there)."""
    before, after = value_at(first, path), value_at(said, path)
    if before is MISSING or after is MISSING:
        return False
    try:  # as JSON text: `1` and `1.0`, `true` and `1` are said otherwise
        return json.dumps(before, sort_keys=True) == json.dumps(after, sort_keys=True)
    except (TypeError, ValueError):  # not plain JSON data: not known to be alike
        return False


def _related(path: str, other: str) -> bool:
    """`path` and `other` are one place, or one lies inside the other."""
    short, long = sorted((path, other), key=len)
    return long == short or long.startswith((f"{short}.", f"{short}["))


def _as_data(target: Target[Any], evaluation: Evaluation) -> Any:
    """The healed value as JSON data, fields under their wire names: what `changed_fields` is
    computed over (the fields the answer set, whatever else the first answer held)."""
    data = answer_data(target, evaluation.instance)
    # a serializer that fails: the data L1 read is the next best view
    return evaluation.data if data is NOTHING else data
