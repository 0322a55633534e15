"""`healjson.pydantic_ai`: a real pydantic-ai `Agent` with its OpenAI models over real HTTP to
`ScriptedServer`, with and without `HealCapability`.

Each scenario scripts the model's replies; the server's request count is the number of model
calls the agent spent. With the capability, a malformation L1 repairs costs no call; one it
cannot repair (or a contract breach) costs the same re-ask as without it, and the retry prompt
the server receives carries healjson's diagnostics.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationInfo, field_validator

pytest.importorskip("pydantic_ai")

from openai import AsyncOpenAI
from pydantic_ai import Agent, NativeOutput, UnexpectedModelBehavior, UserError
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider

from healjson import Flag, Violation, contract
from healjson.pydantic_ai import ContractStopped, HealCapability, HealRecord
from healjson.testing import (
    RecordedRequest,
    ScriptedReply,
    ScriptedServer,
    capture_events,
    corrupted,
)

# ---------------------------------------------------------------------------------------------
# The agent: one tool, one output model
# ---------------------------------------------------------------------------------------------


class Report(BaseModel):
    summary: str
    hits: int


Calls = list[dict[str, Any]]


GOOD_ARGS = {"query": "red shoes", "limit": 5}
GOOD_REPORT = '{"summary": "red shoes: 5", "hits": 5}'
EXPECTED = Report(summary="red shoes: 5", hits=5)


def search_call(
    arguments: str, *, call_id: str = "call_1", finish: str = "tool_calls"
) -> ScriptedReply:
    """A call of the agent's tool, its arguments sent verbatim."""
    function = {"name": "search_tool", "arguments": arguments}
    return ScriptedReply(
        tool_calls=[{"id": call_id, "type": "function", "function": function}],
        finish_reason=finish,
    )


def final(arguments: str = GOOD_REPORT, *, call_id: str = "call_9") -> ScriptedReply:
    """The output as pydantic-ai's output tool (`final_result`)."""
    function = {"name": "final_result", "arguments": arguments}
    return ScriptedReply(
        tool_calls=[{"id": call_id, "type": "function", "function": function}],
        finish_reason="tool_calls",
    )


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


@dataclass
class Setup:
    """An agent with one tool (`search_tool`) and the OpenAI client its model talks through."""

    agent: Agent[None, Any]
    client: AsyncOpenAI
    executed: Calls = field(default_factory=list)  # the tool's arguments, call by call

    def run(self, mode: str, prompt: str = "Find red shoes and report.") -> Any:
        """The run's result, `agent.run_sync` or `agent.run` (the client closed after it)."""
        if mode == "sync":
            with sync_loop() as loop:
                try:
                    return self.agent.run_sync(prompt)
                finally:
                    loop.run_until_complete(self.client.close())

        async def go() -> Any:
            async with self.client:
                return await self.agent.run(prompt)

        return asyncio.run(go())


@contextmanager
def sync_loop() -> Iterator[asyncio.AbstractEventLoop]:
    """A fresh event loop for `run_sync` (which runs on the thread's loop), closed after."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    try:
        yield loop
    finally:
        asyncio.set_event_loop(None)
        loop.close()


def setup(
    server: ScriptedServer,
    capability: HealCapability[Any] | None = None,
    *,
    output_type: Any = Report,
    responses: bool = False,
) -> Setup:
    client = AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    provider = OpenAIProvider(openai_client=client)
    model: Any = (
        OpenAIResponsesModel("scripted-model", provider=provider)
        if responses
        else OpenAIChatModel("scripted-model", provider=provider)
    )
    agent: Agent[None, Any] = Agent(
        model,
        output_type=output_type,
        capabilities=[capability] if capability is not None else [],
    )
    made = Setup(agent, client)

    @agent.tool_plain
    def search_tool(query: str, limit: int) -> str:
        """Search the catalogue."""
        made.executed.append({"query": query, "limit": limit})
        return f"found {limit} results for {query}"

    return made


def tool_messages(request: RecordedRequest) -> list[str]:
    """The text of each tool message of `request` (pydantic-ai 2.68 sends a retry's text as
    `{"error": text}`, 2.38 as the text itself)."""
    return [_tool_text(str(m.get("content"))) for m in request.messages if m.get("role") == "tool"]


def _tool_text(content: str) -> str:
    try:
        decoded = json.loads(content)
    except ValueError:
        return content
    if (
        isinstance(decoded, dict)
        and set(decoded) == {"error"}
        and isinstance(decoded["error"], str)
    ):
        return decoded["error"]
    return content


def clean_args() -> str:
    return json.dumps(GOOD_ARGS)


# Every malformation L1 repairs, as the model sends the tool's arguments.
MALFORMED_ARGS = {
    "trailing_comma": '{"query": "red shoes", "limit": 5,}',
    "fenced": '```json\n{"query": "red shoes", "limit": 5}\n```',
    "single_quotes": "{'query': 'red shoes', 'limit': 5}",
    "key_case": '{"Query": "red shoes", "limit": 5}',
}


MODES = ("sync", "async")

# ---------------------------------------------------------------------------------------------
# Tool arguments
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("malformation", sorted(MALFORMED_ARGS))
def test_tool_arguments_are_healed_without_a_model_call(
    server: ScriptedServer, malformation: str, mode: str
) -> None:
    """Malformed tool arguments pydantic-ai alone re-asks for are healed locally by
    `HealCapability`, saving that call, sync, async and streamed."""
    broken = MALFORMED_ARGS[malformation]
    # without healjson: pydantic-ai re-asks (the retry costs a call), then goes on
    server.extend([search_call(broken), search_call(clean_args(), call_id="call_2"), final()])
    bare = setup(server)
    assert bare.run(mode).output == EXPECTED
    assert len(server.requests) == 3
    assert bare.executed == [GOOD_ARGS]

    # with healjson: repaired locally, the re-ask is never needed
    with ScriptedServer([search_call(broken), final()]) as healed_server:
        capability: HealCapability[Any] = HealCapability()
        healed = setup(healed_server, capability)
        assert healed.run(mode).output == EXPECTED
        assert len(healed_server.requests) == 2
        assert healed.executed == [GOOD_ARGS]  # the ticket's values, exactly
        (record,) = capability.records()
        assert record.action == "healed"
        assert (record.kind, record.name, record.tool_call_id) == ("tool", "search_tool", "call_1")
        assert record.raw == broken
        assert record.value == GOOD_ARGS
        assert record.flags  # which repair, named


@pytest.mark.parametrize("healed", [False, True])
def test_a_quoted_number_is_pydantic_ais_own_coercion(server: ScriptedServer, healed: bool) -> None:
    """`"limit": "5"` for an int: pydantic-ai validates tool arguments in lax mode, so it costs
    no call either way, and healjson has nothing to do (a `Strict` field stays strict)."""
    capability: HealCapability[Any] | None = HealCapability() if healed else None
    server.extend([search_call('{"query": "red shoes", "limit": "5"}'), final()])
    made = setup(server, capability)
    assert made.run("sync").output == EXPECTED
    assert len(server.requests) == 2
    assert made.executed == [GOOD_ARGS]
    assert capability is None or capability.records() == []


def test_clean_arguments_are_not_touched(server: ScriptedServer) -> None:
    """Clean tool arguments reach the tool untouched and leave no record."""
    capability: HealCapability[Any] = HealCapability()
    server.extend([search_call(clean_args()), final()])
    made = setup(server, capability)
    assert made.run("sync").output == EXPECTED
    assert len(server.requests) == 2
    assert made.executed == [GOOD_ARGS]
    assert capability.records() == []


def test_a_cut_string_is_a_retry_whose_prompt_carries_the_diagnostic(
    server: ScriptedServer,
) -> None:
    """A string cut by the token limit cannot be restored: the model is asked again, told
    what was cut and how to fix it."""
    capability: HealCapability[Any] = HealCapability()
    cut = '{"query": "red sh'
    server.extend(
        [
            search_call(cut, finish="length"),
            search_call(clean_args(), call_id="call_2"),
            final(),
        ]
    )
    made = setup(server, capability)
    assert made.run("sync").output == EXPECTED
    assert len(server.requests) == 3
    assert made.executed == [GOOD_ARGS]
    (retry,) = tool_messages(server.requests[1])
    assert "healjson" in retry
    assert "search_tool" in retry
    assert "cut off" in retry  # the constraint
    assert "token limit was reached" in retry  # read as cut: the model's reply said `length`
    assert "fix:" in retry  # the prescription
    (record,) = capability.records()
    assert record.action == "retry"
    assert record.diagnostics


def test_an_unsaveable_value_is_a_retry_with_value_constraint_and_prescription(
    server: ScriptedServer,
) -> None:
    """A value no local repair saves becomes a retry whose message gives the value, the
    constraint and the prescription."""
    capability: HealCapability[Any] = HealCapability()
    server.extend(
        [
            search_call('{"query": "red shoes", "limit": "many"}'),
            search_call(clean_args(), call_id="call_2"),
            final(),
        ]
    )
    made = setup(server, capability)
    assert made.run("sync").output == EXPECTED
    assert len(server.requests) == 3
    (retry,) = tool_messages(server.requests[1])
    assert '`limit` = "many"' in retry  # the value, where it is
    assert "rule:" in retry  # the constraint
    assert "fix:" in retry  # the prescription
    assert made.executed == [GOOD_ARGS]  # never run with the bad value


@contract(fields=("limit",))
def limit_in_range(args: dict[str, Any]) -> Violation | None:
    """At most 50 results."""
    if not 1 <= args["limit"] <= 50:
        return Violation(f"limit must be between 1 and 50, got {args['limit']}")
    return None


@pytest.mark.parametrize("mode", MODES)
def test_a_tool_contract_breach_is_a_retry_naming_the_breach(
    server: ScriptedServer, mode: str
) -> None:
    """A tool contract breach becomes a retry naming the breach, and the tool never runs with the
    breaching arguments."""
    capability: HealCapability[Any] = HealCapability(
        tool_contracts={"search_tool": [limit_in_range]}
    )
    server.extend(
        [
            search_call('{"query": "red shoes", "limit": 500}'),
            search_call(clean_args(), call_id="call_2"),
            final(),
        ]
    )
    made = setup(server, capability)
    assert made.run(mode).output == EXPECTED
    assert len(server.requests) == 3
    assert made.executed == [GOOD_ARGS]  # the tool never ran with 500
    (retry,) = tool_messages(server.requests[1])
    assert "limit must be between 1 and 50, got 500" in retry
    assert "`limit` = 500" in retry
    assert "the arguments of tool `search_tool` need a fix (1 problem)" in retry
    (record,) = capability.records()
    assert (record.action, record.diagnostics[0].rule) == ("retry", "limit_in_range")


def test_a_healed_value_is_still_judged_by_the_contracts(server: ScriptedServer) -> None:
    """A repaired argument goes through the contracts like any other: never passed on
    unjudged."""
    capability: HealCapability[Any] = HealCapability(
        tool_contracts={"search_tool": [limit_in_range]}
    )
    server.extend(
        [
            search_call("{'query': 'red shoes', 'limit': 500}"),
            search_call(clean_args(), call_id="call_2"),
            final(),
        ]
    )
    made = setup(server, capability)
    assert made.run("sync").output == EXPECTED
    assert len(server.requests) == 3
    assert made.executed == [GOOD_ARGS]
    assert [r.action for r in capability.records()] == ["healed", "retry"]


def test_a_warn_contract_keeps_the_value_and_records_it(server: ScriptedServer) -> None:
    """A broken `warn` tool contract keeps the value, runs the tool, and records the warning."""

    @contract(fields=("limit",), on_fail="warn")
    def small_limit(args: dict[str, Any]) -> Violation | None:
        return Violation("a limit above 3 is slow") if args["limit"] > 3 else None

    capability: HealCapability[Any] = HealCapability(tool_contracts={"search_tool": [small_limit]})
    server.extend([search_call(clean_args()), final()])
    made = setup(server, capability)
    result = made.run("sync")
    assert result.output == EXPECTED
    assert len(server.requests) == 2
    assert made.executed == [GOOD_ARGS]
    (record,) = capability.records(result.run_id)
    assert record.action == "warned"
    assert "slow" in record.diagnostics[0].constraint


def test_a_contract_that_raises_stops_the_run(server: ScriptedServer) -> None:
    """A contract's bug is not the model's to fix: pydantic-ai's `UserError`, and the tool never
    runs with arguments no rule judged."""

    @contract(fields=("limit",))
    def buggy(args: dict[str, Any]) -> Violation | None:
        raise KeyError("limits")

    capability: HealCapability[Any] = HealCapability(tool_contracts={"search_tool": [buggy]})
    server.extend([search_call(clean_args()), final()])
    made = setup(server, capability)
    with pytest.raises(UserError, match="buggy"):
        made.run("sync")
    assert made.executed == []
    assert len(server.requests) == 1


def test_each_rule_keeps_its_own_policy(server: ScriptedServer) -> None:
    """Two rules of the same name: the one that warns keeps the value, the other re-asks."""

    def rule(on_fail: Any, limit: int) -> Any:
        @contract(fields=("limit",), name="limit_rule", on_fail=on_fail)
        def check(args: dict[str, Any]) -> Violation | None:
            return Violation(f"limit above {limit}") if args["limit"] > limit else None

        return check

    capability: HealCapability[Any] = HealCapability(
        tool_contracts={"search_tool": [rule("warn", 3), rule("reask", 50)]}
    )
    server.extend(
        [
            search_call('{"query": "red shoes", "limit": 500}'),
            search_call(clean_args(), call_id="call_2"),
            final(),
        ]
    )
    made = setup(server, capability)
    assert made.run("sync").output == EXPECTED
    assert made.executed == [GOOD_ARGS]
    (retry,) = tool_messages(server.requests[1])
    assert "limit above 50" in retry
    assert "limit above 3" not in retry
    assert [r.action for r in capability.records()] == ["warned", "retry", "warned"]


@contract(fields=("limit",))
def caps_the_limit(args: dict[str, Any]) -> Violation | None:
    """A contract with a bug: it changes the arguments it judges."""
    args["limit"] = min(args["limit"], 3)
    return None


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("arguments", [clean_args(), MALFORMED_ARGS["single_quotes"]])
def test_a_tool_contract_that_changes_the_arguments_stops_the_run(
    server: ScriptedServer, mode: str, arguments: str
) -> None:
    """A tool contract that changes the arguments it judges is a bug of the contract, judged as
    a run judges: pydantic-ai's `UserError` naming it, the tool never run, no retry."""
    capability: HealCapability[Any] = HealCapability(
        tool_contracts={"search_tool": [caps_the_limit]}
    )
    server.extend([search_call(arguments), search_call(clean_args(), call_id="c2"), final()])
    made = setup(server, capability)
    with pytest.raises(UserError, match="contract `caps_the_limit` changed the value it checks"):
        made.run(mode)
    assert made.executed == []
    assert len(server.requests) == 1
    assert [r.action for r in capability.records()] == (
        [] if arguments == clean_args() else ["healed"]
    )


@pytest.mark.parametrize("mode", MODES)
def test_an_output_contract_that_changes_the_output_stops_the_run(
    server: ScriptedServer, mode: str
) -> None:
    """An output contract that changes the output it judges is a bug of the contract:
    pydantic-ai's `UserError` naming it, never a run that returns the changed value."""

    @contract(fields=("hits",))
    def rounds_hits(report: Report) -> Violation | None:
        report.hits = 10
        return None

    capability: HealCapability[Any] = HealCapability(contracts=[rounds_hits])
    server.extend([final(), final(call_id="call_10")])
    with pytest.raises(UserError, match="contract `rounds_hits` changed the value it checks"):
        setup(server, capability).run(mode)
    assert len(server.requests) == 1


@contract(fields=("limit",), on_fail="stop")
def never_bulk(args: dict[str, Any]) -> Violation | None:
    """More than 50 results is never asked for again."""
    return Violation("limit must be at most 50") if args["limit"] > 50 else None


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "arguments", ['{"query": "red shoes", "limit": 500}', "{'query': 'red shoes', 'limit': 500}"]
)
def test_a_stop_rule_broken_by_tool_arguments_ends_the_run(
    server: ScriptedServer, mode: str, arguments: str
) -> None:
    """A `"stop"` rule the tool's arguments break ends the run with `ContractStopped` (a
    pydantic-ai `AgentRunError`) naming the rule: the tool never runs, the model is never asked
    again, and the stop is recorded and sent as an event."""
    capability: HealCapability[Any] = HealCapability(tool_contracts={"search_tool": [never_bulk]})
    server.extend([search_call(arguments), search_call(clean_args(), call_id="c2"), final()])
    made = setup(server, capability)
    with capture_events() as logs, pytest.raises(ContractStopped) as raised:
        made.run(mode)
    assert not isinstance(raised.value, UserError | UnexpectedModelBehavior)
    assert raised.value.rules == ("never_bulk",)
    assert [d.value for d in raised.value.diagnostics] == [500]
    assert "`never_bulk`" in str(raised.value)
    assert 'on_fail="stop"' in str(raised.value)
    assert "tool `search_tool`" in str(raised.value)
    assert "limit must be at most 50" in str(raised.value)
    assert made.executed == []
    assert len(server.requests) == 1
    stopped = capability.records()[-1]
    assert (stopped.action, stopped.diagnostics[0].rule) == ("stopped", "never_bulk")
    assert logs[-1]["event"] == "healjson.pydantic_ai.stopped"


@pytest.mark.parametrize("mode", MODES)
def test_a_stop_rule_broken_by_the_output_ends_the_run(server: ScriptedServer, mode: str) -> None:
    """A `"stop"` rule the output breaks ends the run with `ContractStopped` naming the rule (not
    pydantic-ai's "Exceeded maximum output retries"), with no retry."""

    @contract(fields=("hits",), on_fail="stop")
    def at_most_ten_hits(report: Report) -> Violation | None:
        return Violation("at most 10 hits") if report.hits > 10 else None

    capability: HealCapability[Any] = HealCapability(contracts=[at_most_ten_hits])
    server.extend([final('{"summary": "50 hits", "hits": 50}'), final(call_id="call_10")])
    with pytest.raises(ContractStopped, match="`at_most_ten_hits`"):
        setup(server, capability).run(mode)
    assert len(server.requests) == 1
    [stopped] = capability.records()
    assert (stopped.action, stopped.kind) == ("stopped", "output")


# ---------------------------------------------------------------------------------------------
# Output
# ---------------------------------------------------------------------------------------------

MALFORMED_REPORTS = {
    "trailing_comma": '{"summary": "red shoes: 5", "hits": 5,}',
    "single_quotes": "{'summary': 'red shoes: 5', 'hits': 5}",
    "key_case": '{"Summary": "red shoes: 5", "hits": 5}',
    "prose_around": 'Here it is: {"summary": "red shoes: 5", "hits": 5} Done.',
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("malformation", sorted(MALFORMED_REPORTS))
def test_the_output_tool_is_healed(server: ScriptedServer, malformation: str, mode: str) -> None:
    """A malformed structured output pydantic-ai alone re-asks for is healed locally in one
    request."""
    broken = MALFORMED_REPORTS[malformation]
    server.extend([final(broken), final(call_id="call_10")])
    assert setup(server).run(mode).output == EXPECTED
    assert len(server.requests) == 2  # pydantic-ai alone re-asks

    with ScriptedServer([final(broken)]) as healed_server:
        capability: HealCapability[Any] = HealCapability()
        assert setup(healed_server, capability).run(mode).output == EXPECTED
        assert len(healed_server.requests) == 1
        (record,) = capability.records()
        assert (record.action, record.kind, record.name) == ("healed", "output", "final_result")


def test_native_output_text_is_healed(server: ScriptedServer) -> None:
    """`NativeOutput`: the output is the reply's text (`response_format`), read by L1."""
    capability: HealCapability[Any] = HealCapability()
    server.push(ScriptedReply(content="{'summary': 'red shoes: 5', 'hits': 5,}"))
    made = setup(server, capability, output_type=NativeOutput(Report))
    assert made.run("sync").output == EXPECTED
    assert len(server.requests) == 1
    assert server.requests[0].response_format is not None  # the native mode was used
    (record,) = capability.records()
    assert Flag.SYNTAX_REPAIRED in record.flags


def test_a_non_object_output_is_healed_in_its_envelope(server: ScriptedServer) -> None:
    """`output_type=list[int]`: pydantic-ai wraps it as `{"response": [...]}`."""
    capability: HealCapability[Any] = HealCapability()
    server.push(final("{'response': [1, 2, 3],}"))
    assert setup(server, capability, output_type=list[int]).run("sync").output == [1, 2, 3]
    assert len(server.requests) == 1


@contract(fields=("hits", "summary"))
def hits_in_summary(report: Report) -> Violation | None:
    """The summary states the hit count."""
    if str(report.hits) not in report.summary:
        return Violation("the summary must state the number of hits")
    return None


@pytest.mark.parametrize("mode", MODES)
def test_an_output_contract_breach_is_a_retry(server: ScriptedServer, mode: str) -> None:
    """An output contract breach becomes a retry naming the breach."""
    capability: HealCapability[Any] = HealCapability(contracts=[hits_in_summary])
    server.extend([final('{"summary": "red shoes", "hits": 5}'), final(call_id="call_10")])
    assert setup(server, capability).run(mode).output == EXPECTED
    assert len(server.requests) == 2
    (retry,) = tool_messages(server.requests[1])
    assert "the summary must state the number of hits" in retry
    assert "healjson: the output needs a fix (1 problem):" in retry


def test_an_unsaveable_output_is_a_retry_with_the_diagnostic(server: ScriptedServer) -> None:
    """An output no local repair saves becomes a retry carrying the diagnostic and its fix."""
    capability: HealCapability[Any] = HealCapability()
    server.extend([final('{"summary": "red shoes: 5", "hits": "lots"}'), final(call_id="c2")])
    assert setup(server, capability).run("sync").output == EXPECTED
    (retry,) = tool_messages(server.requests[1])
    assert '`hits` = "lots"' in retry
    assert "fix:" in retry


# ---------------------------------------------------------------------------------------------
# Streaming
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("responses", [False, True], ids=["chat", "responses"])
def test_streamed_output_is_healed(server: ScriptedServer, responses: bool) -> None:
    """`run_stream`: partial outputs are pydantic-ai's own partial reading; the final output
    is healed (no re-ask)."""
    capability: HealCapability[Any] = HealCapability()
    server.extend(
        [
            search_call("{'query': 'red shoes', 'limit': 5}"),
            final('{"Summary": "red shoes: 5", "hits": 5,}'),
        ]
    )
    made = setup(server, capability, responses=responses)

    async def go() -> tuple[list[Any], Any]:
        async with made.client, made.agent.run_stream("Find red shoes and report.") as result:
            partials = [output async for output in result.stream_output(debounce_by=None)]
            return partials, await result.get_output()

    partials, output = asyncio.run(go())
    assert output == EXPECTED
    assert len(server.requests) == 2
    assert all(request.streamed for request in server.requests)
    assert made.executed == [GOOD_ARGS]
    assert partials[-1] == EXPECTED
    assert [r.kind for r in capability.records()] == ["tool", "output"]


def test_streamed_output_sync(server: ScriptedServer) -> None:
    """A streamed structured output is healed in one streamed request, through `run_stream_sync`."""
    capability: HealCapability[Any] = HealCapability()
    server.push(final("{'summary': 'red shoes: 5', 'hits': 5}"))
    made = setup(server, capability)
    with sync_loop() as loop:
        try:
            assert made.agent.run_stream_sync("Report.").get_output() == EXPECTED
        finally:
            loop.run_until_complete(made.client.close())
    assert len(server.requests) == 1
    assert server.requests[0].streamed


# ---------------------------------------------------------------------------------------------
# The Responses API, records and events, the missing extra
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_responses_model_tool_arguments_are_healed(server: ScriptedServer, mode: str) -> None:
    """Tool arguments are healed with pydantic-ai's Responses model too."""
    capability: HealCapability[Any] = HealCapability()
    server.extend([search_call('{"query": "red shoes", "limit": 5,}'), final()])
    made = setup(server, capability, responses=True)
    assert made.run(mode).output == EXPECTED
    assert len(server.requests) == 2
    assert server.requests[0].path.endswith("/responses")
    assert made.executed == [GOOD_ARGS]


def test_records_are_kept_per_run_and_sent_as_events(server: ScriptedServer) -> None:
    """The capability keeps a record per healed step with its run's id, and sends each as a
    healjson event."""
    capability: HealCapability[Any] = HealCapability()
    server.extend([search_call("{'query': 'red shoes', 'limit': 5}"), final()])
    server.extend([search_call(clean_args()), final()])
    made = setup(server, capability)
    with capture_events() as logs, sync_loop() as loop:
        try:
            first = made.agent.run_sync("Find.")
            second = made.agent.run_sync("Find again.")
        finally:
            loop.run_until_complete(made.client.close())
    assert [r.action for r in capability.records(first.run_id)] == ["healed"]
    assert capability.records(second.run_id) == []
    assert capability.heals == capability.records(first.run_id)
    healed = [e for e in logs if e["event"] == "healjson.pydantic_ai.healed"]
    assert len(healed) == 1
    assert healed[0]["run_id"] == first.run_id
    assert healed[0]["name"] == "search_tool"
    assert healed[0]["flags"] == ["syntax_repaired"]


def test_arguments_given_as_a_dict_are_healed_too() -> None:
    """Providers that hand pydantic-ai parsed arguments (a dict, not text): a key in the wrong
    case is aligned all the same."""
    from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            args = {"Query": "red shoes", "limit": 5}
            return ModelResponse(parts=[ToolCallPart("search_tool", args, "call_1")])
        return ModelResponse(parts=[ToolCallPart("final_result", json.loads(GOOD_REPORT), "c2")])

    capability: HealCapability[Any] = HealCapability()
    executed: Calls = []
    agent: Agent[None, Report] = Agent(
        FunctionModel(model), output_type=Report, capabilities=[capability]
    )

    @agent.tool_plain
    def search_tool(query: str, limit: int) -> str:
        executed.append({"query": query, "limit": limit})
        return "found"

    with sync_loop():
        assert agent.run_sync("Find.").output == EXPECTED
    assert executed == [GOOD_ARGS]
    (record,) = capability.records()
    assert record.flags == (Flag.KEYS_ALIGNED,)
    assert json.loads(record.raw) == {"Query": "red shoes", "limit": 5}


class Capped(BaseModel):
    """Its validator needs the run's validation context (`max_hits`)."""

    summary: str
    hits: int

    @field_validator("hits")
    @classmethod
    def within_cap(cls, hits: int, info: ValidationInfo) -> int:
        if not isinstance(info.context, Mapping):
            raise ValueError("no validation context")
        if hits > info.context["max_hits"]:
            raise ValueError(f"at most {info.context['max_hits']} hits")
        return hits


@pytest.mark.parametrize("hits", [5, 50])
def test_the_validation_context_reaches_the_repair(server: ScriptedServer, hits: int) -> None:
    """`Agent(validation_context=...)` is pydantic's context in healjson's reading too: the
    repaired output validates under it (5), or its rule is the retry's diagnostic (50)."""
    capability: HealCapability[Any] = HealCapability()
    server.extend([final(f"{{'summary': 'red shoes: 5', 'hits': {hits},}}"), final()])
    made = setup(server, capability, output_type=Capped)
    made.agent = Agent(
        made.agent.model,
        output_type=Capped,
        capabilities=[capability],
        validation_context={"max_hits": 10},
    )
    output = made.run("sync").output
    assert isinstance(output, Capped)
    assert output.model_dump() == {"summary": "red shoes: 5", "hits": 5}
    if hits == 5:
        assert len(server.requests) == 1
        assert [r.action for r in capability.records()] == ["healed"]
    else:
        assert len(server.requests) == 2
        (retry,) = tool_messages(server.requests[1])
        assert "`hits` = 50" in retry
        assert "at most 10 hits" in retry


def test_a_retry_is_one_event_of_its_own(server: ScriptedServer) -> None:
    """A retry healjson asks for is `healjson.pydantic_ai.retry` (with pydantic-ai's run id and
    the diagnostics), not a healjson run that degraded."""
    capability: HealCapability[Any] = HealCapability()
    server.extend(
        [
            search_call('{"query": "red shoes", "limit": "many"}'),
            search_call(clean_args(), call_id="call_2"),
            final(),
        ]
    )
    made = setup(server, capability)
    with capture_events() as logs:
        result = made.run("sync")
    assert [e["event"] for e in logs] == ["healjson.pydantic_ai.retry"]
    assert logs[0]["run_id"] == result.run_id
    assert logs[0]["errors"] == [
        "limit: must be a valid integer, unable to parse string as an integer"
    ]


def test_records_are_bounded() -> None:
    """The capability keeps at most `max_records` records, dropping the oldest."""
    capability: HealCapability[Any] = HealCapability(max_records=2)
    for number in range(3):
        capability._record(HealRecord("healed", "tool", "t", str(number), None, "{}"))
    assert [r.run_id for r in capability.records()] == ["1", "2"]


def test_bad_configuration_raises_at_once() -> None:
    """`HealCapability` refuses contracts that are not functions and tool contracts keyed by
    anything but tool names."""
    with pytest.raises(TypeError, match="contracts must be functions"):
        HealCapability(contracts=[42])
    with pytest.raises(TypeError, match="tool names"):
        HealCapability(tool_contracts={1: []})  # type: ignore[dict-item]


def test_without_the_extra_the_import_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Importing `healjson.pydantic_ai` without pydantic-ai raises an `ImportError` naming the
    `pydantic-ai` extra."""
    monkeypatch.setitem(sys.modules, "pydantic_ai", None)
    monkeypatch.delitem(sys.modules, "healjson.pydantic_ai", raising=False)
    with pytest.raises(ImportError, match=r"pip install 'healjson\[pydantic-ai\]'"):
        importlib.import_module("healjson.pydantic_ai")
    monkeypatch.undo()
    assert importlib.import_module("healjson.pydantic_ai").HealCapability is not None


def test_importing_healjson_does_not_import_pydantic_ai() -> None:
    """`import healjson` does not import pydantic-ai."""
    import subprocess

    code = "import healjson, sys; print('pydantic_ai' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"


# ---------------------------------------------------------------------------------------------
# The property: a tool runs with exactly what the model meant, or the model is asked again
# ---------------------------------------------------------------------------------------------

TICKETS = st.fixed_dictionaries(
    {
        "query": st.text(max_size=20),
        "limit": st.integers(-1000, 1000),
        "exact": st.none() | st.booleans(),
    }
)


@settings(max_examples=20, deadline=None)
@given(data=st.data(), ticket=TICKETS)
def test_a_tool_runs_with_the_ticket_or_the_model_is_asked_again(
    data: st.DataObject, ticket: dict[str, Any]
) -> None:
    """Any rendering of the arguments the way models break JSON (`healjson.testing.corrupted`):
    a recoverable one runs the tool with exactly the ticket and no re-ask; a cut one is asked
    again (one more call), and the tool runs once, with the ticket."""
    from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    broken = data.draw(corrupted(ticket))
    calls: list[int] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        calls.append(len(messages))
        if len(calls) == 1:
            part = ToolCallPart("search_tool", broken.text, "call_1")
            return ModelResponse(parts=[part], finish_reason=broken.finish_reason or "tool_call")
        if len(calls) == 2 and not broken.recoverable:
            return ModelResponse(parts=[ToolCallPart("search_tool", json.dumps(ticket), "c2")])
        return ModelResponse(parts=[ToolCallPart("final_result", json.loads(GOOD_REPORT), "c3")])

    executed: Calls = []
    agent: Agent[None, Report] = Agent(
        FunctionModel(model), output_type=Report, capabilities=[HealCapability()]
    )

    @agent.tool_plain
    def search_tool(query: str, limit: int, exact: bool | None = None) -> str:
        executed.append({"query": query, "limit": limit, "exact": exact})
        return "found"

    with sync_loop():
        assert agent.run_sync("Find.").output == EXPECTED
    assert executed == [ticket]
    assert len(calls) == (2 if broken.recoverable else 3)
