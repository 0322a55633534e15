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
  repair request (the agent's messages, the answer quoted back, its diagnostics; the response
  format offered alone, not the agent's tools), within `policy.max_attempts` calls in all. The
  value is the state's `structured_response`; a run that cannot be healed ends (`jump_to` end)
  with `structured_response` None and the `Degraded` outcome in the state: never a wrong value,
  never an exception for what the model did. A union (`ToolStrategy(A | B)`, each member its
  own tool): the value is the member whose tool the model called, healed against that member
  alone (its repair offers that tool alone; a contract naming fields judges the members that
  have them). A turn of several different structured calls (two members, or one with other
  arguments) is asked again (rule `one_structured_response`); the same call twice is one.
* **Tool calls** (the agent's own tools, `invalid_tool_calls` included): before the tools run,
  each call's arguments are judged against its tool's schema (`tool_call_schema`) and the
  tool's `tool_contracts`: a local repair is applied to the call the tool gets, as JSON data
  (`_frameworks.lc_calls`: the model's own arguments, or the data L1 read; never a dump of the
  validated instance, which the tool node validates again); calls that cannot be saved (and
  calls to tools the agent lacks) are asked again alone, the valid ones kept (the agent's
  tools offered, not the response format). Calls that still fail end the run with the
  `Degraded` outcome in the state.

Every model call of a step is made by healjson's driver, the first one included: the step's
first call is made in the run its request calls for (the structured response's when there is
one, else the tools'), and an answer that belongs to another run (the agent's tools, another
member of a union) is handed on to it as its first call (`_frameworks.core.handed_over`), with
the time it took and the step's deadline; the run that made the call ends there, handing its
spans on (`events.handed_on`): the step has the spans of one run, the answer's. A provider's
failure on any call (LangChain's `ModelError`s included) ends the step `Degraded` with its
reason, and `policy.deadline_s` bounds the whole step. The run's parameters reach the request
as model settings (LangChain binds them to the chat model's call): `escalate_model`'s `model`
on the last attempt.

`context=`: pydantic's validation context (and the contracts' `ctx.extra`) in every validation
of the run; by default the run's own context (`agent.invoke(..., context=...)`) when it is a
mapping (a dataclass or pydantic model is read field by field); a mapping given here wins, and a
callable `(runtime) -> Mapping | None` chooses per run.

The state (`HealState`) holds `healjson_outcome` (the outcome of the last structured response,
or the `Degraded` outcome that ended the run) and `healjson_tool_outcome` (that of the last
step's tool calls). Every run is a healjson run: its events (`healjson.set_logger`) and, with
the `otel` extra, its spans carry each attempt, repair and outcome. The outcomes are Python
objects, in the state `invoke` / `ainvoke` / `stream` return; LangGraph's checkpoint serializer
cannot rebuild them (it calls a dataclass with every field, derived ones included), so a state
read back from a checkpointer (`get_state`, a resumed thread) holds a dict of the outcome's
fields there: keep `outcome.to_dict()` (`healjson.outcome_from_dict` rebuilds it) to keep an
outcome past the run.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal, NamedTuple, NotRequired

from pydantic import BaseModel

from . import Degraded, Healed, Healer, HealPolicy, Outcome, Reply
from ._frameworks.core import (
    Evaluation,
    HandOver,
    Run,
    Target,
    ToolCalls,
    accepted_evaluations,
    checked_policy,
    drive_async,
    drive_sync,
    handed_on,
    handed_over,
    missing_extra,
    render_diagnostics,
    rules_of,
    start_tools,
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
    from langchain.agents.structured_output import StructuredOutputError
    from langchain_core.exceptions import ModelError, ModelRefusalError
    from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
    from langchain_core.messages.tool import tool_call
    from langchain_core.tools import BaseTool
    from langgraph.types import Command
except ImportError as exc:  # pragma: no cover - the extra is installed wherever tests run
    raise ImportError(missing_extra("langchain", "langchain")) from exc

from ._frameworks.lc_answers import note_answers, one_answer
from ._frameworks.lc_bodies import aread_through, read_through
from ._frameworks.lc_calls import call_arguments, json_data
from ._frameworks.lc_messages import StructuredFormat, as_dicts, call_text, reply_of, turns

__all__ = ["OUTCOME_KEY", "TOOL_OUTCOME_KEY", "HealMiddleware", "HealState"]

OUTCOME_KEY = "healjson_outcome"
"""The state key of the last structured response's outcome (or the `Degraded` ending a run)."""
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
        # LangChain's model errors (`ModelError`: a chat model's HTTP, connection, timeout and
        # refusal failures, whatever its provider) are the provider's: the run degrades on them
        errors = (*self.policy.provider_errors, ModelError)
        self._policy = dataclasses.replace(self.policy, provider_errors=errors)
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
        self.__dict__.update(state, _kept={}, _lock=threading.Lock())

    def wrap_model_call(self, request: ModelRequest[Any], handler: Handler) -> Result:
        step = _Step(self, request)
        if not step.heals:
            return handler(request)
        owner = step.default()
        run = step.start(owner)
        with accepted_evaluations() as step.accepted:  # the JSON data each tool gets
            try:
                outcome: Outcome[Any] = drive_sync(run, _Calls(step, handler, owner))
            except _HandOver as moved:
                with handed_on(run.built):  # the run the answer is handed to goes on in its spans
                    if moved.owner is None:
                        return moved.passed()
                    owner = moved.owner
                    run = step.handed(owner, moved)
                    outcome = drive_sync(run, _Calls(step, handler, owner, made=1))
        return step.result(owner, outcome)

    async def awrap_model_call(self, request: ModelRequest[Any], handler: AsyncHandler) -> Result:
        step = _Step(self, request)
        if not step.heals:
            return await handler(request)
        owner = step.default()
        run = step.start(owner)
        with accepted_evaluations() as step.accepted:
            try:
                outcome: Outcome[Any] = await drive_async(run, _AsyncCalls(step, handler, owner))
            except _HandOver as moved:
                with handed_on(run.built):
                    if moved.owner is None:
                        return moved.passed()
                    owner = moved.owner
                    run = step.handed(owner, moved)
                    outcome = await drive_async(run, _AsyncCalls(step, handler, owner, made=1))
        return step.result(owner, outcome)

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

    def _healer(self, schema: Any, fmt: StructuredFormat) -> Healer[Any]:
        """The healer of `schema`: the response format's, or one member's of a union (whose
        contracts are those whose fields it has)."""
        rules = self.contracts
        if schema is not fmt.schema:
            rules = self._keep("rules", fmt, lambda: fmt.rules_by_member(self.contracts))[schema]
        made = lambda: Healer(schema, contracts=(*rules, one_answer), policy=self._policy)  # noqa: E731
        healer: Healer[Any] = self._keep("healer", schema, made)
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


class _Owner(NamedTuple):
    """The run a model turn belongs to: the structured response (`member`: the structured tool
    the turn called, a union's member; None: the whole format, for a text answer or one not
    yet seen) or the agent's tools."""

    kind: Literal["structured", "tools"]
    member: str | None = None


class _Turn:
    """One model call of the agent: LangChain's response (None: it raised its structured-output
    error) and the model's message."""

    __slots__ = ("ai", "response")

    def __init__(self, response: ModelResponse[Any] | None, ai: AIMessage | None) -> None:
        self.response = response
        self.ai = ai


class _HandOver(HandOver):
    """The first answer of a step's run belongs to another run (`owner`; None: to none, the
    turn passes through untouched): raised out of the driver, which re-raises what is not the
    provider's, so the step hands the answer on."""

    def __init__(self, owner: _Owner | None, turn: _Turn, elapsed_s: float) -> None:
        super().__init__("handed over")
        self.owner = owner
        self.turn = turn
        self.elapsed_s = elapsed_s

    def passed(self) -> Result:
        turn, ai = self.turn, self.turn.ai
        if turn.response is not None:
            return turn.response
        return ModelResponse(result=[ai] if ai is not None else [])


class _Calls:
    """A run's `call`: each model call of the run made by the driver through the agent's
    handler (the messages healjson added and the run's parameters applied to the request);
    `made`: the step's calls already made (a handed-over run's first one)."""

    __slots__ = ("handler", "made", "owner", "step")

    def __init__(self, step: _Step, handler: Any, owner: _Owner, made: int = 0) -> None:
        self.step = step
        self.handler = handler
        self.owner = owner
        self.made = made

    def request(self, messages: list[dict[str, Any]], params: Mapping[str, Any]) -> Any:
        return self.step.again(messages[len(self.step.original) :], params, self.owner)

    def answered(self, turn: _Turn, started: float) -> Reply:
        """The turn as this run judges it; the step's first turn may belong to another."""
        self.made += 1
        if self.made == 1:
            found = self.step.owner_of(turn.ai)
            if found != self.owner:
                raise _HandOver(found, turn, time.perf_counter() - started)
        return self.step.read(turn.ai, self.owner)

    def __call__(self, messages: list[dict[str, Any]], **params: Any) -> Reply:
        started = time.perf_counter()
        return self.answered(_ask(self.handler, self.request(messages, params)), started)


class _AsyncCalls(_Calls):
    __slots__ = ()

    async def __call__(self, messages: list[dict[str, Any]], **params: Any) -> Reply:  # type: ignore[override]
        started = time.perf_counter()
        turn = await _aask(self.handler, self.request(messages, params))
        return self.answered(turn, started)


def _ask(handler: Handler, request: ModelRequest[Any]) -> _Turn:
    try:  # a 2xx body that is no reply, whatever the chat model raised on it: the provider's
        response = read_through(handler, request, (ModelError,))
    except StructuredOutputError as exc:  # its message is about the answer healjson judges
        return _Turn(None, exc.ai_message)
    except ModelRefusalError as exc:
        return _refused(exc)
    return _Turn(response, _ai_of(response))


async def _aask(handler: AsyncHandler, request: ModelRequest[Any]) -> _Turn:
    try:
        response = await aread_through(handler, request, (ModelError,))
    except StructuredOutputError as exc:
        return _Turn(None, exc.ai_message)
    except ModelRefusalError as exc:
        return _refused(exc)
    return _Turn(response, _ai_of(response))


def _refused(exc: ModelRefusalError) -> _Turn:
    """A refusal LangChain raised on (its `ModelRefusalMiddleware`, a chat model's structured
    path): the model's message, read as the refusal it is (the policy's `on_refusal`); without
    the message, the provider's failure it reports."""
    ai = exc.raw_message
    if not isinstance(ai, AIMessage):
        raise exc
    if not ai.additional_kwargs.get("refusal"):
        kwargs = {**ai.additional_kwargs, "refusal": str(exc)}
        ai = ai.model_copy(update={"additional_kwargs": kwargs})
    return _Turn(None, ai)


def _ai_of(response: Any) -> AIMessage | None:
    if isinstance(response, AIMessage):
        return response
    for message in getattr(response, "result", ()):
        if isinstance(message, AIMessage):
            return message
    return None


class _Step:
    """One model step: what the request declares, the runs its turns belong to, and the
    outcome turned into the step's result (messages, structured response, state update)."""

    def __init__(self, owner: HealMiddleware, request: ModelRequest[Any]) -> None:
        self.started = time.monotonic()  # the policy's deadline covers the whole step
        self.owner = owner
        self.request = request
        self.format: StructuredFormat = owner._keep(
            "format", request.response_format, lambda: StructuredFormat(request.response_format)
        )
        system = [request.system_message] if request.system_message is not None else []
        self.original = as_dicts([*system, *request.messages])
        self.context = owner._context(request.runtime)
        self.declared = {tool.name: tool for tool in request.tools if isinstance(tool, BaseTool)}
        self.opaque = len(self.declared) < len(request.tools)  # provider tools (dicts)
        self.first: AIMessage | None = None
        self.last: AIMessage | None = None
        self.accepted: list[Evaluation] = []  # the evaluations that accepted a value

    @property
    def heals(self) -> bool:
        """A structured response or tools of the agent's own: anything for healjson to judge."""
        return self.request.response_format is not None or bool(self.declared)

    def default(self) -> _Owner:
        """The run the step's first call is made in, before its answer tells whose it is."""
        if self.request.response_format is not None:
            return _Owner("structured", self.format.sole)
        return _Owner("tools")

    def owner_of(self, ai: AIMessage | None) -> _Owner | None:
        """The run a turn belongs to: the structured response (a structured call, or a text
        answer where a response format is declared), the agent's tools, or none."""
        if ai is None:
            return self.default()
        calls = [*ai.tool_calls, *ai.invalid_tool_calls]
        members = self.format.members
        if self.request.response_format is not None:
            named = {call.get("name"): 0 for call in calls if call.get("name") in members}
            if named:  # the member whose tool the model called (of several: the whole format)
                return _Owner("structured", next(iter(named)) if len(named) == 1 else None)
            if not calls:
                return _Owner("structured", self.format.sole)
        if not calls or not self.declared:
            return None
        if self.opaque and any(call.get("name") not in self.declared for call in calls):
            return None  # a provider tool's call: not the agent's to judge
        return _Owner("tools")

    def start(self, owner: _Owner) -> Run:
        """The run `owner` names, not yet driven: its first call is the driver's."""
        if owner.kind == "tools":
            return start_tools(self.tool_spec(), self.original, context=self.context)
        return self.healer(owner).start(self.original, context=self.context)

    def handed(self, owner: _Owner, moved: _HandOver) -> Run:
        """The run `owner` names, going on from the first call another run made."""
        self.first = moved.turn.ai
        first = self.read(moved.turn.ai, owner)
        spec = self.tool_spec() if owner.kind == "tools" else self.healer(owner).spec
        elapsed, started = moved.elapsed_s, self.started
        return handed_over(
            spec, self.original, self.context, first, elapsed_s=elapsed, started=started
        )

    def healer(self, owner: _Owner) -> Healer[Any]:
        fmt = self.format
        schema = fmt.schema if owner.member is None else fmt.members[owner.member]
        return self.owner._healer(schema, fmt)

    def again(
        self, extra: list[dict[str, Any]], params: Mapping[str, Any], owner: _Owner
    ) -> ModelRequest[Any]:
        """The request of one call of a run: the agent's messages, then healjson's repair turns,
        the run's parameters (`escalate_model`'s `model`) as model settings; a repair offers
        what its run judges alone: the agent's tools to a tool-call run, the response format
        (a union member's: its tool) to a structured answer."""
        request = self.request
        changes: dict[str, Any] = {}
        if extra:
            changes["messages"] = [*request.messages, *turns(extra)]
            if owner.kind == "tools":
                changes["response_format"] = None
            else:
                narrowed = self.format.narrowed.get(owner.member, request.response_format)
                changes.update(tools=[], tool_choice=None, response_format=narrowed)
        if params:
            changes["model_settings"] = {**request.model_settings, **params}
        return request.override(**changes) if changes else request

    def read(self, ai: AIMessage | None, owner: _Owner) -> Reply:
        """One turn as the run of `owner` judges it."""
        if ai is None:
            return Reply(None)
        self.last = ai
        if self.first is None:
            self.first = ai
        if owner.kind == "tools":
            return reply_of(ai, ai.text or None, [*ai.tool_calls, *ai.invalid_tool_calls])
        note_answers(self._structured_calls(ai, _Owner("structured")))  # every member's
        calls = self._structured_calls(ai, owner)
        text = "\n".join(call_text(call) for call in calls) if calls else ai.text
        return reply_of(ai, text)

    def _structured_calls(self, ai: AIMessage | None, owner: _Owner) -> list[Any]:
        """The turn's structured calls: to `owner`'s member only, when it names one."""
        if ai is None:
            return []
        names = self.format.members if owner.member is None else (owner.member,)
        return [c for c in [*ai.tool_calls, *ai.invalid_tool_calls] if c.get("name") in names]

    def tool_spec(self) -> Any:
        owner = self.owner
        targets = {name: owner._tool_target(tool) for name, tool in self.declared.items()}
        return tool_spec(targets, owner.tool_contracts, owner._policy)

    # -- the step's result --------------------------------------------------------------------

    def result(self, owner: _Owner, outcome: Outcome[Any]) -> ExtendedModelResponse[Any]:
        if owner.kind == "tools":
            return self.tool_calls(outcome)
        return self.structured(outcome, owner)

    def structured(self, outcome: Outcome[Any], owner: _Owner) -> ExtendedModelResponse[Any]:
        ai = self.last
        calls = self._structured_calls(ai, owner)
        outcome = self.format.marked(outcome, calls)  # a recovery from text says so
        if isinstance(outcome, Healed) and ai is not None:
            value = outcome.value
            messages: list[BaseMessage] = [ai]
            if calls:
                call = calls[0]
                names = self.format.members
                healed = tool_call(name=call["name"], args=json_data(value), id=call.get("id"))
                others = [c for c in ai.tool_calls if c.get("name") not in names]
                invalid = [c for c in ai.invalid_tool_calls if c.get("name") not in names]
                update = {"tool_calls": [healed, *others], "invalid_tool_calls": invalid}
                content = self.format.tool_message or f"Returning structured response: {value}"
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
            made = [  # JSON data, never a dump of the validated arguments (`lc_calls`)
                tool_call(name=call.name, args=call_arguments(call, self.accepted), id=call.id)
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
        nothing was run (the history stays one a model accepts), the outcome in the state.
        A step whose model call gave no message (the provider failed, the deadline passed)
        ends with healjson's note as its message."""
        note = _note(outcome)
        messages: list[BaseMessage] = [ai if ai is not None else AIMessage(content=note)]
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
