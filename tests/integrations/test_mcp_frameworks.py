"""The agent frameworks' MCP clients, healed: pydantic-ai's `MCPToolset` through
`healjson.pydantic_ai.heal_mcp`, and the OpenAI Agents SDK's MCP servers through
`healjson.agents.heal_mcp`, each running a real agent against the scripted MCP server (in
memory, through each framework's own transport seam) and a scripted model.

Each family runs bare too: pydantic-ai's run fails on the SDK's `RuntimeError`; the Agents SDK
tells the model only "An error occurred while running the tool".
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import agents
import anyio
import pytest
from agents import Agent, OpenAIChatCompletionsModel, Runner
from agents.mcp import MCPServerStdio
from fastmcp import Client as FastMCPClient
from fastmcp.client.transports import ClientTransport
from fastmcp.client.transports.base import TransportOptions
from mcp.shared.memory import create_client_server_memory_streams
from openai import AsyncOpenAI, DefaultAsyncHttpxClient
from pydantic_ai import Agent as PydanticAgent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import healjson
import healjson.agents
import healjson.pydantic_ai
from healjson import Violation
from healjson.testing import ScriptedReply, ScriptedServer
from mcp_kit import FAMILIES, GOOD, Family, run, weather_server
from sdk_calls import TLS

agents.set_tracing_disabled(True)


# ---------------------------------------------------------------------------------------------
# pydantic-ai
# ---------------------------------------------------------------------------------------------


class MemoryTransport(ClientTransport):
    """FastMCP's client over the SDK's memory streams to a low-level server (FastMCP's own
    in-memory transport takes only `MCPServer` and FastMCP servers)."""

    def __init__(self, server: Any) -> None:
        self.server = server

    @contextlib.asynccontextmanager
    async def connect_session(
        self, *, transport_options: TransportOptions | None = None, **session_kwargs: Any
    ) -> AsyncIterator[Any]:
        options = transport_options or TransportOptions()
        server = self.server
        async with (
            create_client_server_memory_streams() as (client_side, server_side),
            anyio.create_task_group() as group,
        ):
            group.start_soon(
                lambda: server.run(*server_side, server.create_initialization_options())
            )
            async with options.session_class(*client_side, **session_kwargs) as session:
                yield session
            group.cancel_scope.cancel()


def weather_model(seen: list[list[ModelMessage]], arguments: dict[str, Any]) -> FunctionModel:
    """A model that calls `get_weather` with `arguments`, then answers with what it was told
    (the tool's return, or the retry prompt pydantic-ai made of a tool error)."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(messages)
        for part in messages[-1].parts:
            # pydantic-ai 2.38 made a tool error a `RetryPromptPart`; 2.68 a `ToolReturnPart`
            # whose `outcome` says it (`retried`, or `failed`)
            failed = getattr(part, "outcome", "success") in {"retried", "failed"}
            if isinstance(part, ToolReturnPart) and not failed:
                return ModelResponse(parts=[TextPart(f"weather: {json.dumps(part.content)}")])
            if isinstance(part, RetryPromptPart | ToolReturnPart):
                return ModelResponse(parts=[TextPart(f"tool failed: {part.content}")])
        return ModelResponse(parts=[ToolCallPart("get_weather", arguments)])

    return FunctionModel(model)


def run_pydantic_ai(
    family: Family, *, heal: bool, arguments: Any = None, **options: Any
) -> tuple[Any, int, Any]:
    """One agent run whose tool answers `family` to a call with `arguments` (default: `City`
    where the schema says `city`): (output or exception, model calls, server)."""
    server = weather_server(family.sent, repeat=True)
    toolset: MCPToolset[Any] = MCPToolset(FastMCPClient(MemoryTransport(server.server)))
    if heal:
        assert toolset is healjson.pydantic_ai.heal_mcp(toolset, **options)
    seen: list[list[ModelMessage]] = []
    model = weather_model(seen, {"City": "Oslo"} if arguments is None else arguments)
    agent = PydanticAgent(model, toolsets=[toolset])

    async def go() -> Any:
        async with agent:
            try:
                return (await agent.run("The weather in Oslo?")).output
            except Exception as exc:
                return exc

    return run(go), len(seen), server


@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
def test_pydantic_ai_bare_fails_the_run_on_each_family(family: Family) -> None:
    """The SDK's `RuntimeError` escapes the toolset: the agent run fails."""
    output, calls, _ = run_pydantic_ai(family, heal=False, arguments={"city": "Oslo"})
    assert isinstance(output, RuntimeError)
    assert 1 == calls


def test_pydantic_ai_bare_spends_a_model_call_on_an_argument_key_in_another_case() -> None:
    """`City` for `city`: the server refuses the call (`-32602`) and the model's second call is
    answering pydantic-ai's retry prompt about it; healed, the call goes out aligned and the
    second call answers with the weather."""
    good = Family("good", FAMILIES[0].sent, GOOD)
    bare, _, _ = run_pydantic_ai(good, heal=False)
    healed, _, _ = run_pydantic_ai(good, heal=True)
    assert bare.startswith("tool failed: Invalid params")
    assert f"weather: {json.dumps(GOOD)}" == healed


@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
def test_pydantic_ai_healed_gets_the_value_or_a_retry_with_the_diagnostics(
    family: Family,
) -> None:
    """Healed: the model sees the conforming value in the tool's return (two model calls, no
    retry); or, for what cannot be healed, pydantic-ai's retry prompt carries the diagnostics
    naming the field."""
    output, calls, server = run_pydantic_ai(family, heal=True)
    assert 2 == calls
    assert isinstance(output, str)
    if family.error_field is None:
        assert f"weather: {json.dumps(family.value)}" == output
    else:
        assert output.startswith("tool failed:")
        assert f"`{family.error_field}`" in output
    assert {"city": "Oslo"} == server.calls[0].arguments  # `City` aligned before it was sent


def test_pydantic_ai_tool_contracts_turn_a_breach_into_a_retry() -> None:
    """`heal_mcp(toolset, tool_contracts=...)`: a breach reaches the model as a retry."""

    def cold(value: dict[str, Any]) -> Violation | None:
        return Violation("expected below 0") if value["temperature"] >= 0 else None

    good = Family("good", FAMILIES[0].sent, GOOD)
    output, calls, _ = run_pydantic_ai(good, heal=True, tool_contracts={"get_weather": [cold]})
    assert 2 == calls
    assert "expected below 0" in output


def test_pydantic_ai_heal_mcp_refuses_what_is_not_a_toolset() -> None:
    """Something without a FastMCP client: a TypeError that names what it takes."""
    with pytest.raises(TypeError, match="MCPToolset"):
        healjson.pydantic_ai.heal_mcp(object())


# ---------------------------------------------------------------------------------------------
# The OpenAI Agents SDK
# ---------------------------------------------------------------------------------------------


class MemoryMCPServer(MCPServerStdio):
    """The Agents SDK's stdio server class with its streams replaced by the SDK's memory
    streams to a low-level server (everything else is the class's own)."""

    def __init__(self, server: Any, **options: Any) -> None:
        super().__init__(params={"command": "unused"}, **options)
        self.lowlevel = server

    @contextlib.asynccontextmanager
    async def _memory(self) -> AsyncIterator[Any]:
        server = self.lowlevel
        async with (
            create_client_server_memory_streams() as (client_side, server_side),
            anyio.create_task_group() as group,
        ):
            group.start_soon(
                lambda: server.run(*server_side, server.create_initialization_options())
            )
            yield client_side
            group.cancel_scope.cancel()

    def create_streams(self) -> Any:
        return self._memory()


def answer_with_the_tool_result(body: dict[str, Any]) -> ScriptedReply:
    """The scripted model: call `get_weather`, then say what the tool returned."""
    tool_messages = [m for m in body["messages"] if m.get("role") == "tool"]
    if not tool_messages:
        function = {"name": "get_weather", "arguments": '{"CITY": "Oslo"}'}
        call = {"id": "call_1", "type": "function", "function": function}
        return ScriptedReply(tool_calls=[call], finish_reason="tool_calls")
    return ScriptedReply(content=f"saw: {tool_messages[-1]['content']}")


def run_agents(family: Family, *, heal: bool) -> tuple[str, int, Any]:
    """One Agents SDK run whose MCP tool answers `family`: (final output, model calls, server)."""
    server = weather_server(family.sent, repeat=True)
    mcp_server = MemoryMCPServer(server.server, use_structured_content=True)
    if heal:
        assert mcp_server is healjson.agents.heal_mcp(mcp_server)

    async def go(base_url: str) -> Any:
        http = DefaultAsyncHttpxClient(verify=TLS)
        client = AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0, http_client=http)
        model = OpenAIChatCompletionsModel(model="scripted", openai_client=client)
        agent = Agent(name="weather", instructions="Use the tools.", model=model)
        agent.mcp_servers = [mcp_server]
        try:
            async with mcp_server:
                return (await Runner.run(agent, "The weather in Oslo?")).final_output
        finally:
            await client.close()

    with ScriptedServer([answer_with_the_tool_result], repeat=True) as model_server:
        output = run(lambda: go(model_server.base_url))
        return output, len(model_server.requests), server


@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
def test_agents_sdk_bare_tells_the_model_only_that_an_error_occurred(family: Family) -> None:
    """The SDK's `RuntimeError` becomes the Agents SDK's generic tool error message."""
    output, calls, _ = run_agents(family, heal=False)
    assert 2 == calls
    assert "An error occurred while running the tool" in output


@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
def test_agents_sdk_healed_hands_the_model_the_value_or_the_diagnostics(family: Family) -> None:
    """Healed: the model is handed the conforming structured content, or the diagnostics
    naming the field; the arguments went out aligned."""
    output, calls, server = run_agents(family, heal=True)
    assert 2 == calls
    if family.error_field is None:
        assert f"saw: {json.dumps(family.value)}" == output
    else:
        assert f"`{family.error_field}`" in output
    assert {"city": "Oslo"} == server.calls[0].arguments


def test_agents_heal_mcp_refuses_what_is_not_an_mcp_server() -> None:
    """Something without `session` and `call_tool`: a TypeError that names what it takes."""
    with pytest.raises(TypeError, match="MCPServerStdio"):
        healjson.agents.heal_mcp(object())


def test_heal_mcp_twice_is_one_healing_layer() -> None:
    """Healing a healed object again wraps the framework's own method, not healjson's."""
    server = MemoryMCPServer(weather_server().server)
    healjson.agents.heal_mcp(server)
    first = server.call_tool
    healjson.agents.heal_mcp(server)
    assert first._healjson_heals_mcp is server.call_tool._healjson_heals_mcp  # type: ignore[attr-defined]
    toolset: MCPToolset[Any] = MCPToolset(FastMCPClient(MemoryTransport(weather_server().server)))
    healjson.pydantic_ai.heal_mcp(toolset)
    once = toolset.client.call_tool_mcp
    healjson.pydantic_ai.heal_mcp(toolset)
    assert once._healjson_heals_mcp is toolset.client.call_tool_mcp._healjson_heals_mcp  # type: ignore[attr-defined]
