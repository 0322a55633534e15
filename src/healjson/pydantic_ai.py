"""`healjson.pydantic_ai` (extra `pydantic-ai`): heal a pydantic-ai agent's tool arguments and
structured output locally, before pydantic-ai validates them.

    agent = Agent(model, output_type=Report, tools=[search], capabilities=[HealCapability()])

`HealCapability` is a pydantic-ai capability (its `wrap_tool_validate` and
`wrap_output_validate` hooks). pydantic-ai stays the validator of record: each tool call's
arguments, and the final output, go to pydantic-ai's own validation first. Only when that fails
does healjson's L1 read the text the model sent, against the tool's (or the output's) own
validator and JSON schema: a code fence, single quotes, a trailing comma, a key in the wrong
case, `"5"` for an integer are repaired locally, and pydantic-ai validates the repaired
arguments, so no model call is spent on them. It is handed the JSON data L1 read (the text
repaired, keys aligned), never the value healjson validated from it: pydantic-ai's validation
is the only one the value gets (a validator that turns dollars into cents runs once). A value
pydantic-ai accepts is read once more where the text left out a field that has a default:
pydantic-ai fills it with the default and ignores an unknown key, so a key that spells the
field (`LIMIT` for `limit`) is aligned to it and pydantic-ai validates the aligned data (two
keys for the field: a retry). What L1 cannot save (a string cut by the token limit, a value
the schema rejects) becomes pydantic-ai's retry, its message carrying healjson's diagnostics
(for each problem the value, the rule and the fix); but a `NativeOutput` / `PromptedOutput`
reply whose JSON the token limit cut off gets pydantic-ai's own `OutputTokenLimitExceeded`.
Contracts (`contracts=` for the output, `tool_contracts={name: [...]}` per tool; healjson
`@contract` rules) judge the value pydantic-ai validated; a violation is a retry (`ModelRetry`)
naming the breach, except rules declared `on_fail="fix"` or `"drop"` (applied locally, as at
every entry point: the corrected value is passed on, recorded as `"fixed"`), a rule
declared `on_fail="warn"`, which keeps the value and is recorded, and one declared
`on_fail="stop"`, which ends the run with `ContractStopped` (a
pydantic-ai `AgentRunError`) naming it: no retry, and a tool is not run. A contract that
raises, runs past `contract_timeout_s` or changes the value it judges is a bug of the
contract, and stops the run with pydantic-ai's `UserError`. Nothing is ever passed on that
pydantic-ai did not validate, or that a contract did not judge.

Every local repair and every retry healjson asked for is a `HealRecord` on the capability
(`records(run_id)`: those of one run, by pydantic-ai's `result.run_id`) and a structured event
(`healjson.pydantic_ai.healed` at INFO, `.retry` and `.stopped` at WARNING; see
`healjson.set_logger`). While pydantic-ai streams output (`run_stream`), partial outputs are
left to pydantic-ai's own partial reading; the final output is healed.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Literal, cast

from pydantic import TypeAdapter, ValidationError
from pydantic_core import SchemaValidator, from_json, to_json

from ._core.diagnostic import Diagnostic, Source
from ._core.flags import Flag
from ._core.judge.check import Evaluation, evaluate
from ._core.judge.contracts import Contract, ContractContext, Rule, as_contract, check_policies
from ._core.judge.judging import judge_value
from ._core.judge.policies import settle
from ._core.judge.verdict import Verdict
from ._core.observe import events
from ._core.parse.defaults import left_out
from ._core.parse.shape import shape_of
from ._core.redact import redact_data, redact_text, redacted_repr
from ._core.repair.quote import render_diagnostics
from ._core.run.drive import drive_async, drive_sync
from ._core.run.policy import HealPolicy
from ._core.sentinels import NOTHING
from ._core.target.target import Target, target_for
from ._core.wire.reply import Reply
from ._extras import missing_extra
from ._frameworks.core import StoppedByRules
from ._mcp_frameworks import heal_pydantic_ai_mcp as heal_mcp
from ._pydantic_ai_parts import (
    MAX_TARGETS,
    ValidatorAdapter,
    kept_diagnostics,
    model_like,
    model_secrets,
    response_dict,
)

try:
    from pydantic_ai import AgentRunError, ModelRetry, RunContext, UserError
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.capabilities.abstract import (
        RawOutput,
        RawToolArgs,
        ValidatedToolArgs,
        WrapOutputValidateHandler,
        WrapToolValidateHandler,
    )
    from pydantic_ai.messages import ModelResponse, ToolCallPart
    from pydantic_ai.output import OutputContext
    from pydantic_ai.tools import AgentDepsT, ToolDefinition
except ImportError as exc:  # pragma: no cover - the extra is installed wherever tests run
    raise ImportError(missing_extra("pydantic-ai-slim", "pydantic-ai")) from exc

__all__ = ["ContractStopped", "HealCapability", "HealRecord", "heal_mcp"]

_Action = Literal["healed", "fixed", "retry", "warned", "stopped"]
_NO_RETRY_POLICIES = frozenset({"warn"})  # violations that keep the value
_ANY: Target[Any] = target_for(Any)
"""What the contracts' value is dumped as, to see whether a contract changed it (the value
pydantic-ai validated: a tool's arguments dict, an output of any type)."""


class ContractStopped(StoppedByRules, AgentRunError):
    """The run ended on a rule declared `on_fail="stop"`: a tool's arguments (the tool was not
    run) or the output broke it, and the model is not asked again. `diagnostics`: what broke
    (the value, the rule); `rules`: the rules' names. pydantic-ai's `AgentRunError`, not its
    `UnexpectedModelBehavior`, which pydantic-ai reports as "Exceeded maximum output retries"
    when it is raised while an output is validated (no retry was made)."""


@dataclass(frozen=True, slots=True)
class HealRecord:
    """What healjson did to one tool call or output of a pydantic-ai run.

    `action`: `"healed"` (a local repair: pydantic-ai was handed `value`, the JSON data L1
    read, instead of `raw`, and validated it), `"fixed"` (`"fix"` / `"drop"` rules corrected
    the validated value locally: the run got `value`, flagged; `diagnostics`: the breaches
    settled), `"retry"` (healjson could not save it:
    pydantic-ai asked the model again with `diagnostics` in its retry prompt), `"warned"` (a
    contract with `on_fail="warn"` broke; the value was kept) or `"stopped"` (a contract with
    `on_fail="stop"` broke: the run ended with `ContractStopped`). `kind`: `"tool"`
    (its `name` is the tool's) or `"output"` (the output's name). `flags`: the local repairs
    (`healjson.Flag`). `run_id`: pydantic-ai's run id (`result.run_id`).

    Kept as healjson keeps every record: `raw`, and `value` when it is JSON data (a dict,
    list or string: a copy, the tool still gets the real value), pass the redactor
    (credential shapes, values under a credential field's name, and the key of the model's
    own client); `diagnostics` and `repr` too."""

    action: _Action
    kind: Literal["tool", "output"]
    name: str
    run_id: str | None
    tool_call_id: str | None
    raw: str
    flags: tuple[Flag, ...] = ()
    value: Any = None
    diagnostics: tuple[Diagnostic, ...] = ()
    _shown: str = field(default="", init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "raw", redact_text(self.raw))
        # as an outcome's records keep the caller's data (`record.outcome_to_dict`)
        object.__setattr__(self, "value", redact_data(self.value, by_name=False, fields=True))
        object.__setattr__(self, "diagnostics", kept_diagnostics(self.diagnostics))
        # rendered now, inside the run's scope: the key of the model's own client is known
        # here, not when the record is printed (a model instance `value` is kept as it is)
        object.__setattr__(self, "_shown", redacted_repr(self))

    def __repr__(self) -> str:
        return self._shown or redacted_repr(self)


@dataclass
class HealCapability(AbstractCapability[AgentDepsT]):
    """A pydantic-ai capability: tool arguments and structured output healed locally before
    pydantic-ai validates them (see the module's documentation). Every argument is optional.

    `contracts`: healjson rules (`@contract` or plain functions) over the validated output (the
    value the run returns: a `Report` instance for `output_type=Report`).
    `tool_contracts`: per tool name, rules over its validated arguments (a dict, as pydantic-ai
    hands them to the tool). `policy`: its `on_ambiguity` (a reply with two different answers)
    and `contract_timeout_s` apply. `max_records`: how many `HealRecord`s are kept (the oldest
    are dropped first)."""

    contracts: Iterable[Rule[Any]] = ()
    tool_contracts: Mapping[str, Iterable[Rule[Any]]] | None = None
    policy: HealPolicy | None = None
    max_records: int = 10_000
    _rules: tuple[Contract[Any], ...] = field(init=False, repr=False, default=())
    _tool_rules: dict[str, tuple[Contract[Any], ...]] = field(
        init=False, repr=False, default_factory=dict
    )
    _records: deque[HealRecord] = field(init=False, repr=False)
    _targets: dict[int, tuple[Any, Target[Any]]] = field(
        init=False, repr=False, default_factory=dict
    )
    _lock: threading.Lock = field(init=False, repr=False, default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self._rules = tuple(as_contract(rule) for rule in self.contracts)
        check_policies(self._rules, items=False)
        for name, rules in (self.tool_contracts or {}).items():
            if not isinstance(name, str):
                raise TypeError(f"tool_contracts: keys are tool names, got {name!r}")
            found = tuple(as_contract(rule) for rule in rules)
            check_policies(found, items=False)
            self._tool_rules[name] = found
        if self.policy is None:
            self.policy = HealPolicy()
        self._records = deque(maxlen=self.max_records)

    # -- what was healed ----------------------------------------------------------------

    def records(self, run_id: str | None = None) -> list[HealRecord]:
        """The records kept, oldest first; with `run_id`, only that run's."""
        with self._lock:
            found = list(self._records)
        return found if run_id is None else [r for r in found if r.run_id == run_id]

    @property
    def heals(self) -> list[HealRecord]:
        """The local repairs kept (`action == "healed"`), oldest first."""
        return [r for r in self.records() if r.action == "healed"]

    # -- tool arguments -----------------------------------------------------------------

    async def wrap_tool_validate(
        self,
        ctx: RunContext[AgentDepsT],
        *,
        call: ToolCallPart,
        tool_def: ToolDefinition,
        args: RawToolArgs,
        handler: WrapToolValidateHandler,
    ) -> ValidatedToolArgs:
        if ctx.partial_output:
            return await handler(args)
        rules = self._tool_rules.get(call.tool_name, ())
        step = _Step(self, ctx, "tool", call.tool_name, call.tool_call_id, args)
        with model_secrets(ctx.model):  # what is kept or said: without the client's key
            try:
                validated = await handler(args)
            except ValidationError as exc:
                tool = _tool(ctx, call.tool_name)
                target = None if tool is None else self._target(tool.args_validator, tool_def)
                validated = await step.heal(target, handler, exc)
            else:
                tool = _tool(ctx, call.tool_name)
                target = None if tool is None else self._target(tool.args_validator, tool_def)
                validated = await step.settle(target, handler, validated)
            judged = await step.judge(rules, validated, target)
        return cast(ValidatedToolArgs, judged)

    # -- output -------------------------------------------------------------------------

    async def wrap_output_validate(
        self,
        ctx: RunContext[AgentDepsT],
        *,
        output_context: OutputContext,
        output: RawOutput,
        handler: WrapOutputValidateHandler,
    ) -> Any:
        if ctx.partial_output:  # a stream's partial output: pydantic-ai's own partial reading
            return await handler(output)
        call = output_context.tool_call
        name = _output_name(output_context)
        step = _Step(self, ctx, "output", name, call.tool_call_id if call else None, output)
        with model_secrets(ctx.model):  # what is kept or said: without the client's key
            try:
                validated = await handler(output)
            except ValidationError as exc:
                target = self._output_target(ctx, output_context)
                text = output_context.tool_def is None  # native or prompted: the reply's text
                validated = await step.heal(target, handler, exc, text=text)
            else:
                target = self._output_target(ctx, output_context)
                validated = await step.settle(target, handler, validated)
            return await step.judge(self._rules, validated, _value_target(output_context))

    # -- targets ------------------------------------------------------------------------

    def _target(self, validator: Any, tool_def: ToolDefinition) -> Target[Any] | None:
        """The L1 target of a tool: its own pydantic-core validator and JSON schema."""
        if not isinstance(validator, SchemaValidator):
            return None  # a validator of its own kind: pydantic-ai's message alone
        with self._lock:
            known = self._targets.get(id(validator))
            if known is not None and known[0] is validator:
                return known[1]
            if len(self._targets) >= MAX_TARGETS:
                self._targets.clear()
            adapter = ValidatorAdapter(validator, tool_def.parameters_json_schema)
            made: Target[Any] = Target(
                SimpleNamespace(__name__=tool_def.name), cast(TypeAdapter[Any], adapter)
            )
            self._targets[id(validator)] = (validator, made)
            return made

    def _output_target(self, ctx: RunContext[Any], output: OutputContext) -> Target[Any] | None:
        if output.tool_def is not None:  # an output tool: its validator, as for any tool
            tool = _tool(ctx, output.tool_def.name)
            return None if tool is None else self._target(tool.args_validator, output.tool_def)
        kind = output.output_type
        if output.has_function or kind is None or output.object_def is None:
            return None
        if model_like(kind):
            return target_for(kind)
        wrapped = output.object_def.json_schema.get("properties")
        if isinstance(wrapped, dict) and set(wrapped) == {"response"}:
            return target_for(response_dict(kind))
        return None

    # -- records --------------------------------------------------------------------------

    def _record(self, record: HealRecord) -> None:
        with self._lock:
            self._records.append(record)
        run_id = record.run_id or uuid.uuid4().hex
        fields: dict[str, Any] = {
            "kind": record.kind,
            "name": record.name,
            "tool_call_id": record.tool_call_id,
            "flags": [str(flag) for flag in record.flags],
        }
        # an event about a run already made: no span of its own (a run's spans are the run's)
        if record.action == "healed":
            events.about_run(run_id, logging.INFO, "healjson.pydantic_ai.healed", **fields)
        else:
            errors = [f"{d.path}: {d.constraint}" for d in record.diagnostics]
            level = logging.INFO if record.action in ("warned", "fixed") else logging.WARNING
            event = f"healjson.pydantic_ai.{record.action}"
            events.about_run(run_id, level, event, errors=errors, **fields)


@dataclass(slots=True)
class _Step:
    """One tool call's arguments, or one output, on its way through the hooks."""

    owner: HealCapability[Any]
    ctx: RunContext[Any]
    kind: Literal["tool", "output"]
    name: str
    tool_call_id: str | None
    raw: RawOutput

    @property
    def text(self) -> str:
        raw = self.raw
        return raw if isinstance(raw, str) else to_json(raw).decode()

    def _note(self, action: _Action, **fields: Any) -> None:
        run_id = self.ctx.run_id
        self.owner._record(
            HealRecord(action, self.kind, self.name, run_id, self.tool_call_id, self.text, **fields)
        )

    async def heal(
        self,
        target: Target[Any] | None,
        handler: Callable[[Any], Awaitable[Any]],
        failure: ValidationError,
        *,
        text: bool = False,
    ) -> Any:
        """pydantic-ai rejected the raw value: L1 on its text, the repaired data (L1's, not
        the value healjson validated from it) validated by pydantic-ai; a `ModelRetry` with
        healjson's diagnostics when nothing is saved. Except where pydantic-ai itself does not
        ask again: an output (`text`: `NativeOutput`, `PromptedOutput`; or the output tool)
        that stops mid-value, cut by the token limit (the reply's finish reason, which
        `run_stream` does not show a capability: L1 reads the cut itself), gets pydantic-ai's
        own failure back (it raises `OutputTokenLimitExceeded` / `IncompleteToolCall`: asking
        with the same limit would be cut again), and nothing is recorded."""
        if target is None:
            raise failure
        found = self._evaluate(target)
        if (
            not found.ok
            and self.kind == "output"
            and _incomplete_json(failure)
            and (found.verdict is Verdict.TRUNCATED or _cut(self.ctx))
        ):  # an output that stops mid-value: pydantic-ai's own failure, which names the limit
            raise failure
        if not found.ok:
            self._note("retry", diagnostics=found.diagnostics)
            raise ModelRetry(self._message(found.diagnostics)) from failure
        data = found.data
        # pydantic-ai, the validator of record, on the repair: what it rejects there (its
        # validation context may see more than healjson's) is its retry, about the value
        validated = await handler(_json_text(data))
        self._note("healed", flags=found.parse.flags, value=data)
        return validated

    async def settle(
        self, target: Target[Any] | None, handler: Callable[[Any], Awaitable[Any]], validated: Any
    ) -> Any:
        """pydantic-ai accepted the raw value, but it fills a field the text left out with its
        default and ignores a key that is not a field: where the text left one out and a key
        spells it (L1's rule, `align.settled`), the aligned data is validated by pydantic-ai
        again; two keys for the field, or an aligned value that fails, is a retry. Costs one
        look at the raw data's keys where the target has a field that may be left out."""
        if target is None or not shape_of(target).defaults:
            return validated
        raw = self.raw
        try:
            data = raw if isinstance(raw, dict) else from_json(raw)
        except ValueError:
            return validated
        if not left_out(target, data):
            return validated
        found = self._evaluate(target)
        if not found.ok:
            if Flag.KEYS_ALIGNED in found.parse.flags or any(
                diagnostic.rule == "misnamed_keys" for diagnostic in found.diagnostics
            ):
                self._note("retry", diagnostics=found.diagnostics)
                raise ModelRetry(self._message(found.diagnostics))
            return validated  # a failure of healjson's own: pydantic-ai's verdict stands
        if Flag.KEYS_ALIGNED not in found.parse.flags:
            return validated
        data = found.data
        validated = await handler(_json_text(data))
        self._note("healed", flags=found.parse.flags, value=data)
        return validated

    def _evaluate(self, target: Target[Any]) -> Evaluation:
        """L1 (and nothing else) on the raw value's text."""
        policy = self.owner.policy or HealPolicy()
        context = _mapping(self.ctx.validation_context)
        reply = Reply(self.text, "length" if _cut(self.ctx) else None)
        return drive_sync(
            evaluate(
                target,
                (),
                reply,
                ContractContext(extra=context) if context is not None else ContractContext(),
                on_ambiguity=policy.on_ambiguity,
            )
        )

    async def judge(
        self, rules: Sequence[Contract[Any]], value: Any, target: Target[Any] | None
    ) -> Any:
        """The contracts on pydantic-ai's validated value, judged and settled as every entry
        point does (`judge_value`, then the `on_fail` policies: `settle`): a breach of a
        `"warn"` rule keeps the value (recorded); one of a `"stop"` rule ends the run with
        `ContractStopped` naming it (no retry; the tool is not run); `"fix"` and `"drop"`
        breaches are settled locally (`target`: the value's type, what the corrected value is
        checked against), and the corrected value is the one passed on (recorded as
        `"fixed"`, flagged), no model call; anything else (a `"reask"` rule, a fix that does
        not hold) is a retry naming the breaches. A contract or fix that raises, runs past
        `contract_timeout_s` or changes the value it judges is a bug of the contract, not the
        model's: `UserError`, never a value passed on unjudged."""
        if not rules:
            return value
        policy = self.owner.policy or HealPolicy()
        context = ContractContext(extra=_mapping(self.ctx.validation_context) or {})
        timeout = policy.contract_timeout_s
        groups = await drive_async(judge_value(_ANY, rules, value, context, timeout_s=timeout))
        broken = [d for group in groups for d in group if d.source is Source.CONTRACT_ERROR]
        if broken:
            raise UserError(redact_text(f"healjson: a contract failed: {broken[0].describe()}"))
        blocking: list[Diagnostic] = []
        warned: list[Diagnostic] = []
        stopped: list[Diagnostic] = []
        for rule, group in zip(rules, groups, strict=True):
            (warned if rule.on_fail in _NO_RETRY_POLICIES else blocking).extend(group)
            if rule.on_fail == "stop":
                stopped.extend(group)
        if stopped:
            if warned:
                self._note("warned", value=value, diagnostics=tuple(warned))
            self._note("stopped", value=value, diagnostics=tuple(stopped))
            message = redact_text(self._stop_message(stopped))
            raise ContractStopped(message, kept_diagnostics(tuple(stopped)))  # in the scope
        if not blocking:
            if warned:
                self._note("warned", value=value, diagnostics=tuple(warned))
            return value
        settled = await drive_async(
            settle(target or _ANY, rules, groups, value, context, timeout_s=timeout)
        )
        if settled.error:
            raise UserError(
                redact_text(f"healjson: a contract failed: {settled.error[0].describe()}")
            )
        if settled.instance is not NOTHING:  # fixed and dropped locally: the corrected value
            fixed = settled.instance
            if settled.warnings:
                self._note("warned", value=fixed, diagnostics=settled.warnings)
            self._note("fixed", value=fixed, flags=settled.flags, diagnostics=tuple(blocking))
            return fixed
        if warned:
            self._note("warned", value=value, diagnostics=tuple(warned))
        asked = settled.blocking or tuple(blocking)
        self._note("retry", value=value, diagnostics=asked)
        raise ModelRetry(self._message(asked))

    def _stop_message(self, diagnostics: Sequence[Diagnostic]) -> str:
        """What `ContractStopped` says: the rule(s) broken, each value and rule, and that the
        model is not asked again (nor the tool run)."""
        rules = ", ".join(dict.fromkeys(f"`{d.rule}`" for d in diagnostics if d.rule))
        found = "; ".join(d.describe(max_value_chars=80) for d in diagnostics[:5])
        more = f"; and {len(diagnostics) - 5} more" if len(diagnostics) > 5 else ""
        if self.kind == "tool":
            what, after = (
                f"the arguments of tool `{self.name}` break",
                "The tool was not run, and the",
            )
        else:
            what, after = f"the output `{self.name}` breaks", "The"
        return (
            f'healjson: {what} {rules or "a rule"} (on_fail="stop"): {found}{more}. {after} '
            "model is not asked again."
        )

    def _message(self, diagnostics: Sequence[Diagnostic]) -> str:
        if self.kind == "tool":
            what = f"the arguments of tool `{self.name}` need"
        else:
            what = "the output needs"
        count = len(diagnostics)
        head = f"healjson: {what} a fix ({count} problem{'s' if count != 1 else ''}):"
        return "\n".join((head, *render_diagnostics(diagnostics)))


def _tool(ctx: RunContext[Any], name: str) -> Any:
    manager = ctx.tool_manager
    tools = getattr(manager, "tools", None) if manager is not None else None
    return tools.get(name) if isinstance(tools, Mapping) else None


def _cut(ctx: RunContext[Any]) -> bool:
    """Whether the model's reply being read was cut by the token limit."""
    for message in reversed(ctx.messages):
        if isinstance(message, ModelResponse):
            return message.finish_reason == "length"
    return False


def _incomplete_json(failure: ValidationError) -> bool:
    """Whether pydantic-ai's failure is JSON that ends before it is complete (how pydantic-ai
    itself tells a reply the token limit cut off from one the schema rejects)."""
    return any(error["type"] == "json_invalid" for error in failure.errors())


def _value_target(output: OutputContext) -> Target[Any] | None:
    """What pydantic-ai validated an output into (the output type's value, unwrapped from its
    `{"response": ...}` envelope), for the rules' fixes; None for an output function's."""
    kind = output.output_type
    if output.has_function or kind is None:
        return None
    try:
        return target_for(kind)
    except Exception:  # a type healjson cannot target: the fixed value is checked as `Any`
        return None


def _json_text(data: Any) -> str:
    """The JSON data L1 read (repaired, keys aligned: what the model meant), as the JSON text
    healjson validated it from; pydantic-ai validates it, in the same JSON mode, with the same
    validator and context. Never the value healjson validated from it: a value is validated
    once (a validator that turns dollars into cents would run twice)."""
    return to_json(data, inf_nan_mode="constants").decode()


def _mapping(context: Any) -> Mapping[str, Any] | None:
    return context if isinstance(context, Mapping) else None


def _output_name(output: OutputContext) -> str:
    if output.tool_def is not None:
        return output.tool_def.name
    named = output.object_def.name if output.object_def is not None else None
    return named or getattr(output.output_type, "__name__", None) or "output"
