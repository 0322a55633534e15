"""Heal what an OpenAI Agents SDK run gets from the model (`pip install 'healjson[agents]'`).

Three pieces, each on a hook the SDK offers for it (nothing of the SDK is replaced):

* `heal_final_output(contracts)`: an `invalid_final_output` error handler, for
  `Runner.run(..., error_handlers={"invalid_final_output": heal_final_output()})`. The SDK calls
  it when the model's final output does not validate against the agent's `output_type`, where
  it would raise `ModelBehaviorError` (it never asks the model again there). The handler runs
  healjson's L1 + L2 on that reply, locally: a fence, prose around the JSON, a syntax slip, a
  key in the wrong case, a number sent as a string, the answer without the SDK's `response`
  wrapper, ... become the validated output (the contracts checked too), with no model call. A
  reply that cannot be healed without inventing data (cut, a field missing) or that breaks a
  contract gives `None`: the SDK raises as it would have. A clean output never reaches the
  handler (nor its contracts: `contract_guardrail` checks every one). The SDK validates a
  handler's output once more (`validate_handler_final_output`: the output schema's
  `validate_json` on its JSON dump; `RunErrorHandlerResult` has no "already validated" form).
  Under
  `output_type=HealedOutputSchema(T)` (the SDK's `AgentOutputSchema`, whose `validate_json`
  takes the value the handler just returned as it is) the healed value is the final output,
  validated once, by healjson. Under a plain `output_type` it is handed on only when that
  second validation gives it back (equal, and the same JSON): not for a validator that changes
  a valid value (dollars to cents) nor a `SecretStr` (dumped as its mask): then `None` too.
* `heal_tools(agent_or_tools, tool_contracts)`: function tools whose arguments are healed
  before the SDK validates them, the agent's and those of every agent it can hand off to
  (each a healed clone: the whole run is healed). Each `FunctionTool` is copied (its public
  `copy`) with an `on_invoke_tool` that runs L1 + L2 on the model's arguments text, against
  the tool's own parameter model (rebuilt with the SDK's `function_schema` from the function
  `@function_tool` wrapped; a `FunctionTool` built by hand is read as a JSON object) and that
  tool's contracts, then hands the tool's own invoker the JSON data L1 read (repaired, not
  validated: the SDK's validation is the only one the tool's value gets, as for clean
  arguments), or the model's text, untouched, when it needed nothing. When the run's context
  is a mapping, healjson's L2 reads the JSON with it as pydantic's validation context, while
  the SDK reads `Model(**json.loads(text))`, lax, without one: then the text handed on is
  first read the SDK's way (a check, thrown away), and is not run when that refuses it, or
  gives another value that breaks the contracts (which then judge it, the value the tool
  would get).
  Arguments that cannot be healed are not run: the model gets healjson's diagnostics (the
  value, the rule, the fix) as the tool's error result, the way the SDK reports a tool's
  failure, where the SDK alone would send "An error occurred while running the tool. Please
  try again." — so the model's retry is informed. A tool built
  with `failure_error_function=None` (failures end the run) raises `ModelBehaviorError` with
  the diagnostics instead; a custom `failure_error_function` is given them as its error.
  Arguments that break a rule declared `on_fail="stop"` are not run either, and the model is
  not asked again, whatever the tool's failure policy: the run ends with `ContractStopped` (a
  `ModelBehaviorError`) naming the rule and the tool.
* `contract_guardrail(contracts)`: an `OutputGuardrail` that runs healjson contracts on the
  final output itself (never validated again); its tripwire fires on a breach, the
  `ContractReport` (the diagnostics, redacted with the client's secrets) as its `output_info`.

A contract that fails as code (raises, runs past `contract_timeout_s`, changes the value it
judges) is the caller's bug, not the model's: each piece raises the SDK's `UserError`, which
ends the run, as an exception from a tool's own code does. What was repaired is visible: every
value healed or refused is a healjson run (its events: `healjson.local_repair` with the flags,
`healjson.healed` / `healjson.degraded`), and with `log=HealLog()` each value healed or refused
is one readable `AgentRepair` (`print(log)`). A tool input guardrail still sees the model's own
text (`ToolContext.tool_arguments` is set to the healed JSON only once the tool runs).
"""

from __future__ import annotations

import copy
import inspect
import json
import threading
import warnings
import weakref
from collections.abc import Callable, Coroutine, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar, overload

from pydantic import BaseModel, ValidationError
from pydantic_core import to_json

from ._agents_judge import (
    Judges,
    client_secrets,
    failure_formatter,
    judge,
    judge_output,
    messages,
    not_the_sdks,
    one_attempt,
    params_type,
    run_context_data,
)
from ._agents_log import (
    AgentRepair,
    ContractReport,
    HealLog,
    bug_text,
    entry,
    kept_diagnostics,
    kept_report,
    refusal_text,
    rules_broken,
    stop_text,
)
from ._core.diagnostic import ROOT, Diagnostic, Source
from ._core.judge.contracts import Contract
from ._core.judge.schema_errors import schema_diagnostics
from ._core.outcome.attempt import Reason
from ._core.outcome.outcome import Healed
from ._core.run.healer import Healer
from ._core.run.policy import HealPolicy
from ._core.sentinels import NOTHING
from ._extras import require_extra
from ._frameworks.core import StoppedByRules
from ._mcp_frameworks import heal_agents_mcp as heal_mcp

require_extra("agents", "agents", "openai-agents")

from agents import (  # noqa: E402  (after the check: the one missing-extra message)
    Agent,
    FunctionTool,
    GuardrailFunctionOutput,
    Handoff,
    ModelBehaviorError,
    OutputGuardrail,
    RunContextWrapper,
    RunErrorHandlerInput,
    RunErrorHandlerResult,
    UserError,
    default_tool_error_function,
)

from ._agents_output import (  # noqa: E402
    HealedOutputSchema,
    as_sdk_output,
    final_text,
    handed_over,
    output_schema,
)

if TYPE_CHECKING:
    from agents import Tool
    from agents.tool_context import ToolContext

__all__ = [
    "AgentRepair",
    "ContractReport",
    "ContractStopped",
    "FinalOutputHandler",
    "HealLog",
    "HealedOutputSchema",
    "contract_guardrail",
    "heal_final_output",
    "heal_mcp",
    "heal_tools",
]

TContext = TypeVar("TContext")
Rules = Iterable[Contract[Any] | Any]
"""Contracts: `@healjson.contract` rules or plain `(value, ctx)` functions."""

FinalOutputHandler = Callable[
    [RunErrorHandlerInput[Any]], Coroutine[Any, Any, RunErrorHandlerResult | None]
]
"""What `heal_final_output` returns: an async `invalid_final_output` handler."""


class ContractStopped(StoppedByRules, ModelBehaviorError):
    """The run ended on a rule declared `on_fail="stop"` that a tool call's arguments broke: the
    tool was not run, and the model is not asked again (whatever the tool's failure policy).
    `diagnostics`: what broke (the value, the rule); `rules`: the rules' names. The SDK's
    `ModelBehaviorError`, as for a final output no handler could heal."""


def _contract_failed(what: str, found: Sequence[Diagnostic]) -> UserError | None:
    """The SDK's error for a mistake in the caller's code (`UserError`: it ends the run, as an
    exception from a tool's own code does) when a contract failed as code on `what` (it
    raised, ran past its time, changed the value it judged): never the model's to correct.
    None when `found` holds no such failure (a `"stop"` rule's violation is the model's)."""
    message = bug_text(what, found)
    return None if message is None else UserError(message)


# ---------------------------------------------------------------------------------------------
# The final output: an `invalid_final_output` handler
# ---------------------------------------------------------------------------------------------


_CLEAN_OUTPUTS_UNCHECKED = (
    "heal_final_output(contracts): the SDK calls this handler only for a final output that "
    "fails its validation, so these contracts never judge a clean output (one that breaks "
    "them is delivered). Give the agent output_guardrails=[contract_guardrail(contracts)] to "
    "check every final output."
)


def heal_final_output(
    contracts: Rules | None = None,
    *,
    policy: HealPolicy | None = None,
    log: HealLog | None = None,
) -> FinalOutputHandler:
    """An `invalid_final_output` handler for `Runner.run(..., error_handlers=...)` (async;
    `Runner.run_sync` runs it too): the model's final output healed locally against the agent's
    `output_type` and checked against `contracts`, returned as the run's final output; `None`
    (the SDK raises its `ModelBehaviorError` as before) when it cannot be healed without
    inventing data, breaks a contract, would be changed by the SDK's own validation of the
    handler's output (the value's validators are not idempotent; never under
    `output_type=HealedOutputSchema(T)`, which takes the healed value as it is), or the output
    type is another custom `AgentOutputSchemaBase`. A contract that fails as code raises
    `UserError`.

    The SDK calls this handler only for a final output that fails its own validation: a clean
    output never reaches it, so `contracts` here judge healed outputs only, and a clean output
    that breaks them is delivered. To check every final output, give the agent
    `output_guardrails=[contract_guardrail(contracts)]` (it also judges what this handler
    healed); passing `contracts` here warns (`UserWarning`) to say so.

    The contracts see the run's input as `ctx.messages` and, when the run's context object is a
    mapping, that mapping as `ctx.extra`. `policy`: a `HealPolicy` for what applies to one reply
    (`on_ambiguity`, `contract_timeout_s`, ...); it never makes a model call (the SDK owns
    those). `log`: a `HealLog` to record each output healed or refused.
    """
    judges = Judges(tuple(contracts or ()), one_attempt(policy))
    if judges.contracts:
        warnings.warn(_CLEAN_OUTPUTS_UNCHECKED, UserWarning, stacklevel=2)

    async def heal_invalid_final_output(
        data: RunErrorHandlerInput[Any],
    ) -> RunErrorHandlerResult | None:
        with client_secrets(data.run_data.last_agent):  # its key: never recorded nor emitted
            return await heal(data)

    async def heal(data: RunErrorHandlerInput[Any]) -> RunErrorHandlerResult | None:
        run_data = data.run_data
        agent = run_data.last_agent
        schema = output_schema(agent)
        text = final_text(run_data)
        if schema is None or text is None or not text.strip():
            return None  # nothing to heal: the SDK goes on as without a handler
        # the SDK's `{"response": ...}` wrapper: taken off by a reading L1's verdict stands on
        healer = judges.for_type(schema.output_type, wrapped=getattr(schema, "_is_wrapped", False))
        outcome, _ = await judge(
            healer, text, messages(run_data.input), run_context_data(data.context)
        )
        name = str(getattr(agent, "name", "agent"))
        if not isinstance(outcome, Healed):
            if log is not None:
                log.record(entry("final_output", name, None, text, outcome))
            bug = _contract_failed(f"the final output of agent `{name}`", outcome.errors)
            if bug is not None:  # the caller's bug: raised as one, not the model's error
                raise bug
            return None
        if isinstance(schema, HealedOutputSchema):  # taken as it is: validated once, by healjson
            value_json = handed_over(schema, healer.target.adapter, outcome.value)
        else:
            value_json = as_sdk_output(agent, schema, healer.target.adapter, outcome.value)
        if value_json is None:
            why = Diagnostic(
                ROOT,
                outcome.value,
                "the SDK validates a final output a handler returns once more, and that "
                "validation refuses or changes this value (a validator that changes a valid "
                "value, such as a unit conversion): it is not handed on (an output type "
                "declared as `HealedOutputSchema(...)` takes it as healjson validated it)",
                "Reply with a value of the output type.",
                Source.SCHEMA,
            )
            if log is not None:
                log.record(entry("final_output", name, None, text, outcome, diagnostics=(why,)))
            return None
        if log is not None:
            log.record(entry("final_output", name, None, text, outcome, value_json=value_json))
        return RunErrorHandlerResult(final_output=outcome.value)

    return heal_invalid_final_output


# ---------------------------------------------------------------------------------------------
# Tool arguments: function tools whose invoker heals first
# ---------------------------------------------------------------------------------------------


class _HealingInvoker:
    """A function tool's `on_invoke_tool`: heal the arguments text, then call the tool's own
    invoker (its failure handling, timeouts and tracing stay the SDK's)."""

    __slots__ = ("healer", "inner", "log", "tool")

    def __init__(
        self, tool: FunctionTool, inner: Any, healer: Healer[Any], log: HealLog | None
    ) -> None:
        self.tool = tool
        self.inner = inner
        self.healer = healer
        self.log = log

    async def __call__(self, ctx: ToolContext[Any], input: str) -> Any:
        if not input.strip():  # the SDK reads no arguments as `{}`: its own rule
            return await self.inner(ctx, input)
        with client_secrets(getattr(ctx, "agent", None)):  # its key: never recorded nor emitted
            return await self._heal(ctx, input)

    async def _heal(self, ctx: ToolContext[Any], input: str) -> Any:
        extra = run_context_data(ctx)
        outcome, data = await judge(self.healer, input, (), extra)
        call_id = getattr(ctx, "tool_call_id", None)
        name = self.tool.name
        if isinstance(outcome, Healed):
            # no flags (nothing repaired): the model's own text, untouched
            handed = self._handed(outcome, data) if outcome.flags else input
            if handed is None:
                why = rules_broken(outcome, input, "Send arguments that satisfy rule `{rule}`.")
            elif extra is None:  # validated as the SDK will (lax, no context) but from JSON
                why = ()
            else:  # the run's context was pydantic's validation context: the SDK gives none
                why = await self._as_the_sdk_reads(handed, outcome.value, extra)
            if handed is not None and not why:
                if outcome.flags:
                    if self.log is not None:
                        record = entry(
                            "tool_arguments", name, call_id, input, outcome, value_json=handed
                        )
                        self.log.record(record)
                    ctx.tool_arguments = handed
                return await self.inner(ctx, handed)
            if self.log is not None:
                self.log.record(
                    entry("tool_arguments", name, call_id, input, outcome, diagnostics=why)
                )
            return await self._refuse(ctx, why)
        if self.log is not None:
            self.log.record(entry("tool_arguments", name, call_id, input, outcome))
        bug = _contract_failed(f"the arguments of tool `{name}`", outcome.errors)
        if bug is not None:  # the caller's bug: raised as one, never told to the model
            raise bug
        if outcome.reason is Reason.CONTRACT_ERROR:  # a `"stop"` rule: never asked again
            message = stop_text(name, outcome.errors)  # both redacted, in the client's scope
            raise ContractStopped(message, kept_diagnostics(outcome.errors))
        return await self._refuse(ctx, outcome.errors)

    async def _as_the_sdk_reads(
        self, text: str, value: Any, extra: Mapping[str, Any] | None
    ) -> tuple[Diagnostic, ...]:
        """Why the SDK's own validation of the arguments text `text` (the tool's parameter
        model, `Model(**json.loads(text))`: lax, from Python data, with no validation context)
        refuses it, or gives a value the contracts did not judge (healjson's L2 reads the JSON,
        with the run's context as pydantic's validation context: a validator reading that
        context, or a union, may read it otherwise) that breaks them; () when the tool may run.
        The value read here is thrown away: the SDK's validation is the only one the tool gets.
        A value the contracts judged, or a tool built by hand (its invoker reads the text), ()."""
        model = self.healer.target.type_
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return ()
        data: Any = text
        try:
            data = json.loads(text)
            read = model(**data) if data else model()
        except ValidationError as exc:
            return tuple(schema_diagnostics(exc.errors(), data)) or (not_the_sdks(text),)
        except Exception:  # not a JSON object: the SDK refuses it
            return (not_the_sdks(text),)
        adapter = self.healer.target.adapter
        try:
            dumps = adapter.dump_json(read, by_alias=True) == adapter.dump_json(
                value, by_alias=True
            )
            same = dumps and bool(read == value)
        except Exception:  # a serializer that raises: judge the SDK's value itself
            same = False
        if same or not self.healer.contracts:
            return ()
        report = await judge_output(self.healer, read, extra)
        if report.ok:
            return ()
        name = self.tool.name
        bug = _contract_failed(f"the arguments of tool `{name}`", report.diagnostics)
        if bug is not None:  # the caller's bug: raised as one, never told to the model
            raise bug
        stops = {rule.name for rule in self.healer.contracts if rule.on_fail == "stop"}
        if any(d.rule in stops for d in report.diagnostics):  # never asked again
            message = stop_text(name, report.diagnostics)
            raise ContractStopped(message, kept_diagnostics(report.diagnostics))
        return tuple(report.diagnostics)

    def _handed(self, outcome: Healed[Any], data: Any) -> str | None:
        """The arguments text the tool's own invoker is handed (and validates: the SDK takes
        text only). The JSON data L1 read, which `outcome.value` is healjson's validation of:
        the SDK's validation of it is the only one that reaches the tool, as for clean
        arguments. A value a `"fix"` or `"drop"` rule made has no such data: its JSON, when the
        SDK's reading of it (a check, thrown away) gives the value back; else None."""
        if data is not NOTHING:
            return to_json(data, inf_nan_mode="constants").decode()
        adapter = self.healer.target.adapter
        try:
            text = adapter.dump_json(outcome.value, by_alias=True)
            again = adapter.validate_python(json.loads(text))  # as the SDK reads arguments
            same = adapter.dump_json(again, by_alias=True) == text and bool(again == outcome.value)
        except Exception:  # a serializer or a validator that raises: not handed on either
            return None
        return text.decode() if same else None

    async def _refuse(self, ctx: ToolContext[Any], diagnostics: Sequence[Diagnostic]) -> Any:
        """The SDK's way with a tool failure, healjson's diagnostics as the error."""
        message = refusal_text(self.tool.name, diagnostics)
        error = ModelBehaviorError(message)
        formatter = failure_formatter(self.tool, ctx)
        if formatter is None:  # the tool's failures end the run
            raise error
        if formatter is default_tool_error_function:  # the generic text: ours is the informed one
            return message
        result = formatter(ctx, error)
        return await result if inspect.isawaitable(result) else result


def _healing_tool(
    tool: FunctionTool, rules: tuple[Any, ...], policy: HealPolicy, log: HealLog | None
) -> FunctionTool:
    """A copy of `tool` whose invoker heals first (a tool healed before: its original invoker
    and target, under this configuration)."""
    before = tool.on_invoke_tool
    healed = copy.copy(tool)
    if isinstance(before, _HealingInvoker):
        target, inner = before.healer.target.type_, before.inner
    else:
        target, inner = params_type(tool), healed.on_invoke_tool
    healer = Healer(target, contracts=rules, policy=policy)
    healed.on_invoke_tool = _HealingInvoker(healed, inner, healer, log)
    return healed


class _Healing:
    """One `heal_tools` configuration over the agents a run can reach: the agent given and each
    one it can hand off to, at any depth (an `Agent` in its `handoffs`, the target of a
    `Handoff`, before the run where the SDK says which, else when the handoff returns it), each
    healed once into one clone (a cycle of handoffs ends; a target reached twice is one agent;
    thread-safe). `names`: the function tools healed so far."""

    def __init__(
        self, rules_by_tool: Mapping[str, Rules], policy: HealPolicy, log: HealLog | None
    ) -> None:
        self.rules_by_tool = rules_by_tool
        self.policy = policy
        self.log = log
        self.names: set[str] = set()
        self._clones: dict[int, tuple[weakref.ref[Any], Agent[Any]]] = {}
        self._lock = threading.RLock()

    def tools(self, tools: Iterable[Any]) -> list[Any]:
        """Function tools healed; other tools (hosted, computer, MCP servers) as they are."""
        out: list[Any] = []
        for tool in tools:
            if isinstance(tool, FunctionTool):
                self.names.add(tool.name)
                rules = tuple(self.rules_by_tool.get(tool.name, ()))
                out.append(_healing_tool(tool, rules, self.policy, self.log))
            else:
                out.append(tool)
        return out

    def agent(self, agent: Agent[Any]) -> Agent[Any]:
        """The clone of `agent` whose function tools, and whose handoff targets', are healed."""
        with self._lock:
            found = self._clones.get(id(agent))
            if found is not None and found[0]() is agent:
                return found[1]
            healed = agent.clone(tools=self.tools(agent.tools))
            key = id(agent)  # forgotten with the agent: an id is reused after it is gone
            self._clones[key] = (weakref.ref(agent, lambda _: self._clones.pop(key, None)), healed)
            healed.handoffs = [self._handoff(item) for item in agent.handoffs]
            return healed

    def _handoff(self, item: Any) -> Any:
        """A handoff whose target is healed: an `Agent`, its clone; a `Handoff`, a copy whose
        invoker hands on the clone of the agent its own invoker returns (a handoff healed
        before: the clone that one hands on, so the target is the one its SDK reference
        names; its tools are healed once, under this configuration)."""
        if isinstance(item, Agent):
            return self.agent(item)
        if not isinstance(item, Handoff):
            return item
        healed = copy.copy(item)
        healed.on_invoke_handoff = _HealingHandoff(self, item.on_invoke_handoff)
        ref = getattr(item, "_agent_ref", None)  # the SDK's: the target `handoff()` was given
        target = ref() if callable(ref) else None
        if isinstance(target, Agent):  # the SDK reads the target's tools before it hands off
            healed._agent_ref = weakref.ref(self.agent(target))
        return healed


class _HealingHandoff:
    """A `Handoff`'s `on_invoke_handoff`: the handoff's own invoker, then the agent it returns,
    healed (`_Healing.agent`)."""

    __slots__ = ("healing", "inner")

    def __init__(self, healing: _Healing, inner: Any) -> None:
        self.healing = healing
        self.inner = inner

    async def __call__(self, ctx: RunContextWrapper[Any], input_json: str) -> Any:
        target = await self.inner(ctx, input_json)
        return self.healing.agent(target) if isinstance(target, Agent) else target


@overload
def heal_tools(
    agent_or_tools: Agent[TContext],
    tool_contracts: Mapping[str, Rules] | None = None,
    *,
    policy: HealPolicy | None = None,
    log: HealLog | None = None,
) -> Agent[TContext]: ...
@overload
def heal_tools(
    agent_or_tools: Sequence[Tool],
    tool_contracts: Mapping[str, Rules] | None = None,
    *,
    policy: HealPolicy | None = None,
    log: HealLog | None = None,
) -> list[Tool]: ...
def heal_tools(
    agent_or_tools: Any,
    tool_contracts: Mapping[str, Rules] | None = None,
    *,
    policy: HealPolicy | None = None,
    log: HealLog | None = None,
) -> Any:
    """Function tools whose arguments healjson heals before the SDK validates them.

    Given an `Agent`, returns a clone (`agent.clone(tools=...)`) whose function tools are healed,
    and so are those of every agent it can hand off to, at any depth (the whole run is healed):
    each target (an `Agent` in `handoffs`, or a `Handoff`'s) is a clone healed the same way,
    one per agent (a cycle of handoffs stays one). Given a list of tools, a new list. Other
    tools (hosted, computer, MCP servers) are kept as they are; the agents given are left as
    they were. `tool_contracts` maps a tool's name to its contracts (the tool's own rules,
    checked on the arguments' value: the tool's parameter model instance), for every tool of
    that name; a name no function tool has is a mistake and raises `ValueError`, as does a
    contract naming a field the tool lacks. `policy`: what applies to one reply
    (`on_ambiguity`, `contract_timeout_s`, ...); `log`: a `HealLog` recording each call healed
    or refused.
    """
    rules_by_tool = dict(tool_contracts or {})
    healing = _Healing(rules_by_tool, one_attempt(policy), log)
    is_agent = isinstance(agent_or_tools, Agent)
    healed = healing.agent(agent_or_tools) if is_agent else healing.tools(agent_or_tools)
    unknown = sorted(set(rules_by_tool) - healing.names)
    if unknown:
        raise ValueError(
            f"tool_contracts names {', '.join(map(repr, unknown))}, which is not a function tool "
            f"here; the function tools are: {', '.join(sorted(healing.names)) or 'none'}"
        )
    return healed


# ---------------------------------------------------------------------------------------------
# The final output under contracts: an output guardrail
# ---------------------------------------------------------------------------------------------


def contract_guardrail(
    contracts: Rules,
    *,
    name: str = "healjson contracts",
    policy: HealPolicy | None = None,
    log: HealLog | None = None,
) -> OutputGuardrail[Any]:
    """An `OutputGuardrail` (for `Agent(output_guardrails=[...])`) running healjson `contracts`
    on the final output: the tripwire fires when a blocking rule is broken (a `"fix"` or
    `"drop"` rule that would change the output counts: a guardrail cannot change it), with a
    `ContractReport` as `output_info`; `"warn"` rules are reported and let it pass. The contracts
    judge the output itself, the value the SDK validated (the text for a plain-text agent), the
    run's context as `ctx.extra` when it is a mapping; one that fails as code raises `UserError`.
    """
    rules = tuple(contracts)
    if not rules:
        raise ValueError("contract_guardrail needs at least one contract")
    judges = Judges(rules, one_attempt(policy))

    async def check_contracts(
        context: RunContextWrapper[Any], agent: Agent[Any], output: Any
    ) -> GuardrailFunctionOutput:
        with client_secrets(agent):  # the client's key: never recorded nor emitted
            return await check(context, agent, output)

    async def check(
        context: RunContextWrapper[Any], agent: Agent[Any], output: Any
    ) -> GuardrailFunctionOutput:
        schema = output_schema(agent)
        healer = judges.for_type(str if schema is None else schema.output_type)
        report = await judge_output(healer, output, run_context_data(context))
        if not report.ok:
            name = str(getattr(agent, "name", "agent"))
            if log is not None:
                text = healer.target.adapter.dump_json(output, by_alias=True).decode()
                found = report.diagnostics
                log.record(AgentRepair("final_output", name, None, False, text, diagnostics=found))
            bug = _contract_failed(f"the final output of agent `{name}`", report.diagnostics)
            if bug is not None:  # the caller's bug, not a breach by the output
                raise bug
        # kept in the run's results and state, shown outside the run: redacted with the
        # client's secrets here, in its scope (the SDK's tripwire reads `ok`)
        shown = kept_report(report)
        return GuardrailFunctionOutput(output_info=shown, tripwire_triggered=not report.ok)

    return OutputGuardrail(guardrail_function=check_contracts, name=name)
