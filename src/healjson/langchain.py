"""`healjson.langchain` (extra `langchain`): heal what a LangChain v1 agent's model answers.

    agent = create_agent(
        model,
        tools=[search],
        response_format=ToolStrategy(Report),
        middleware=[HealMiddleware(contracts=[...], tool_contracts={"search": [...]})],
    )
    result = agent.invoke({"messages": [...]}, context={...})
    result["structured_response"]  # a Report that passed the schema and every contract, or None
    result["healjson_outcome"]     # Healed / Degraded

`HealMiddleware` is an `AgentMiddleware` (`wrap_model_call` and `awrap_model_call`: sync and
async agents alike). Each model step goes through healjson's own loops, with the agent's model
call (the middleware's `handler`) as the call:

* **The structured response** (`response_format=`: `ToolStrategy`, `ProviderStrategy`, or a
  bare schema): the answer (the structured tool call's arguments, or the message text) is judged
  by a `healjson.Healer` for the schema: L1 locally (a code fence, prose around the JSON, a
  trailing comma, a key in another case, a JSON string inside a field, a wrapping object), then
  the schema and the `contracts`. What L1 cannot save is asked again with healjson's bounded
  repair request (the agent's messages, the answer quoted back, its diagnostics), not with
  LangChain's error message, and within `policy.max_attempts` calls in all. The value is the
  state's `structured_response`; a run that cannot be healed ends (`jump_to` end) with
  `structured_response` None and the `Degraded` outcome in the state: never a wrong value,
  never an exception for what the model did.
* **Tool calls** (the agent's own tools, `invalid_tool_calls` included): before the tools run,
  each call's arguments are judged against its tool's schema (`tool_call_schema`) and the
  tool's `tool_contracts`: a local repair is applied to the call the tool gets; calls that
  cannot be saved (and calls to tools the agent lacks) are asked again alone, the valid ones
  kept. Calls that still fail end the run with the `Degraded` outcome in the state.

`context=`: pydantic's validation context (and the contracts' `ctx.extra`) in every validation
of the run; by default the run's own context (`agent.invoke(..., context=...)`) when it is a
mapping (a dataclass or pydantic model is read field by field); a mapping given here wins, and a
callable `(runtime) -> Mapping | None` chooses per run.

The state (`HealState`) holds `healjson_outcome` (the outcome of the last structured response,
or the `Degraded` outcome that ended the run) and `healjson_tool_outcome` (that of the last
step's tool calls). Every run is a healjson run: its events (`healjson.set_logger`) and, with
the `otel` extra, its spans carry each attempt, repair and outcome. The outcomes are Python
objects: an agent with a checkpointer stores them as it stores other state values.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal, NotRequired

from pydantic import BaseModel
from pydantic_core import to_jsonable_python

from . import Degraded, Healed, Healer, HealPolicy, Outcome, Reply
from ._frameworks.core import (
    FirstFromHand,
    Target,
    ToolCalls,
    aheal_tool_calls,
    checked_policy,
    heal_tool_calls,
    missing_extra,
    render_diagnostics,
    rules_of,
    target_for,
    tool_spec,
)

try:
    from langchain.agents.middleware.types import (
        AgentMiddleware,
        AgentState,
        ExtendedModelResponse,
        ModelRequest,
        ModelResponse,
        OmitFromSchema,
    )
    from langchain.agents.structured_output import (
        AutoStrategy,
        ProviderStrategy,
        StructuredOutputError,
        ToolStrategy,
    )
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.messages.tool import tool_call
    from langchain_core.tools import BaseTool
    from langgraph.types import Command
except ImportError as exc:  # pragma: no cover - the extra is installed wherever tests run
    raise ImportError(missing_extra("langchain", "langchain")) from exc

from ._frameworks.lc_messages import as_dicts, call_text, reply_of, turns

__all__ = ["OUTCOME_KEY", "TOOL_OUTCOME_KEY", "HealMiddleware", "HealState"]

OUTCOME_KEY = "healjson_outcome"
"""The state key of the last structured response's outcome (or of the `Degraded` that ended
the run)."""
TOOL_OUTCOME_KEY = "healjson_tool_outcome"
"""The state key of the outcome of the last step's tool calls."""

_MAX_KEPT = 256  # healers and tool targets remembered per middleware
_KEPT_OUT = OmitFromSchema(input=True, output=False)

ContextArg = Mapping[str, Any] | Callable[[Any], Mapping[str, Any] | None] | None
Handler = Callable[[ModelRequest[Any]], ModelResponse[Any]]
AsyncHandler = Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]]
Result = ModelResponse[Any] | AIMessage | ExtendedModelResponse[Any]


class HealState(AgentState[Any]):
    """The agent state with healjson's outcomes (`OUTCOME_KEY`, `TOOL_OUTCOME_KEY`)."""

    healjson_outcome: NotRequired[Annotated[Any, _KEPT_OUT]]
    healjson_tool_outcome: NotRequired[Annotated[Any, _KEPT_OUT]]


class HealMiddleware(AgentMiddleware[HealState, Any, Any]):
    """Heal the structured response and the tool calls of a LangChain v1 agent (see the
    module's documentation). Every argument is optional.

    `contracts`: healjson rules over the structured response (the value the run returns).
    `tool_contracts`: per tool name, rules over that tool's validated arguments.
    `policy`: a `healjson.HealPolicy` (`max_attempts`: model calls per step, the first one
    included; budgets, deadline, ambiguity). `context`: see the module's documentation."""

    state_schema = HealState

    def __init__(
        self,
        *,
        contracts: Iterable[Any] = (),
        policy: HealPolicy | None = None,
        tool_contracts: Mapping[str, Iterable[Any]] | None = None,
        context: ContextArg = None,
    ) -> None:
        super().__init__()
        self.policy = checked_policy(policy)
        self.contracts = rules_of(contracts)
        self.tool_contracts: dict[str, tuple[Any, ...]] = {}
        for name, rules in (tool_contracts or {}).items():
            if not isinstance(name, str):
                raise TypeError(f"tool_contracts: keys are tool names, got {name!r}")
            self.tool_contracts[name] = rules_of(rules)
        if context is not None and not isinstance(context, Mapping) and not callable(context):
            raise TypeError(
                "context must be a mapping, a callable (runtime) -> mapping, or None, got "
                f"{type(context).__name__}"
            )
        self.context = context
        self.tools: list[BaseTool] = []
        self._kept: dict[tuple[str, int], tuple[Any, Any]] = {}
        self._lock = threading.Lock()

    def __getstate__(self) -> dict[str, Any]:  # copied or pickled: the caches start anew
        return {k: v for k, v in self.__dict__.items() if k not in ("_lock", "_kept")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._kept = {}
        self._lock = threading.Lock()

    # -- the hooks ----------------------------------------------------------------------------

    def wrap_model_call(self, request: ModelRequest[Any], handler: Handler) -> Result:
        step = _Step(self, request)
        turn = _ask(handler, request)
        kind = step.kind(turn.ai)
        if kind is None:
            return turn.response if turn.response is not None else _bare(turn.ai)
        step.first = step.last = turn.ai

        def ask(extra: list[dict[str, Any]]) -> Reply:
            return step.read(_ask(handler, step.again(extra)).ai, kind)

        call = FirstFromHand(step.read(turn.ai, kind), len(step.original), ask)
        if kind == "structured":
            healer = self._healer(step.schema)
            return step.structured(healer.run(call, step.original, context=step.context))
        spec = step.tool_spec()
        return step.tool_calls(heal_tool_calls(spec, call, step.original, step.context))

    async def awrap_model_call(self, request: ModelRequest[Any], handler: AsyncHandler) -> Result:
        step = _Step(self, request)
        turn = await _aask(handler, request)
        kind = step.kind(turn.ai)
        if kind is None:
            return turn.response if turn.response is not None else _bare(turn.ai)
        step.first = step.last = turn.ai

        async def ask(extra: list[dict[str, Any]]) -> Reply:
            return step.read((await _aask(handler, step.again(extra))).ai, kind)

        call = FirstFromHand(step.read(turn.ai, kind), len(step.original), ask)
        if kind == "structured":
            healer = self._healer(step.schema)
            return step.structured(await healer.arun(call, step.original, context=step.context))
        spec = step.tool_spec()
        return step.tool_calls(await aheal_tool_calls(spec, call, step.original, step.context))

    # -- what is kept between steps -----------------------------------------------------------

    def _keep(self, kind: str, key: Any, make: Callable[[], Any]) -> Any:
        """One healer or target per schema (or tool) object, built once."""
        slot = (kind, id(key))
        with self._lock:
            found = self._kept.get(slot)
            if found is not None and found[0] is key:
                return found[1]
        made = make()
        with self._lock:
            if len(self._kept) >= _MAX_KEPT:
                self._kept.clear()
            self._kept[slot] = (key, made)
        return made

    def _healer(self, schema: Any) -> Healer[Any]:
        healer: Healer[Any] = self._keep(
            "healer", schema, lambda: Healer(schema, contracts=self.contracts, policy=self.policy)
        )
        return healer

    def _tool_target(self, tool: BaseTool) -> Target[Any]:
        target: Target[Any] = self._keep("tool", tool, lambda: target_for(tool.tool_call_schema))
        return target

    def _context(self, runtime: Any) -> Mapping[str, Any] | None:
        given = self.context
        if isinstance(given, Mapping):
            return given
        found = given(runtime) if callable(given) else getattr(runtime, "context", None)
        return _as_mapping(found)


class _Turn:
    """One model call of the agent: LangChain's response (None: it raised its structured-output
    error) and the model's message."""

    __slots__ = ("ai", "response")

    def __init__(self, response: ModelResponse[Any] | None, ai: AIMessage | None) -> None:
        self.response = response
        self.ai = ai


def _ask(handler: Handler, request: ModelRequest[Any]) -> _Turn:
    try:
        response = handler(request)
    except StructuredOutputError as exc:  # its message is about the answer healjson judges
        return _Turn(None, exc.ai_message)
    return _Turn(response, _ai_of(response))


async def _aask(handler: AsyncHandler, request: ModelRequest[Any]) -> _Turn:
    try:
        response = await handler(request)
    except StructuredOutputError as exc:
        return _Turn(None, exc.ai_message)
    return _Turn(response, _ai_of(response))


def _ai_of(response: Any) -> AIMessage | None:
    if isinstance(response, AIMessage):
        return response
    for message in getattr(response, "result", ()):
        if isinstance(message, AIMessage):
            return message
    return None


def _bare(ai: AIMessage | None) -> ModelResponse[Any]:
    return ModelResponse(result=[ai] if ai is not None else [])


class _Step:
    """One model step: what the request declares, and the outcome turned into the step's
    result (messages, structured response, state update)."""

    def __init__(self, owner: HealMiddleware, request: ModelRequest[Any]) -> None:
        self.owner = owner
        self.request = request
        self.names, self.schema, self.tool_message = owner._keep(
            "format", request.response_format, lambda: _format(request.response_format)
        )
        system = [request.system_message] if request.system_message is not None else []
        self.original = as_dicts([*system, *request.messages])
        self.context = owner._context(request.runtime)
        self.declared = {tool.name: tool for tool in request.tools if isinstance(tool, BaseTool)}
        self.opaque = len(self.declared) < len(request.tools)  # provider tools (dicts)
        self.first: AIMessage | None = None
        self.last: AIMessage | None = None

    def kind(self, ai: AIMessage | None) -> Literal["structured", "tools"] | None:
        """What this turn answers: the structured response (a structured call, or a text
        answer where a response format is declared), the agent's tools, or neither."""
        if ai is None:
            return None
        calls = [*ai.tool_calls, *ai.invalid_tool_calls]
        structured = not calls or any(call.get("name") in self.names for call in calls)
        if self.request.response_format is not None and structured:
            return "structured"
        if not calls or not self.declared:
            return None
        if self.opaque and any(call.get("name") not in self.declared for call in calls):
            return None  # a provider tool's call: not the agent's to judge
        return "tools"

    def again(self, extra: list[dict[str, Any]]) -> ModelRequest[Any]:
        """The request of a repair: the agent's messages, then healjson's repair turns."""
        request = self.request
        return request.override(messages=[*request.messages, *turns(extra)])

    def read(self, ai: AIMessage | None, kind: str) -> Reply:
        """One turn as healjson judges it."""
        if ai is not None:
            self.last = ai
        if ai is None:
            return Reply(None)
        if kind == "tools":
            return reply_of(ai, ai.text or None, [*ai.tool_calls, *ai.invalid_tool_calls])
        calls = self._structured_calls(ai)
        text = "\n".join(call_text(call) for call in calls) if calls else ai.text
        return reply_of(ai, text)

    def _structured_calls(self, ai: AIMessage | None) -> list[Any]:
        if ai is None:
            return []
        calls = [*ai.tool_calls, *ai.invalid_tool_calls]
        return [call for call in calls if call.get("name") in self.names]

    def tool_spec(self) -> Any:
        owner = self.owner
        targets = {name: owner._tool_target(tool) for name, tool in self.declared.items()}
        return tool_spec(targets, owner.tool_contracts, owner.policy)

    # -- the step's result --------------------------------------------------------------------

    def structured(self, outcome: Outcome[Any]) -> ExtendedModelResponse[Any]:
        ai = self.last
        calls = self._structured_calls(ai)
        if isinstance(outcome, Healed) and ai is not None:
            value = outcome.value
            messages: list[BaseMessage] = [ai]
            if calls:
                call = calls[0]
                healed = tool_call(name=call["name"], args=_data(value), id=call.get("id"))
                others = [c for c in ai.tool_calls if c.get("name") not in self.names]
                invalid = [c for c in ai.invalid_tool_calls if c.get("name") not in self.names]
                update = {"tool_calls": [healed, *others], "invalid_tool_calls": invalid}
                content = self.tool_message or f"Returning structured response: {value}"
                messages = [
                    ai.model_copy(update=update),
                    ToolMessage(content=content, tool_call_id=call.get("id"), name=call["name"]),
                ]
            return ExtendedModelResponse(
                model_response=ModelResponse(result=messages, structured_response=value),
                command=Command(update={OUTCOME_KEY: outcome}),
            )
        return self._ended(outcome, ai, calls, {OUTCOME_KEY: outcome})

    def tool_calls(self, outcome: Outcome[ToolCalls]) -> ExtendedModelResponse[Any]:
        ai = self.first
        if isinstance(outcome, Healed) and ai is not None:
            made = [
                tool_call(name=call.name, args=_data(call.arguments), id=call.id)
                for call in outcome.value.calls
            ]
            healed = ai.model_copy(update={"tool_calls": made, "invalid_tool_calls": []})
            return ExtendedModelResponse(
                model_response=ModelResponse(result=[healed]),
                command=Command(update={TOOL_OUTCOME_KEY: outcome}),
            )
        calls = [*ai.tool_calls, *ai.invalid_tool_calls] if ai is not None else []
        update = {TOOL_OUTCOME_KEY: outcome, OUTCOME_KEY: outcome}
        return self._ended(outcome, ai, calls, update)

    def _ended(
        self,
        outcome: Outcome[Any],
        ai: AIMessage | None,
        calls: Sequence[Mapping[str, Any]],
        update: dict[str, Any],
    ) -> ExtendedModelResponse[Any]:
        """The run ends here: the model's last message, each of its calls answered with why
        nothing was run (the history stays one a model accepts), the outcome in the state."""
        note = _note(outcome)
        messages: list[BaseMessage] = [ai if ai is not None else _failed_turn(note)]
        messages.extend(
            ToolMessage(
                content=note,
                tool_call_id=str(call.get("id")),
                name=call.get("name"),
                status="error",
            )
            for call in calls
        )
        return ExtendedModelResponse(
            model_response=ModelResponse(result=messages),
            command=Command(update={**update, "jump_to": "end"}),
        )


def _format(response_format: Any) -> tuple[frozenset[str], Any, str | None]:
    """The structured-output tool names, the schema and the tool message of a response
    format (a bare schema is LangChain's `AutoStrategy`: a tool or the provider's format)."""
    if response_format is None:
        return frozenset(), None, None
    if isinstance(response_format, ToolStrategy):
        names = frozenset(spec.name for spec in response_format.schema_specs)
        return names, response_format.schema, response_format.tool_message_content
    if isinstance(response_format, ProviderStrategy):
        return frozenset(), response_format.schema, None
    schema = (
        response_format.schema if isinstance(response_format, AutoStrategy) else response_format
    )
    names = frozenset(spec.name for spec in ToolStrategy(schema).schema_specs)
    return names, schema, None


def _data(value: Any) -> Any:
    """A validated value as the JSON data a tool (or the history) is given, by alias."""
    if isinstance(value, Mapping):
        return dict(to_jsonable_python(value, by_alias=True))
    return to_jsonable_python(value, by_alias=True)


def _note(outcome: Outcome[Any]) -> str:
    if not isinstance(outcome, Degraded):  # pragma: no cover - only a Degraded ends a run
        return "healjson: the run ended"
    calls = len(outcome.attempts)
    lines = [
        f"healjson: no valid answer after {calls} model call{'s' if calls != 1 else ''} "
        f"({outcome.reason}); nothing was run.",
        *render_diagnostics(outcome.errors),
    ]
    return "\n".join(lines)


def _failed_turn(note: str) -> AIMessage:
    return AIMessage(content=note)


def _as_mapping(found: Any) -> Mapping[str, Any] | None:
    """The run's context as a mapping of data (a dataclass or pydantic model field by field)."""
    if found is None or isinstance(found, Mapping):
        return found
    if dataclasses.is_dataclass(found) and not isinstance(found, type):
        return {field.name: getattr(found, field.name) for field in dataclasses.fields(found)}
    if isinstance(found, BaseModel):
        return dict(found)
    raise TypeError(
        f"healjson needs the run's context as a mapping, got {type(found).__name__}: pass "
        "HealMiddleware(context=lambda runtime: {...}) to choose what the validators see"
    )
