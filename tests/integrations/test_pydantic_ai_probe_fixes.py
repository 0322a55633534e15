"""`healjson.pydantic_ai`: where healjson has nothing to heal, pydantic-ai's own behaviour stands
(a cut `NativeOutput` / `PromptedOutput` reply); `"fix"` and `"drop"` rules are applied locally,
as at every entry point; the key of the model's own client never reaches a record. A real
pydantic-ai `Agent` with its OpenAI model over real HTTP to `ScriptedServer`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from pydantic import BaseModel

pytest.importorskip("pydantic_ai")

from openai import AsyncOpenAI
from pydantic_ai import (
    Agent,
    IncompleteToolCall,
    NativeOutput,
    OutputTokenLimitExceeded,
    PromptedOutput,
)
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

from healjson import Flag, Violation, contract
from healjson.pydantic_ai import ContractStopped, HealCapability
from healjson.testing import ScriptedReply, ScriptedServer, capture_events

from .test_pydantic_ai import (
    EXPECTED,
    GOOD_ARGS,
    Report,
    clean_args,
    final,
    search_call,
    setup,
)


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running


CUT = '{"hits": 5, "summary": "a long summary that got c'


@pytest.mark.parametrize("wrap", [NativeOutput, PromptedOutput])
@pytest.mark.parametrize("healed", [False, True])
def test_a_cut_text_output_ends_the_run_as_pydantic_ai_alone_does(
    server: ScriptedServer, wrap: Any, healed: bool
) -> None:
    """A text output the token limit cut off raises pydantic-ai's `OutputTokenLimitExceeded`
    after one model call, with or without the capability (no retry with the same limit)."""
    capability: HealCapability[Any] | None = HealCapability() if healed else None
    cut = ScriptedReply(content=CUT, finish_reason="length")
    server.extend([cut, cut, cut])
    made = setup(server, capability, output_type=wrap(Report))
    with pytest.raises(OutputTokenLimitExceeded):
        made.run("async")
    assert len(server.requests) == 1
    assert capability is None or capability.records() == []  # nothing healjson did


class Order(BaseModel):
    customer: str
    qty: int


class Basket(BaseModel):
    lines: list[Order]


@contract(
    fields=("customer",),
    on_fail="fix",
    fix=lambda o: o.model_copy(update={"customer": o.customer.strip()}),
)
def stripped(order: Order) -> Violation | None:
    """The customer's name has no surrounding spaces."""
    return (
        Violation("customer must be stripped") if order.customer != order.customer.strip() else None
    )


@contract(fields=("qty",), on_fail="drop", items="lines")
def positive(line: Order) -> Violation | None:
    """Each line orders at least one item."""
    return Violation("qty must be positive") if line.qty <= 0 else None


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_fix_rule_is_applied_locally_without_a_model_call(
    server: ScriptedServer, mode: str
) -> None:
    """An output breaking an `on_fail="fix"` rule is delivered fixed and flagged, in one call."""
    capability: HealCapability[Any] = HealCapability(contracts=[stripped])
    server.extend(
        [
            final('{"customer": " bob ", "qty": 2}'),
            final('{"customer": "bob", "qty": 2}', call_id="c2"),
        ]
    )
    result = setup(server, capability, output_type=Order).run(mode)
    assert result.output == Order(customer="bob", qty=2)
    assert len(server.requests) == 1
    (record,) = capability.records()
    assert record.action == "fixed"
    assert Flag.CONTRACT_FIXED in record.flags
    assert [d.rule for d in record.diagnostics] == ["stripped"]


def test_a_drop_rule_removes_the_items_locally_without_a_model_call(
    server: ScriptedServer,
) -> None:
    """A list item breaking an `on_fail="drop"` rule is removed locally, in one call."""
    capability: HealCapability[Any] = HealCapability(contracts=[positive])
    basket = '{"lines": [{"customer": "a", "qty": 1}, {"customer": "b", "qty": 0}]}'
    server.extend([final(basket), final('{"lines": []}', call_id="c2")])
    result = setup(server, capability, output_type=Basket).run("sync")
    assert result.output == Basket(lines=[Order(customer="a", qty=1)])
    assert len(server.requests) == 1
    (record,) = capability.records()
    assert (record.action, record.flags) == ("fixed", (Flag.ITEMS_DROPPED,))


@contract(fields=("limit",), on_fail="fix", fix=lambda args: {**args, "limit": 5})
def limit_at_most_five(args: dict[str, Any]) -> Violation | None:
    """The search asks for at most five results."""
    return Violation("limit above 5") if args["limit"] > 5 else None


def test_a_tool_fix_rule_runs_the_tool_with_the_fixed_arguments(server: ScriptedServer) -> None:
    """A tool's arguments breaking a fix rule are fixed locally (the tool runs on them once),
    unless the fixed arguments fail the tool's schema (then the model is asked again)."""
    capability: HealCapability[Any] = HealCapability(
        tool_contracts={"search_tool": [limit_at_most_five]}
    )
    server.extend(
        [
            search_call('{"query": "red shoes", "limit": 500}'),
            final(),
            search_call(clean_args(), call_id="c2"),
            final(call_id="c3"),
        ]
    )
    made = setup(server, capability)
    assert made.run("sync").output == EXPECTED
    assert made.executed == [GOOD_ARGS]
    assert len(server.requests) == 2  # the tool call, then the output: no re-ask
    assert [r.action for r in capability.records()] == ["fixed"]
    # a fix whose result the tool's schema refuses is never passed on: the model is asked
    with ScriptedServer() as refusing:

        @contract(fields=("limit",), on_fail="fix", fix=lambda args: {**args, "limit": "many"})
        def bad_fix(args: dict[str, Any]) -> Violation | None:
            """A fix that gives the schema another type."""
            return Violation("limit above 5") if args["limit"] > 5 else None

        capability = HealCapability(tool_contracts={"search_tool": [bad_fix]})
        refusing.extend(
            [
                search_call('{"query": "red shoes", "limit": 500}'),
                search_call(clean_args(), call_id="c2"),
                final(),
            ]
        )
        made = setup(refusing, capability)
        assert made.run("sync").output == EXPECTED
        assert made.executed == [GOOD_ARGS]
        assert len(refusing.requests) == 3
        assert [r.action for r in capability.records()] == ["retry"]


KEY = "sk-proj-Q9x7LmN2pR4tV6wY8zA1bC3dE5fG"


def _agent(server: ScriptedServer, capability: HealCapability[Any]) -> tuple[Any, Any]:
    """An agent over a client whose API key is `KEY`, with the search tool; its client."""
    client = AsyncOpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
    model = OpenAIChatModel("m", provider=OpenAIProvider(openai_client=client))
    agent: Agent[None, Any] = Agent(model, output_type=Report, capabilities=[capability])

    @agent.tool_plain
    def search_tool(query: str, limit: int) -> str:
        """Search the catalogue."""
        return "ok"

    return agent, client


def test_the_providers_key_echoed_by_the_model_is_never_kept(server: ScriptedServer) -> None:
    """The API key of the model's own client, echoed in a repaired tool call or a retried one,
    is redacted from every record's raw text, value, diagnostics and repr, and from events."""
    capability: HealCapability[Any] = HealCapability()
    server.extend(
        [
            search_call("{'query': '" + KEY + "', 'limit': 2,}"),
            search_call('{"query": "' + KEY + '", "limit": "lots"}', call_id="c2"),
            search_call(clean_args(), call_id="c3"),
            final(),
        ]
    )
    agent, client = _agent(server, capability)

    async def go() -> Any:
        async with client:  # closed after the run
            return await agent.run("go")

    with capture_events(include_content=True) as events:
        assert asyncio.run(go()).output == EXPECTED
    records = capability.records()
    assert [r.action for r in records] == ["healed", "retry"]
    for record in records:
        shown = repr(record) + record.raw + str(record.value) + repr(record.diagnostics)
        assert KEY not in shown
    assert "[redacted]" in records[0].raw
    assert KEY not in repr(list(events))


@contract(fields=("hits",), on_fail="warn")
def few_hits(report: Report) -> Violation | None:
    """At most 10 hits (a warning)."""
    return Violation("at most 10 hits") if report.hits > 10 else None


def test_an_output_records_repr_never_shows_the_providers_key(server: ScriptedServer) -> None:
    """An output record whose value is a model instance echoing the key: its `repr`, rendered
    inside the run, shows it redacted (the instance itself is the run's real value)."""
    capability: HealCapability[Any] = HealCapability(contracts=[few_hits])
    server.extend([final('{"summary": "' + KEY + '", "hits": 50}')])
    agent, client = _agent(server, capability)

    async def go() -> Any:
        async with client:
            return await agent.run("go")

    asyncio.run(go())
    (record,) = capability.records()
    assert "warned" == record.action
    assert KEY not in repr(record)
    assert "[redacted]" in repr(record)


@contract(fields=("query",), on_fail="stop")
def no_keys(arguments: dict[str, Any]) -> Violation | None:
    """A query holding a key is stopped."""
    return Violation("no keys in a query") if "sk-" in arguments["query"] else None


def test_a_stops_diagnostics_never_show_the_providers_key(server: ScriptedServer) -> None:
    """`ContractStopped.diagnostics` (for code: logged, pickled) carry the key redacted, as its
    message does."""
    capability: HealCapability[Any] = HealCapability(tool_contracts={"search_tool": [no_keys]})
    server.extend([search_call('{"query": "' + KEY + '", "limit": 5}')])
    agent, client = _agent(server, capability)

    async def go() -> Any:
        async with client:
            return await agent.run("go")

    with pytest.raises(ContractStopped) as stopped:
        asyncio.run(go())
    assert KEY not in str(stopped.value)
    assert KEY not in repr(stopped.value.diagnostics)


@pytest.mark.parametrize("wrap", [NativeOutput, PromptedOutput])
def test_a_cut_text_output_in_run_stream_raises_pydantic_ais_own_error(
    server: ScriptedServer, wrap: Any
) -> None:
    """`run_stream` of a text output the token limit cut off raises `OutputTokenLimitExceeded`
    with the capability as without it (a stream shows a capability no finish reason: L1
    reads the cut), after one call, and records no retry that never happened."""
    capability: HealCapability[Any] = HealCapability()
    server.extend([ScriptedReply(content=CUT, finish_reason="length")])
    made = setup(server, capability, output_type=wrap(Report))

    async def go() -> Any:
        async with made.client, made.agent.run_stream("report") as result:
            return await result.get_output()

    with pytest.raises(OutputTokenLimitExceeded):
        asyncio.run(go())
    assert len(server.requests) == 1
    assert capability.records() == []


@pytest.mark.parametrize("streamed", [False, True])
def test_a_cut_output_tool_call_raises_pydantic_ais_own_error(
    server: ScriptedServer, streamed: bool
) -> None:
    """An output tool call the token limit cut off raises `IncompleteToolCall`, streamed or
    not, as without the capability; no `retry` is recorded (none is made)."""
    capability: HealCapability[Any] = HealCapability()
    cut = final('{"summary": "a long summary that got c')
    server.extend([ScriptedReply(tool_calls=cut.tool_calls, finish_reason="length")])
    made = setup(server, capability)

    async def go() -> Any:
        async with made.client:
            if not streamed:
                return await made.agent.run("report")
            async with made.agent.run_stream("report") as result:
                return await result.get_output()

    with pytest.raises(IncompleteToolCall):
        asyncio.run(go())
    assert len(server.requests) == 1
    assert capability.records() == []
