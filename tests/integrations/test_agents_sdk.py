"""`healjson.agents` end to end: the real OpenAI Agents SDK (and the real openai client) over real
HTTP against `ScriptedServer`, with `Runner.run` (async) and `Runner.run_sync`.

Every scenario is run through the SDK alone too, so each test states what healjson changes: the
model calls the server counted, what the tool executed, what the model was told, the final
output or the exception. The scripted model (`Model`) serves a run's turns in order and, like a
real one, sends a tool call again (clean) when the tool's result to it is not the tool's `OK`
answer. Tracing is disabled: nothing leaves the machine.
"""

from __future__ import annotations

import asyncio
import json
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

agents = pytest.importorskip("agents")

from agents import (  # noqa: E402
    Agent,
    FunctionTool,
    ModelBehaviorError,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    OutputGuardrailTripwireTriggered,
    RunContextWrapper,
    Runner,
    RunResult,
    function_tool,
)
from agents.tool_context import ToolContext  # noqa: E402
from openai import AsyncOpenAI, DefaultAsyncHttpxClient  # noqa: E402

import healjson  # noqa: E402
from healjson import Diagnostic, Violation, contract  # noqa: E402
from healjson.agents import (  # noqa: E402
    ContractReport,
    HealLog,
    contract_guardrail,
    heal_final_output,
    heal_tools,
)
from healjson.testing import (  # noqa: E402
    ScriptedReply,
    ScriptedServer,
    capture_events,
    corrupted,
)
from sdk_calls import TLS as _SSL  # noqa: E402

agents.set_tracing_disabled(True)


def checked_handler(contracts: list[Any], **options: Any) -> Any:
    """`heal_final_output(contracts, ...)`, which warns that its contracts judge only the outputs
    the SDK refused (`contract_guardrail` judges every one)."""
    with pytest.warns(UserWarning, match="contract_guardrail"):
        return heal_final_output(contracts, **options)


@pytest.fixture(scope="module", autouse=True)
def _sdk_trace_exporter_closed() -> Iterator[None]:
    """The Agents SDK makes its trace exporter, and the HTTP client in it, on first use (here:
    disabling tracing); it is closed once this module's tests are done."""
    yield
    from agents.tracing.processors import default_exporter

    default_exporter().close()


Mode = Literal["async", "sync"]
MODES: tuple[Mode, ...] = ("async", "sync")
Api = Literal["chat", "responses"]
OK = "OK "

# ---------------------------------------------------------------------------------------------
# Tools, outputs, rules
# ---------------------------------------------------------------------------------------------


@dataclass
class Executed:
    """What the tools ran, in order: (name, arguments)."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


def make_search(executed: Executed, **options: Any) -> FunctionTool:
    @function_tool(**options)
    def search(query: str, limit: int) -> str:
        """Search the catalogue."""
        executed.calls.append(("search", {"query": query, "limit": limit}))
        return f"{OK}search {query} {limit}"

    return search


class SearchArgs(BaseModel):
    query: str
    limit: int


@contract(fields=("limit",))
def limit_in_range(args: SearchArgs) -> Violation | None:
    """At most 50 results a page."""
    if not 1 <= args.limit <= 50:
        return Violation("limit must be between 1 and 50")
    return None


class Report(BaseModel):
    summary: str
    actions: int


@contract(fields=("actions",))
def some_actions(report: Report) -> Violation | None:
    if report.actions < 1:
        return Violation("a report counts at least one action")
    return None


@contract(fields=("summary",), on_fail="warn")
def short_summary(report: Report) -> Violation | None:
    if len(report.summary) > 10:
        return Violation("the summary should be at most 10 characters")
    return None


TICKET = {"query": "red lamp", "limit": 5}
CLEAN_ARGS = json.dumps(TICKET)
REPORT = {"summary": "done", "actions": 1}
CLEAN_REPORT = json.dumps(REPORT)

# how models break a call's arguments: each healed locally (`quoted_int` the SDK reads too)
HEALABLE_ARGS = {
    "trailing_comma": '{"query": "red lamp", "limit": 5,}',
    "fenced": '```json\n{"query": "red lamp", "limit": 5}\n```',
    "single_quotes": "{'query': 'red lamp', 'limit': 5}",
    "key_case": '{"Query": "red lamp", "limit": 5}',
    "prose_around": 'Calling search: {"query": "red lamp", "limit": 5} now.',
}
# and the ones nothing local may save: the model is asked again, told why
UNSAVEABLE_ARGS = {
    "cut_string": '{"query": "red l',
    "breaks_the_tools_rule": '{"query": "red lamp", "limit": 500}',
}
BROKEN_REPORTS = {
    "fenced": "```json\n" + CLEAN_REPORT + "\n```",
    "trailing_comma": '{"summary": "done", "actions": 1,}',
    "single_quotes": "{'summary': 'done', 'actions': 1}",
    "key_case": '{"Summary": "done", "actions": 1}',
    "quoted_int": '{"summary": "done", "actions": "1"}',  # the SDK validates strictly
    "prose_around": "Here is the report: " + CLEAN_REPORT,
}

# ---------------------------------------------------------------------------------------------
# The scripted model: turns in order, a tool call sent again when its result was not `OK`
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Turn:
    """A reply: a call of `tool` with `text` as its arguments (`reask`: the text sent when asked
    again), or the final output `text` (`tool=None`)."""

    text: str
    tool: str | None = "search"
    reask: str = CLEAN_ARGS


@dataclass
class Model:
    """A `ScriptedServer` script item (callable): serves `turns` on the chat route or the
    Responses route, and records what each tool call's result said."""

    turns: Sequence[Turn]
    served: int = 0
    turn: int = 0
    results: list[str] = field(default_factory=list)

    def __call__(self, body: dict[str, Any]) -> ScriptedReply:
        reask = False
        if self.served:
            result = _last_tool_result(body)
            if result is not None:
                self.results.append(result)
                if result.startswith(OK):
                    self.turn += 1
                else:
                    reask = True
        turn = self.turns[min(self.turn, len(self.turns) - 1)]
        self.served += 1
        text = turn.reask if reask else turn.text
        if turn.tool is None:
            return ScriptedReply(content=text)
        call = {
            "id": f"call_{self.served}",
            "type": "function",
            "function": {"name": turn.tool, "arguments": text},
        }
        return ScriptedReply(tool_calls=[call], finish_reason="tool_calls")


def _last_tool_result(body: Mapping[str, Any]) -> str | None:
    """The last tool result the request carries (chat `tool` message or Responses
    `function_call_output`), as text."""
    items = body.get("messages") or body.get("input") or []
    for item in reversed(items if isinstance(items, list) else []):
        if not isinstance(item, dict):
            continue
        if item.get("role") == "tool" or item.get("type") == "function_call_output":
            content = item.get("content", item.get("output"))
            if isinstance(content, list):
                content = "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
            return str(content)
    return None


# ---------------------------------------------------------------------------------------------
# Running an agent against the scripted server
# ---------------------------------------------------------------------------------------------


@dataclass
class Ran:
    result: RunResult | None
    error: BaseException | None
    requests: int
    model: Model


def run_agent(
    mode: Mode,
    build: Callable[[Any], Agent[Any]],
    turns: Sequence[Turn],
    *,
    api: Api = "chat",
    context: Any = None,
    **run_kwargs: Any,
) -> Ran:
    """Build the agent on a model pointed at a fresh scripted server and run it once; the run's
    exception, if any, is returned, not raised."""
    scripted = Model(turns)
    with ScriptedServer([scripted], repeat=True) as server:
        client = sdk_client(server.base_url)
        model: Any
        if api == "chat":
            model = OpenAIChatCompletionsModel(model="scripted", openai_client=client)
        else:
            model = OpenAIResponsesModel(model="scripted", openai_client=client)
        agent = build(model)
        result: RunResult | None = None
        error: BaseException | None = None

        async def run_async() -> RunResult:
            try:
                return await Runner.run(agent, "Find a red lamp.", context=context, **run_kwargs)
            finally:
                await client.close()

        try:
            if mode == "sync":
                try:
                    result = Runner.run_sync(
                        agent, "Find a red lamp.", context=context, **run_kwargs
                    )
                finally:
                    _close_sdk_loop(client)
            else:
                result = asyncio.run(run_async())
        except Exception as exc:
            error = exc
        requests = len(server.requests)
    return Ran(result, error, requests, scripted)


def sdk_client(base_url: str) -> AsyncOpenAI:
    """The real openai client the SDK's model calls the scripted server with, without retries."""
    http = DefaultAsyncHttpxClient(verify=_SSL)
    return AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0, http_client=http)


def _close_sdk_loop(client: AsyncOpenAI) -> None:
    """Close the client on the thread's default loop, which `Runner.run_sync` runs on and leaves
    open, then that loop: it has shut its async generators down, so a later `run_sync` on it
    would warn (`ResourceWarning`) for httpx's; on a closed one the SDK starts a fresh loop."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        loop = asyncio.get_event_loop_policy().get_event_loop()
    loop.run_until_complete(client.close())
    loop.close()


def search_agent(
    executed: Executed, *, output_type: Any = None, **tool_options: Any
) -> Callable[[Any], Agent[Any]]:
    def build(model: Any) -> Agent[Any]:
        return Agent(
            name="finder",
            instructions="Use the tools.",
            tools=[make_search(executed, **tool_options)],
            model=model,
            output_type=output_type,
        )

    return build


def healed(build: Callable[[Any], Agent[Any]], **options: Any) -> Callable[[Any], Agent[Any]]:
    return lambda model: heal_tools(build(model), **options)


# ---------------------------------------------------------------------------------------------
# Tool arguments
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("malformation", sorted(HEALABLE_ARGS))
def test_broken_tool_arguments_are_healed_without_asking_the_model_again(
    mode: Mode, malformation: str
) -> None:
    """The SDK alone answers a broken call with its generic error and the model has to send it
    again (one model call more); healed, the tool runs at once with the intended arguments."""
    turns = [Turn(HEALABLE_ARGS[malformation]), Turn("done", tool=None)]

    alone_ran = Executed()
    alone = run_agent(mode, search_agent(alone_ran), turns)
    assert alone.error is None
    assert alone.model.results[0] == "An error occurred while running the tool. Please try again."
    assert alone.requests == 3  # the call, the call again, the answer
    assert alone_ran.calls == [("search", TICKET)]

    log = HealLog()
    with_ran = Executed()
    ran = run_agent(mode, healed(search_agent(with_ran), log=log), turns)
    assert ran.error is None
    assert ran.result is not None
    assert ran.result.final_output == "done"
    assert ran.requests == alone.requests - 1
    assert with_ran.calls == [("search", TICKET)]  # the ticket: 0 wrong values
    assert ran.model.results == [f"{OK}search red lamp 5"]
    [entry] = log.entries
    assert entry.healed
    assert entry.where == "tool_arguments"
    assert entry.name == "search"
    assert entry.raw_text == HEALABLE_ARGS[malformation]
    assert entry.flags
    assert json.loads(entry.value_json or "") == TICKET
    assert "tool search call call_1: healed locally" in str(log)


@pytest.mark.parametrize("mode", MODES)
def test_a_quoted_number_the_sdk_reads_too_costs_no_extra_call_either_way(mode: Mode) -> None:
    """A quoted number the Agents SDK reads itself costs no extra call with or without healing,
    and the tool runs once with the same value."""
    turns = [Turn('{"query": "red lamp", "limit": "5"}'), Turn("done", tool=None)]
    alone_ran, with_ran = Executed(), Executed()
    alone = run_agent(mode, search_agent(alone_ran), turns)
    ran = run_agent(mode, healed(search_agent(with_ran)), turns)
    assert alone.requests == ran.requests == 2
    assert alone_ran.calls == with_ran.calls == [("search", TICKET)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("malformation", sorted(UNSAVEABLE_ARGS))
def test_arguments_nothing_local_can_save_go_back_to_the_model_with_the_diagnostics(
    mode: Mode, malformation: str
) -> None:
    """A cut string or a value breaking the tool's rule is not run; where the SDK alone tells the
    model "An error occurred", healed the model reads the value, the rule and the fix. Same
    number of calls (the model must answer again), an informed retry, the right value run."""
    turns = [Turn(UNSAVEABLE_ARGS[malformation]), Turn("done", tool=None)]
    alone_ran = Executed()
    alone = run_agent(mode, search_agent(alone_ran), turns)
    log = HealLog()
    with_ran = Executed()
    ran = run_agent(
        mode,
        healed(search_agent(with_ran), tool_contracts={"search": [limit_in_range]}, log=log),
        turns,
    )
    assert ran.error is None
    assert ran.requests == 3
    assert with_ran.calls == [("search", TICKET)]  # the bad value never reached the tool
    told = ran.model.results[0]
    assert told.startswith("The arguments of this `search` call were not used")
    assert "rule:" in told
    assert "fix:" in told
    assert told.endswith("Call `search` again with the arguments corrected (one JSON object).")
    [entry] = log.entries
    assert not entry.healed
    assert entry.diagnostics
    if malformation == "breaks_the_tools_rule":
        assert "`limit` = 500" in told
        assert "limit must be between 1 and 50" in told
        assert entry.diagnostics[0].path == "limit"
        # the SDK alone ran the tool with the value its rule forbids
        assert alone_ran.calls[0] == ("search", {"query": "red lamp", "limit": 500})
    else:
        assert "cut off" in told
        assert alone.model.results[0].startswith("An error occurred")
        assert alone.requests == 3


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_whose_failures_end_the_run_still_ends_it(mode: Mode) -> None:
    """`failure_error_function=None`: the SDK raises on bad arguments; healed, a call that can
    be healed runs, one that cannot raises `ModelBehaviorError` carrying the diagnostics."""
    fine = [Turn("{'query': 'red lamp', 'limit': 5}"), Turn("done", tool=None)]
    alone = run_agent(mode, search_agent(Executed(), failure_error_function=None), fine)
    assert isinstance(alone.error, ModelBehaviorError)
    ran = run_agent(mode, healed(search_agent(Executed(), failure_error_function=None)), fine)
    assert ran.error is None
    assert ran.requests == 2

    cut = [Turn('{"query": "red l'), Turn("done", tool=None)]
    ran = run_agent(mode, healed(search_agent(Executed(), failure_error_function=None)), cut)
    assert isinstance(ran.error, ModelBehaviorError)
    assert "cut off" in str(ran.error)
    assert ran.requests == 1


def test_a_custom_failure_function_is_given_the_diagnostics() -> None:
    """A tool's own failure function is given the error with healjson's diagnostics, and its
    answer goes back to the model."""
    seen: list[str] = []

    def explain(ctx: Any, error: Exception) -> str:
        seen.append(str(error))
        return "retry please"

    turns = [Turn('{"query": "red lamp", "limit": 0}'), Turn("done", tool=None)]
    build = search_agent(Executed(), failure_error_function=explain)
    ran = run_agent("async", healed(build, tool_contracts={"search": [limit_in_range]}), turns)
    assert ran.error is None
    assert ran.model.results[0] == "retry please"
    assert len(seen) == 1
    assert "limit must be between 1 and 50" in seen[0]


@pytest.mark.parametrize("mode", MODES)
def test_tool_arguments_are_healed_on_the_responses_api_too(mode: Mode) -> None:
    """Tool arguments are healed locally on the Responses API too, saving the SDK's retry."""
    turns = [Turn('```json\n{"Query": "red lamp", "limit": 5,}\n```'), Turn("done", tool=None)]
    alone = run_agent(mode, search_agent(Executed()), turns, api="responses")
    executed = Executed()
    ran = run_agent(mode, healed(search_agent(executed)), turns, api="responses")
    assert alone.error is None
    assert ran.error is None
    assert ran.requests == alone.requests - 1 == 2
    assert executed.calls == [("search", TICKET)]


def test_clean_arguments_reach_the_tool_untouched_and_are_not_logged() -> None:
    """Clean arguments reach the tool exactly as the model wrote them, and nothing is logged for
    them."""
    seen: list[str] = []

    async def invoke(ctx: ToolContext[Any], arguments: str) -> str:
        seen.append(arguments)
        return OK + "ran"

    tool = FunctionTool(
        name="search",
        description="Search.",
        params_json_schema=SearchArgs.model_json_schema(),
        on_invoke_tool=invoke,
    )
    log = HealLog()
    spaced = '{ "query" : "red lamp",  "limit": 5 }'
    turns = [Turn(spaced), Turn("done", tool=None)]
    ran = run_agent(
        "async",
        lambda model: Agent(name="a", tools=heal_tools([tool], log=log), model=model),
        turns,
    )
    assert ran.error is None
    assert seen == [spaced]
    assert len(log) == 0


def test_a_hand_built_function_tool_gets_its_json_repaired() -> None:
    """A `FunctionTool` built by hand has no parameter model to align to: its arguments are read
    as a JSON object (syntax slips and fences repaired) and handed to its own invoker."""
    seen: list[dict[str, Any]] = []

    async def invoke(ctx: ToolContext[Any], arguments: str) -> str:
        seen.append(json.loads(arguments))
        assert ctx.tool_arguments == arguments  # the context says what the tool was given
        return OK + "ran"

    tool = FunctionTool(
        name="search",
        description="Search.",
        params_json_schema=SearchArgs.model_json_schema(),
        on_invoke_tool=invoke,
    )
    turns = [Turn("```\n{'query': 'red lamp', 'limit': 5,}\n```"), Turn("done", tool=None)]
    ran = run_agent(
        "async", lambda model: Agent(name="a", tools=heal_tools([tool]), model=model), turns
    )
    assert ran.error is None
    assert ran.requests == 2
    assert seen == [TICKET]


def test_no_arguments_are_the_sdks_empty_object() -> None:
    """Empty arguments of a tool without parameters are the SDK's empty object, and the tool
    runs."""
    ran_with: list[str] = []

    @function_tool
    def ping() -> str:
        """Ping."""
        ran_with.append("ping")
        return OK + "pong"

    turns = [Turn("", tool="ping"), Turn("done", tool=None)]
    ran = run_agent(
        "async", lambda model: heal_tools(Agent(name="a", tools=[ping], model=model)), turns
    )
    assert ran.error is None
    assert ran_with == ["ping"]
    assert ran.requests == 2


def test_heal_tools_keeps_the_agent_and_other_tools_and_heals_once() -> None:
    """`heal_tools` returns a new agent with the same tools, leaves the agent as it was, and
    healing twice adds no second layer."""
    executed = Executed()
    search = make_search(executed)
    agent = Agent(name="a", tools=[search])
    twice = heal_tools(heal_tools(agent, log=HealLog()))
    assert twice is not agent
    assert agent.tools == [search]
    [tool] = twice.tools
    assert isinstance(tool, FunctionTool)
    assert tool.name == "search"
    assert tool.params_json_schema == search.params_json_schema
    inner = tool.on_invoke_tool.inner  # type: ignore[attr-defined]
    assert not hasattr(inner, "inner")  # the SDK's own invoker, not a second healing layer
    listed = heal_tools([search])
    assert isinstance(listed, list)
    assert listed[0] is not search


def test_configuration_mistakes_raise_at_once() -> None:
    """`heal_tools` refuses contracts for an unknown tool, a contract naming a field the tool
    lacks, a policy that is not a `HealPolicy`, and an empty contract list."""
    agent = Agent(name="a", tools=[make_search(Executed())])
    with pytest.raises(ValueError, match=r"'lookup'.*function tools are: search"):
        heal_tools(agent, {"lookup": [limit_in_range]})

    @contract(fields=("page",))
    def page_rule(args: Any) -> None:
        return None

    with pytest.raises(ValueError, match="page"):
        heal_tools(agent, {"search": [page_rule]})
    with pytest.raises(TypeError, match="HealPolicy"):
        heal_tools(agent, policy="strict")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least one contract"):
        contract_guardrail([])


# ---------------------------------------------------------------------------------------------
# The final output: the invalid_final_output handler
# ---------------------------------------------------------------------------------------------


def report_agent(**options: Any) -> Callable[[Any], Agent[Any]]:
    def build(model: Any) -> Agent[Any]:
        return Agent(name="reporter", model=model, output_type=Report, **options)

    return build


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("malformation", sorted(BROKEN_REPORTS))
def test_a_broken_final_output_is_healed_where_the_sdk_alone_raises(
    mode: Mode, malformation: str
) -> None:
    """A final output the Agents SDK alone refuses with `ModelBehaviorError` is healed by
    `heal_final_output` without another call."""
    turns = [Turn(BROKEN_REPORTS[malformation], tool=None)]
    alone = run_agent(mode, report_agent(), turns)
    assert isinstance(alone.error, ModelBehaviorError)

    log = HealLog()
    handlers = {"invalid_final_output": checked_handler([some_actions], log=log)}
    ran = run_agent(mode, report_agent(), turns, error_handlers=handlers)
    assert ran.error is None
    assert ran.result is not None
    assert ran.result.final_output == Report(**REPORT)
    assert ran.requests == alone.requests == 1  # healed in place: no model call
    [entry] = log.entries
    assert entry.healed
    assert entry.where == "final_output"
    assert entry.name == "reporter"
    assert json.loads(entry.value_json or "") == REPORT


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ('{"summary": "do', "cut off"),  # cut: nothing local may finish it
        ('{"summary": "done"}', "actions"),  # a field missing: never invented
        ('{"summary": "done", "actions": 0,}', "at least one action"),  # heals, breaks a rule
    ],
)
def test_an_output_that_cannot_be_healed_raises_as_before(mode: Mode, reply: str, why: str) -> None:
    """A final output that cannot be healed (cut, a field missing, a broken rule) raises the
    SDK's own error, as without healing."""
    turns = [Turn(reply, tool=None)]
    alone = run_agent(mode, report_agent(), turns)
    log = HealLog()
    handlers = {"invalid_final_output": checked_handler([some_actions], log=log)}
    ran = run_agent(mode, report_agent(), turns, error_handlers=handlers)
    assert type(ran.error) is type(alone.error) is ModelBehaviorError
    assert str(ran.error) == str(alone.error)
    assert ran.requests == alone.requests == 1
    [entry] = log.entries
    assert not entry.healed
    assert why in str(entry)


def test_a_wrapped_output_type_is_healed_to_the_sdks_own_value() -> None:
    """A type that is not an object is wrapped by the SDK (`{"response": ...}`): the model's
    answer with or without the wrapper heals to the same final output."""

    def build(model: Any) -> Agent[Any]:
        return Agent(name="lister", model=model, output_type=list[int])

    handlers = {"invalid_final_output": heal_final_output()}
    for reply in ("```json\n[1, 2, 3]\n```", '{"response": [1, 2, 3,]}'):
        ran = run_agent("async", build, [Turn(reply, tool=None)], error_handlers=handlers)
        assert ran.error is None
        assert ran.result is not None
        assert ran.result.final_output == [1, 2, 3]


def test_the_contracts_see_the_run_context_and_input() -> None:
    """The final output's contracts see the run's context and the input messages."""
    seen: list[Any] = []

    @contract(fields=("actions",))
    def at_most(report: Report, ctx: healjson.ContractContext) -> Violation | None:
        seen.append((dict(ctx.extra), [m["content"] for m in ctx.messages]))
        if report.actions > ctx.extra["max_actions"]:
            return Violation("too many actions")
        return None

    handlers = {"invalid_final_output": checked_handler([at_most])}
    turns = [Turn(BROKEN_REPORTS["fenced"], tool=None)]
    ran = run_agent(
        "async", report_agent(), turns, error_handlers=handlers, context={"max_actions": 3}
    )
    assert ran.error is None
    assert seen[-1] == ({"max_actions": 3}, ["Find a red lamp."])  # the run's own


# ---------------------------------------------------------------------------------------------
# Contracts on the final output: the output guardrail
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_the_guardrail_trips_on_a_contract_breach_with_the_diagnostics(mode: Mode) -> None:
    """The contracts guardrail trips on a contract breach the SDK alone lets through, reporting
    the diagnostics."""
    breach = json.dumps({"summary": "done", "actions": 0})
    log = HealLog()
    guard = contract_guardrail([some_actions, short_summary], log=log)
    alone = run_agent(mode, report_agent(), [Turn(breach, tool=None)])
    assert alone.error is None  # the SDK alone returns the value that breaks the rule
    ran = run_agent(mode, report_agent(output_guardrails=[guard]), [Turn(breach, tool=None)])
    assert isinstance(ran.error, OutputGuardrailTripwireTriggered)
    report = ran.error.guardrail_result.output.output_info
    assert isinstance(report, ContractReport)
    assert not report.ok
    [diagnostic] = report.diagnostics
    assert isinstance(diagnostic, Diagnostic)
    assert diagnostic.path == "actions"
    assert diagnostic.value == 0
    assert "at least one action" in diagnostic.constraint
    assert "`actions` = 0" in str(report)
    assert len(log) == 1
    assert not log.entries[0].healed


@pytest.mark.parametrize("mode", MODES)
def test_the_guardrail_lets_a_valid_output_pass_with_its_warnings(mode: Mode) -> None:
    """The contracts guardrail lets a valid output pass, reporting its warnings."""
    long = json.dumps({"summary": "a long summary", "actions": 2})
    guard = contract_guardrail([some_actions, short_summary])
    ran = run_agent(mode, report_agent(output_guardrails=[guard]), [Turn(long, tool=None)])
    assert ran.error is None
    assert ran.result is not None
    [checked] = ran.result.output_guardrail_results
    report = checked.output.output_info
    assert report.ok
    assert not checked.output.tripwire_triggered
    assert [w.path for w in report.warnings] == ["summary"]


def test_the_guardrail_reports_a_fix_it_cannot_apply() -> None:
    """The contracts guardrail trips on a broken `fix` rule and reports the fixed value, which it
    cannot hand back to the SDK."""

    @contract(
        fields=("actions",),
        on_fail="fix",
        fix=lambda report: report.model_copy(update={"actions": 1}),
    )
    def at_least_one(report: Report) -> Violation | None:
        return Violation("actions must be at least 1") if report.actions < 1 else None

    breach = json.dumps({"summary": "done", "actions": 0})
    guard = contract_guardrail([at_least_one])
    ran = run_agent("async", report_agent(output_guardrails=[guard]), [Turn(breach, tool=None)])
    assert isinstance(ran.error, OutputGuardrailTripwireTriggered)
    report = ran.error.guardrail_result.output.output_info
    assert report.fixed_value == Report(summary="done", actions=1)


# ---------------------------------------------------------------------------------------------
# Visible repairs: healjson's events
# ---------------------------------------------------------------------------------------------


def test_each_local_repair_is_a_healjson_event_with_its_flags() -> None:
    """Each local repair in an agent run (tool arguments and final output) is a
    `healjson.local_repair` event with its flags."""
    turns = [Turn(HEALABLE_ARGS["trailing_comma"]), Turn(BROKEN_REPORTS["fenced"], tool=None)]
    handlers = {"invalid_final_output": heal_final_output()}
    with capture_events() as logs:
        ran = run_agent(
            "async",
            healed(search_agent(Executed(), output_type=Report)),
            turns,
            error_handlers=handlers,
        )
    assert ran.error is None
    assert ran.requests == 2
    repairs = [log for log in logs if log["event"] == "healjson.local_repair"]
    assert [sorted(log["flags"]) for log in repairs] == [["syntax_repaired"], ["code_fence"]]
    assert sum(log["event"] == "healjson.healed" for log in logs) == 2


def test_a_missing_sdk_names_the_agents_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing `healjson.agents` without the Agents SDK raises an `ImportError` naming the
    `agents` extra."""
    import importlib

    monkeypatch.setitem(sys.modules, "agents", None)
    monkeypatch.delitem(sys.modules, "healjson.agents")
    with pytest.raises(
        ImportError, match=r"openai-agents package: pip install 'healjson\[agents\]'"
    ):
        importlib.import_module("healjson.agents")


def test_a_streamed_run_is_healed_too() -> None:
    """`Runner.run_streamed`: the arguments arrive in deltas, the output at the end; both heal."""
    turns = [Turn(HEALABLE_ARGS["single_quotes"]), Turn(BROKEN_REPORTS["key_case"], tool=None)]
    executed = Executed()
    scripted = Model(turns)
    handlers = {"invalid_final_output": heal_final_output()}

    async def run(base_url: str) -> Any:
        async with sdk_client(base_url) as client:
            model = OpenAIChatCompletionsModel(model="scripted", openai_client=client)
            agent = heal_tools(search_agent(executed, output_type=Report)(model))
            streamed = Runner.run_streamed(agent, "Find a red lamp.", error_handlers=handlers)
            async for _ in streamed.stream_events():
                pass
            return streamed.final_output

    with ScriptedServer([scripted], repeat=True) as server:
        output = asyncio.run(run(server.base_url))
        assert all(request.streamed for request in server.requests)
        assert len(server.requests) == 2
    assert output == Report(**REPORT)
    assert executed.calls == [("search", TICKET)]


def test_a_tool_that_takes_the_run_context_is_healed() -> None:
    """A function tool that takes the run context is healed and gets the context."""
    seen: list[tuple[Any, str, int]] = []

    @function_tool
    def search(ctx: RunContextWrapper[Any], query: str, limit: int) -> str:
        """Search the catalogue."""
        seen.append((ctx.context, query, limit))
        return f"{OK}search"

    turns = [Turn(HEALABLE_ARGS["key_case"]), Turn("done", tool=None)]
    ran = run_agent(
        "async",
        lambda model: heal_tools(Agent(name="a", tools=[search], model=model)),
        turns,
        context={"user": "ada"},
    )
    assert ran.error is None
    assert ran.requests == 2
    assert seen == [({"user": "ada"}, "red lamp", 5)]


@pytest.mark.parametrize("mode", MODES)
def test_a_broken_final_output_is_healed_on_the_responses_api_too(mode: Mode) -> None:
    """A broken final output is healed on the Responses API too, in one request."""
    turns = [Turn("Here: {'Summary': 'done', 'actions': '1',}", tool=None)]
    alone = run_agent(mode, report_agent(), turns, api="responses")
    assert isinstance(alone.error, ModelBehaviorError)
    handlers = {"invalid_final_output": heal_final_output()}
    ran = run_agent(mode, report_agent(), turns, api="responses", error_handlers=handlers)
    assert ran.error is None
    assert ran.result is not None
    assert ran.result.final_output == Report(**REPORT)
    assert ran.requests == 1


# ---------------------------------------------------------------------------------------------
# A property: a healed tool runs with exactly the value the model meant, or not at all
# ---------------------------------------------------------------------------------------------

_ARGS = st.builds(
    SearchArgs,
    query=st.text(min_size=1, max_size=30),
    limit=st.integers(min_value=-(10**6), max_value=10**6),
)


@settings(max_examples=30, deadline=None)
@given(data=st.data(), args=_ARGS)
def test_a_healed_tool_runs_with_the_models_value_or_not_at_all(
    data: st.DataObject, args: SearchArgs
) -> None:
    """Any rendering of the arguments the way models break JSON (fences, prose, trailing
    commas, comments, single quotes, unquoted keys, pretty-printing; cut): the tool runs with
    exactly the value written, or — cut, or breaking the tool's rule — does not run and the
    model is told why. Never another value."""
    broken = data.draw(corrupted(args))
    executed = Executed()
    [tool] = heal_tools([make_search(executed)], {"search": [limit_in_range]})
    assert isinstance(tool, FunctionTool)
    ctx = ToolContext(
        context=None, tool_name="search", tool_call_id="call_1", tool_arguments=broken.text
    )
    result = asyncio.run(tool.on_invoke_tool(ctx, broken.text))
    if executed.calls:
        assert executed.calls == [("search", args.model_dump())]
        assert broken.recoverable
        assert 1 <= args.limit <= 50
    else:
        assert not broken.recoverable or not 1 <= args.limit <= 50
        assert result.startswith("The arguments of this `search` call were not used")
