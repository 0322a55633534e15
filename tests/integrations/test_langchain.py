"""`healjson.langchain`: a real LangChain v1 agent (`create_agent`) with `ChatOpenAI` over real
HTTP to `ScriptedServer`, with `HealMiddleware`.

Each scenario scripts the model's replies; the server's request count is the number of model
calls the agent spent. A malformation L1 repairs costs no call; what it cannot repair is asked
again with healjson's repair request; what never becomes valid ends the run with the `Degraded`
outcome in the state, never an exception.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import httpx
import pytest
from pydantic import BaseModel, ValidationInfo, field_validator

from healjson.testing import capture_events

pytest.importorskip("langchain")

from langchain.agents import create_agent
from langchain.agents.structured_output import ProviderStrategy, ToolStrategy
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

from healjson import Degraded, Flag, Healed, HealPolicy, Reason, Violation, contract
from healjson.langchain import OUTCOME_KEY, TOOL_OUTCOME_KEY, HealMiddleware
from healjson.testing import ScriptedReply, ScriptedServer
from langchain_kit import scripted_model

Mode = Literal["sync", "async"]
MODES: tuple[Mode, ...] = ("sync", "async")


class Source(BaseModel):
    url: str


class Report(BaseModel):
    summary: str
    hits: int
    source: Source

    @field_validator("hits")
    @classmethod
    def _within_limit(cls, hits: int, info: ValidationInfo) -> int:
        limit = (info.context or {}).get("max_hits")
        if limit is not None and hits > limit:
            raise ValueError(f"must be at most {limit} (the run's limit)")
        return hits


GOOD = {"summary": "red shoes: 5", "hits": 5, "source": {"url": "https://shop"}}
GOOD_TEXT = json.dumps(GOOD)
EXPECTED = Report.model_validate(GOOD)


def report_call(arguments: str, call_id: str = "call_r") -> ScriptedReply:
    """The structured response as LangChain's output tool (`ToolStrategy`)."""
    return calls((("Report", arguments, call_id),))


def calls(made: Sequence[tuple[str, str, str]]) -> ScriptedReply:
    """One turn of tool calls, each `(name, arguments text, id)`, the text sent verbatim."""
    return ScriptedReply(
        tool_calls=[
            {"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}
            for name, args, call_id in made
        ],
        finish_reason="tool_calls",
    )


@dataclass
class Ran:
    result: dict[str, Any]
    requests: list[Any]
    executed: list[dict[str, Any]] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return len(self.requests)

    @property
    def outcome(self) -> Any:
        return self.result.get(OUTCOME_KEY)

    def sent(self, number: int) -> list[dict[str, Any]]:
        """The messages of model request `number` (1-based)."""
        return self.requests[number - 1].messages


def run(
    script: Sequence[Any],
    *,
    response_format: Any = None,
    middleware: Sequence[Any] | None = None,
    mode: Mode = "sync",
    context: Any = None,
    with_tools: bool = False,
) -> Ran:
    """The agent on `script` (with `HealMiddleware()` unless `middleware` is given)."""
    executed: list[dict[str, Any]] = []

    @tool
    def search(query: str, limit: int) -> str:
        """Search the shop."""
        executed.append({"query": query, "limit": limit})
        return f"{limit} hits for {query}"

    chosen = [HealMiddleware()] if middleware is None else list(middleware)
    tools = [search] if with_tools else []
    message = {"messages": [{"role": "user", "content": "Find red shoes."}]}
    with ScriptedServer(script) as server:
        if mode == "sync":
            with httpx.Client() as http:
                model = scripted_model(server, http)
                agent = create_agent(
                    model, tools=tools, response_format=response_format, middleware=chosen
                )
                result = agent.invoke(message, context=context)
        else:

            async def go() -> dict[str, Any]:
                async with httpx.AsyncClient() as http:
                    model = scripted_model(server, http)
                    agent = create_agent(
                        model, tools=tools, response_format=response_format, middleware=chosen
                    )
                    found: dict[str, Any] = await agent.ainvoke(message, context=context)
                    return found

            result = asyncio.run(go())
        return Ran(result, server.requests, executed)


# ---------------------------------------------------------------------------------------------
# The structured response: healed locally, in one call
# ---------------------------------------------------------------------------------------------

TOOL_FAMILIES = {
    "fenced": ("```json\n" + GOOD_TEXT + "\n```", Flag.CODE_FENCE),
    "trailing_comma": (GOOD_TEXT[:-1] + ",}", Flag.SYNTAX_REPAIRED),
    "key_case": (GOOD_TEXT.replace('"summary"', '"Summary"'), Flag.KEYS_ALIGNED),
    "json_string_in_field": (
        json.dumps({**GOOD, "source": json.dumps(GOOD["source"])}),
        Flag.DOUBLE_ENCODED,
    ),
    "wrapped": (json.dumps({"report": GOOD}), Flag.UNWRAPPED),
    "quoted_number": (json.dumps({**GOOD, "hits": "5"}), Flag.COERCED),
}


@pytest.mark.parametrize("family", sorted(TOOL_FAMILIES))
@pytest.mark.parametrize("mode", MODES)
def test_a_broken_structured_tool_call_is_healed_without_another_call(
    family: str, mode: Mode
) -> None:
    """Each L1 family in the output tool's arguments becomes the structured response in one call."""
    text, flag = TOOL_FAMILIES[family]
    ran = run([report_call(text)], response_format=ToolStrategy(Report), mode=mode)
    assert 1 == ran.calls
    assert EXPECTED == ran.result["structured_response"]
    assert isinstance(ran.outcome, Healed)
    assert flag in ran.outcome.flags
    ai, answer = ran.result["messages"][-2:]
    assert GOOD == ai.tool_calls[0]["args"]  # the history holds the healed call
    assert [] == ai.invalid_tool_calls
    assert isinstance(answer, ToolMessage)
    assert "call_r" == answer.tool_call_id


CONTENT_FAMILIES = {
    "fenced": "```json\n" + GOOD_TEXT + "\n```",
    "prose_around": "Here is the report you asked for:\n" + GOOD_TEXT + "\nAnything else?",
    "trailing_comma": GOOD_TEXT[:-1] + ",}",
    "key_case": GOOD_TEXT.replace('"hits"', '"HITS"'),
}


@pytest.mark.parametrize("family", sorted(CONTENT_FAMILIES))
@pytest.mark.parametrize("mode", MODES)
def test_a_broken_provider_strategy_answer_is_healed_where_langchain_raises(
    family: str, mode: Mode
) -> None:
    """A provider-strategy answer LangChain cannot parse (it raises) is healed in one call."""
    text = CONTENT_FAMILIES[family]
    ran = run([text], response_format=ProviderStrategy(Report), mode=mode)
    assert 1 == ran.calls
    assert EXPECTED == ran.result["structured_response"]
    assert text == ran.result["messages"][-1].content  # the model's own text, kept


def test_without_the_middleware_langchain_raises_on_a_fenced_provider_answer() -> None:
    """The baseline the test above improves on: the stock agent raises its parse error."""
    from langchain.agents.structured_output import StructuredOutputValidationError

    with pytest.raises(StructuredOutputValidationError):
        run([CONTENT_FAMILIES["fenced"]], response_format=ProviderStrategy(Report), middleware=[])


def test_a_bare_schema_is_healed_whichever_strategy_langchain_picks() -> None:
    """`response_format=Report` (LangChain's auto strategy) is healed as a tool call."""
    ran = run([report_call(TOOL_FAMILIES["trailing_comma"][0])], response_format=Report)
    assert 1 == ran.calls
    assert EXPECTED == ran.result["structured_response"]


# ---------------------------------------------------------------------------------------------
# The structured response: repaired with healjson's request, or ended as Degraded
# ---------------------------------------------------------------------------------------------


@contract(fields=("summary", "hits"))
def summary_counts_hits(value: Report, ctx: Any) -> Violation | None:
    """The summary ends with the number of hits."""
    if value.summary.endswith(f": {value.hits}"):
        return None
    return Violation(
        f"must end with ': {value.hits}'",
        prescription=f"End the summary with ': {value.hits}'.",
    )


@pytest.mark.parametrize("mode", MODES)
def test_a_contract_breach_is_repaired_with_healjsons_bounded_request(mode: Mode) -> None:
    """A breach costs one repair call, whose request is the agent's messages plus one exchange."""
    breach = json.dumps({**GOOD, "summary": "red shoes"})
    ran = run(
        [report_call(breach), report_call(GOOD_TEXT, "call_2")],
        response_format=ToolStrategy(Report),
        middleware=[HealMiddleware(contracts=[summary_counts_hits])],
        mode=mode,
    )
    assert 2 == ran.calls
    assert EXPECTED == ran.result["structured_response"]
    repair = ran.sent(2)
    assert ran.sent(1) == repair[:-2]  # the agent's own messages first, unchanged
    assert {"role": "assistant", "content": breach} == repair[-2]
    assert "summary_counts_hits" not in repair[-1]["content"]
    assert "must end with ': 5'" in repair[-1]["content"]
    assert 2 == len(ran.outcome.attempts)
    assert ["summary"] == list(ran.outcome.changed_fields)


def test_a_missing_field_is_asked_for_never_invented() -> None:
    """An answer without `hits` is not completed locally: the model is asked, then gives it."""
    partial = json.dumps({"summary": "red shoes: 5", "source": GOOD["source"]})
    ran = run(
        [report_call(partial), report_call(GOOD_TEXT, "call_2")],
        response_format=ToolStrategy(Report),
    )
    assert 2 == ran.calls
    assert EXPECTED == ran.result["structured_response"]
    assert ["hits"] == [d.path for d in ran.outcome.attempts[0].diagnostics]


@pytest.mark.parametrize("mode", MODES)
def test_a_never_valid_answer_ends_the_run_as_degraded_without_raising(mode: Mode) -> None:
    """Three calls, then `structured_response` is None and the state holds the `Degraded`."""
    ran = run(
        [report_call("not json at all", f"call_{i}") for i in range(3)],
        response_format=ToolStrategy(Report),
        mode=mode,
    )
    assert 3 == ran.calls
    assert ran.result.get("structured_response") is None
    assert isinstance(ran.outcome, Degraded)
    assert Reason.MAX_RETRIES_EXCEEDED == ran.outcome.reason
    last = ran.result["messages"][-1]
    assert isinstance(last, ToolMessage)
    assert "error" == last.status  # the call is answered: the history stays valid


def test_the_policy_bounds_the_calls() -> None:
    """`HealPolicy(max_attempts=1)`: a contract breach ends the run at once."""
    breach = json.dumps({**GOOD, "summary": "red shoes"})
    ran = run(
        [report_call(breach)],
        response_format=ToolStrategy(Report),
        middleware=[
            HealMiddleware(contracts=[summary_counts_hits], policy=HealPolicy(max_attempts=1))
        ],
    )
    assert 1 == ran.calls
    assert Reason.INVALID_OUTPUT == ran.outcome.reason


@pytest.mark.parametrize("mode", MODES)
def test_the_runs_context_reaches_the_validators(mode: Mode) -> None:
    """`invoke(..., context=...)` is pydantic's validation context: 5 hits break a limit of 3."""
    three = json.dumps({**GOOD, "summary": "red shoes: 3", "hits": 3})
    ran = run(
        [report_call(GOOD_TEXT), report_call(three, "call_2")],
        response_format=ToolStrategy(Report),
        mode=mode,
        context={"max_hits": 3},
    )
    assert 2 == ran.calls
    assert 3 == ran.result["structured_response"].hits
    assert "at most 3" in ran.sent(2)[-1]["content"]


def test_a_context_given_to_the_middleware_wins() -> None:
    """`HealMiddleware(context=...)` is the validators' context whatever the run passes."""
    ran = run(
        [report_call(GOOD_TEXT)] * 3,
        response_format=ToolStrategy(Report),
        middleware=[HealMiddleware(context={"max_hits": 1})],
    )
    assert isinstance(ran.outcome, Degraded)


def test_each_structured_response_is_a_healjson_run_in_the_events() -> None:
    """The local repair and the outcome are healjson's structured events."""
    with capture_events() as logs:
        run([report_call(TOOL_FAMILIES["fenced"][0])], response_format=ToolStrategy(Report))
    repairs = [log for log in logs if log["event"] == "healjson.local_repair"]
    assert ["code_fence"] == [str(flag) for flag in repairs[0]["flags"]]
    assert 1 == sum(log["event"] == "healjson.healed" for log in logs)


# ---------------------------------------------------------------------------------------------
# Tool calls: healed before the tool runs, only the broken ones asked again
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_broken_tool_arguments_are_healed_before_the_tool_runs(mode: Mode) -> None:
    """Arguments LangChain could not parse (an invalid tool call) run healed, no call spent."""
    broken = "{'query': 'red shoes', 'limit': '5',}"
    ran = run(
        [calls([("search", broken, "call_s")]), report_call(GOOD_TEXT)],
        response_format=ToolStrategy(Report),
        with_tools=True,
        mode=mode,
    )
    assert 2 == ran.calls
    assert [{"query": "red shoes", "limit": 5}] == ran.executed
    assert EXPECTED == ran.result["structured_response"]
    assert Flag.SYNTAX_REPAIRED in ran.result[TOOL_OUTCOME_KEY].flags


def test_without_the_middleware_broken_tool_arguments_end_the_run_silently() -> None:
    """The baseline: an invalid tool call alone ends LangChain's loop, no tool run, no response."""
    broken = "{'query': 'red shoes', 'limit': '5',}"
    ran = run(
        [calls([("search", broken, "call_s")])],
        response_format=ToolStrategy(Report),
        with_tools=True,
        middleware=[],
    )
    assert 1 == ran.calls
    assert [] == ran.executed
    assert ran.result.get("structured_response") is None


def test_only_the_broken_call_of_parallel_calls_is_asked_again() -> None:
    """Two calls, one missing an argument: the repair asks for that one; both then run once."""
    ran = run(
        [
            calls(
                [
                    ("search", '{"query": "red shoes", "limit": 5}', "call_a"),
                    ("search", '{"query": "blue shoes"}', "call_b"),
                ]
            ),
            calls([("search", '{"query": "blue shoes", "limit": 2}', "call_c")]),
            report_call(GOOD_TEXT),
        ],
        response_format=ToolStrategy(Report),
        with_tools=True,
    )
    assert 3 == ran.calls
    wanted = [{"query": "blue shoes", "limit": 2}, {"query": "red shoes", "limit": 5}]
    assert wanted == sorted(ran.executed, key=lambda args: args["query"])  # run in parallel
    ask = ran.sent(2)[-1]["content"]
    assert "1 of your 2 tool calls was rejected" in ask
    assert "`search` (call_b)" in ask


def test_tool_contracts_judge_the_arguments() -> None:
    """A tool contract's breach is asked again like a schema error; the tool runs once, valid."""

    @contract(fields=("limit",))
    def small_limit(args: Any, ctx: Any) -> Violation | None:
        if args.limit <= 10:
            return None
        return Violation("must be at most 10", prescription="Use 10 or less.")

    ran = run(
        [
            calls([("search", '{"query": "shoes", "limit": 50}', "call_a")]),
            calls([("search", '{"query": "shoes", "limit": 10}', "call_b")]),
            report_call(GOOD_TEXT),
        ],
        response_format=ToolStrategy(Report),
        middleware=[HealMiddleware(tool_contracts={"search": [small_limit]})],
        with_tools=True,
    )
    assert [{"query": "shoes", "limit": 10}] == ran.executed


def test_tool_arguments_that_never_heal_end_the_run_without_running_the_tool() -> None:
    """Three broken turns: the tool never runs; the run ends with the `Degraded` in the state."""
    ran = run(
        [calls([("search", '{"query": "shoes"}', f"call_{i}")]) for i in range(3)],
        response_format=ToolStrategy(Report),
        with_tools=True,
    )
    assert 3 == ran.calls
    assert [] == ran.executed
    assert isinstance(ran.outcome, Degraded)
    assert ran.outcome is ran.result[TOOL_OUTCOME_KEY]
    assert ran.result.get("structured_response") is None


def test_tool_calls_are_healed_without_a_response_format() -> None:
    """An agent with tools and no structured response gets its tool arguments healed too."""
    ran = run(
        [calls([("search", '{"query": "shoes", "limit": "3",}', "call_a")]), "Found 3."],
        with_tools=True,
    )
    assert 2 == ran.calls
    assert [{"query": "shoes", "limit": 3}] == ran.executed
    assert isinstance(ran.result["messages"][-1], AIMessage)


def test_a_plain_answer_passes_through_untouched() -> None:
    """No response format, no tool call: the middleware changes nothing."""
    ran = run(["Hello."])
    assert 1 == ran.calls
    assert "Hello." == ran.result["messages"][-1].content
    assert OUTCOME_KEY not in ran.result


def test_configuration_mistakes_raise_at_once() -> None:
    """A wrong policy, tool contract key or context is a configuration error, said at once."""
    with pytest.raises(TypeError, match="HealPolicy"):
        HealMiddleware(policy={"max_attempts": 2})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="tool names"):
        HealMiddleware(tool_contracts={1: []})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="context must be"):
        HealMiddleware(context=42)  # type: ignore[arg-type]


def test_a_copied_middleware_heals_as_the_original() -> None:
    """A deep copy of the middleware keeps its configuration, its caches start anew."""
    import copy

    middleware = copy.deepcopy(HealMiddleware(contracts=[summary_counts_hits]))
    ran = run(
        [report_call(TOOL_FAMILIES["fenced"][0])],
        response_format=ToolStrategy(Report),
        middleware=[middleware],
    )
    assert 1 == ran.calls
    assert EXPECTED == ran.result["structured_response"]


def test_a_json_schema_response_format_gives_its_data() -> None:
    """A JSON Schema dict as the response format: the healed value is its JSON data."""
    schema = {
        "title": "Tally",
        "type": "object",
        "properties": {"count": {"type": "integer"}},
        "required": ["count"],
    }
    ran = run(
        [calls([("Tally", '{"Count": "4",}', "call_t")])], response_format=ToolStrategy(schema)
    )
    assert 1 == ran.calls
    assert {"count": 4} == ran.result["structured_response"]


def test_a_cut_tool_call_is_asked_again_with_its_text_quoted_back() -> None:
    """Arguments cut by the token limit are asked again; the repair turn carries them as sent."""
    cut = '{"query": "red sh'
    ran = run(
        [
            ScriptedReply(
                tool_calls=[
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "search", "arguments": cut},
                    }
                ],
                finish_reason="length",
            ),
            calls([("search", '{"query": "red shoes", "limit": 5}', "call_b")]),
            report_call(GOOD_TEXT),
        ],
        response_format=ToolStrategy(Report),
        with_tools=True,
    )
    assert [{"query": "red shoes", "limit": 5}] == ran.executed
    assert cut == ran.sent(2)[-3]["tool_calls"][0]["function"]["arguments"]


@dataclass
class RunLimits:
    max_hits: int


class ModelLimits(BaseModel):
    max_hits: int


@pytest.mark.parametrize("limits", [RunLimits(3), ModelLimits(max_hits=3)])
def test_a_dataclass_or_model_context_is_read_field_by_field(limits: Any) -> None:
    """A run context that is a dataclass or a pydantic model reaches the validators as fields."""
    three = json.dumps({**GOOD, "summary": "red shoes: 3", "hits": 3})
    ran = run(
        [report_call(GOOD_TEXT), report_call(three, "call_2")],
        response_format=ToolStrategy(Report),
        context=limits,
    )
    assert 2 == ran.calls


def test_a_context_callable_chooses_per_run_and_other_contexts_are_refused() -> None:
    """`context=` may be a callable of the runtime; a context healjson cannot read says so."""
    from types import SimpleNamespace

    ran = run(
        [report_call(GOOD_TEXT)] * 3,
        response_format=ToolStrategy(Report),
        middleware=[HealMiddleware(context=lambda runtime: {"max_hits": 0})],
    )
    assert isinstance(ran.outcome, Degraded)
    with pytest.raises(TypeError, match="as a mapping"):
        HealMiddleware()._context(SimpleNamespace(context=42))
