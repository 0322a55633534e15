"""`healjson.mcp.heal_tools(server)` with the real `mcp` SDK: an `MCPServer` or a low-level
`Server` whose `tools/call` answers with conforming structured content, or an error result with
diagnostics, and accepts arguments that fit once normalised. The clients here are the bare SDK:
what a server sends is what any client (Cursor, Claude Desktop, the SDK) receives.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client, ClientSession, MCPError, types
from mcp.client.stdio import stdio_client
from mcp.server import MCPServer, Server
from pydantic import BaseModel

import healjson
from healjson import Flag, Violation, contract
from healjson.mcp import heal_tools
from healjson.testing import ScriptedToolResult
from mcp_kit import CONNECTIONS, FAMILIES, GOOD, Family, caught, connect, run, weather_server


class Weather(BaseModel):
    """What the `weather` tool of the `MCPServer` returns."""

    temperature: float
    city: str


class Filter(BaseModel):
    """An object-typed argument."""

    min_temperature: float
    units: str = "C"


def weather_app(returned: list[Any], *, heal: bool = True) -> MCPServer[Any]:
    """An `MCPServer` whose `weather` tool returns the next of `returned` (whatever it is)."""
    app: MCPServer[Any] = MCPServer("weather")

    @app.tool()
    def weather(city: str, where: Filter | None = None) -> Weather:
        """Today's weather."""
        return returned.pop(0)  # type: ignore[no-any-return]

    @app.tool()
    def count(n: int) -> int:
        """A count (a wrapped scalar output)."""
        return returned.pop(0)  # type: ignore[no-any-return]

    return heal_tools(app) if heal else app


async def call_app(app: MCPServer[Any], name: str = "weather", arguments: Any = None) -> Any:
    """One call with the bare SDK `Client`: its result (or the exception it raised)."""
    async with Client(app) as client:
        return await caught(client.call_tool(name, arguments or {"city": "Oslo"}))


def text_of(result: Any) -> str:
    """The result's text blocks, joined."""
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


# ---------------------------------------------------------------------------------------------
# MCPServer: the tool's return value
# ---------------------------------------------------------------------------------------------

SLOPPY_RETURNS = {
    "a_key_in_another_case": {"Temperature": 21.5, "city": "Oslo"},
    "a_number_as_a_string": {"temperature": "21.5", "city": "Oslo"},
    "json_text": '{"temperature": 21.5, "city": "Oslo"}',
    "wrapped_in_one_more_object": {"weather": {"temperature": 21.5, "city": "Oslo"}},
}


@pytest.mark.parametrize("returned", SLOPPY_RETURNS.values(), ids=SLOPPY_RETURNS)
def test_a_sloppy_return_value_goes_out_conforming(returned: Any) -> None:
    """The bare SDK client receives conforming structured content."""
    result = run(lambda: call_app(weather_app([returned])))
    assert False is result.is_error
    assert {"temperature": 21.5, "city": "Oslo"} == result.structured_content


def test_a_healed_return_value_has_the_healed_value_as_its_text() -> None:
    """The text block the SDK makes is made from the healed value (the `"21.5"` the SDK's own
    lax conversion accepts keeps the SDK's text: that value was never healjson's)."""
    result = run(lambda: call_app(weather_app([SLOPPY_RETURNS["a_key_in_another_case"]])))
    assert {"temperature": 21.5, "city": "Oslo"} == json.loads(text_of(result))


@pytest.mark.parametrize("returned", SLOPPY_RETURNS.values(), ids=SLOPPY_RETURNS)
def test_without_heal_tools_the_same_return_values_are_errors_or_protocol_failures(
    returned: Any,
) -> None:
    """The SDK alone answers an error result without diagnostics for the ones its own
    conversion refuses (the lax `"21.5"` it converts itself)."""
    result = run(lambda: call_app(weather_app([returned], heal=False)))
    if returned is SLOPPY_RETURNS["a_number_as_a_string"]:
        assert False is result.is_error
    else:
        assert True is result.is_error
        assert "rule:" not in text_of(result)


def test_an_unhealable_return_value_is_an_error_result_with_diagnostics() -> None:
    """A required field missing: an error result naming it (path, value, rule, fix), instead
    of the SDK's generic `Error executing tool`."""
    result = run(lambda: call_app(weather_app([{"city": "Oslo"}])))
    assert True is result.is_error
    text = text_of(result)
    assert "`temperature`" in text
    assert "rule: is required" in text
    assert "Error executing tool" not in text
    assert healjson.outcome_of(result) is None  # the client's copy: the outcome is server-side


def test_a_wrapped_scalar_output_is_healed_in_its_envelope() -> None:
    """A tool returning `int` gives `"seven"`: read as 7 in the SDK's `{"result": ...}`."""
    result = run(lambda: call_app(weather_app(["seven"]), "count", {"n": 1}))
    assert {"result": 7} == result.structured_content


def test_a_conforming_return_value_is_converted_by_the_sdk_as_always() -> None:
    """A model instance: the SDK's own conversion, unchanged."""
    result = run(lambda: call_app(weather_app([Weather(temperature=3, city="Oslo")])))
    assert {"temperature": 3.0, "city": "Oslo"} == result.structured_content


def test_a_tool_that_raises_is_still_the_sdks_error_result() -> None:
    """healjson heals values, not exceptions: a tool that raises keeps the SDK's answer."""
    app = weather_app([])  # pop from an empty list raises
    result = run(lambda: call_app(app))
    assert True is result.is_error
    assert "Error executing tool weather" in text_of(result)


def test_a_tool_returning_a_call_tool_result_is_healed_too() -> None:
    """A `CallToolResult` returned by the tool: its structured content healed."""
    returned = types.CallToolResult(
        content=[], structured_content={"TEMPERATURE": "21.5", "city": "Oslo"}
    )
    result = run(lambda: call_app(weather_app([returned])))
    assert {"temperature": 21.5, "city": "Oslo"} == result.structured_content


# ---------------------------------------------------------------------------------------------
# MCPServer: the arguments
# ---------------------------------------------------------------------------------------------


def test_arguments_that_fit_once_normalised_are_accepted() -> None:
    """Keys in another case and a stringified object argument: the tool runs."""
    returned: list[Any] = [Weather(temperature=1, city="Oslo")]
    app = weather_app(returned)
    sloppy = {"City": "Oslo", "where": '{"MinTemperature": "3"}'}
    result = run(lambda: call_app(app, arguments=sloppy))
    assert False is result.is_error
    assert [] == returned  # the tool ran


def test_without_heal_tools_those_arguments_are_refused() -> None:
    """The SDK alone refuses them (`city` missing): the tool does not run."""
    returned: list[Any] = [Weather(temperature=1, city="Oslo")]
    app = weather_app(returned, heal=False)
    sloppy = {"City": "Oslo", "where": '{"MinTemperature": "3"}'}
    result = run(lambda: call_app(app, arguments=sloppy))
    assert True is result.is_error
    assert 1 == len(returned)


# ---------------------------------------------------------------------------------------------
# The low-level Server
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", CONNECTIONS)
@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
def test_a_low_level_server_sends_each_family_healed_or_as_an_error_result(
    kind: str, family: Family
) -> None:
    """The scripted (low-level) server, healed: the bare SDK client never raises."""
    server = weather_server(family.sent)
    heal_tools(server.server)

    async def go() -> Any:
        async with connect(kind, server.server, heal=False) as session:
            return await caught(session.call_tool("get_weather", {"city": "Oslo"}))

    result = run(go)
    assert isinstance(result, types.CallToolResult)
    if family.error_field is None:
        assert family.value == result.structured_content
    else:
        assert True is result.is_error
        assert f"`{family.error_field}`" in text_of(result)


def test_a_non_object_result_on_a_2025_connection_is_an_error_result_not_a_protocol_error() -> None:
    """A list where the schema wants an object, on the handshake path (which allows only
    objects): healed servers answer an error result, bare ones a protocol error."""
    sent = ScriptedToolResult(structured=[1, 2], text=())
    bare, healed = weather_server(sent), weather_server(sent)
    heal_tools(healed.server)

    async def go(server: Any) -> Any:
        async with connect("session", server.server, heal=False) as session:
            return await caught(session.call_tool("get_weather", {"city": "Oslo"}))

    assert isinstance(run(lambda: go(bare)), MCPError)
    result = run(lambda: go(healed))
    assert True is result.is_error


def test_a_low_level_server_accepts_a_stringified_object_argument() -> None:
    """The schema-checking scripted server, healed: `-32602` no more."""
    server = weather_server(ScriptedToolResult(structured=GOOD))
    heal_tools(server.server)
    arguments = {"city": "Oslo", "options": '{"units": "C"}'}

    async def go() -> Any:
        async with connect("client", server.server, heal=False) as session:
            return await caught(session.call_tool("get_weather", arguments))

    result = run(go)
    assert False is result.is_error
    assert {"city": "Oslo", "options": {"units": "C"}} == server.calls[0].arguments


def test_error_results_and_tools_without_an_output_schema_pass_through() -> None:
    """The server's own error result and a schema-less tool's result go out as they were."""
    server = weather_server(
        ScriptedToolResult(text="down", is_error=True),
        echo=[ScriptedToolResult(structured={"Any": "thing"})],
    )
    heal_tools(server.server)

    async def go() -> tuple[Any, Any]:
        async with connect("client", server.server, heal=False) as session:
            return (
                await session.call_tool("get_weather", {"city": "Oslo"}),
                await session.call_tool("echo", {}),
            )

    failed, echoed = run(go)
    assert (True, "down") == (failed.is_error, text_of(failed))
    assert {"Any": "thing"} == echoed.structured_content


@contract(fields=("temperature",))
def not_boiling(value: dict[str, Any]) -> Violation | None:
    """Below 60 degrees."""
    return Violation("too hot to be true") if value["temperature"] >= 60 else None


def test_tool_contracts_judge_results_server_side() -> None:
    """A rule per tool: a breach is an error result naming it."""
    server = weather_server(ScriptedToolResult(structured={"temperature": 70, "city": "Oslo"}))
    heal_tools(server.server, tool_contracts={"get_weather": [not_boiling]})

    async def go() -> Any:
        async with connect("client", server.server, heal=False) as session:
            return await session.call_tool("get_weather", {"city": "Oslo"})

    result = run(go)
    assert True is result.is_error
    assert "too hot to be true" in text_of(result)


# ---------------------------------------------------------------------------------------------
# Configuration
# ---------------------------------------------------------------------------------------------


def test_heal_tools_twice_is_one_healing_layer() -> None:
    """Healing again replaces the layer: one judging run per result, not two."""
    server = weather_server(FAMILIES[1].sent)
    heal_tools(server.server)
    handler = server.server.get_request_handler("tools/call").handler
    heal_tools(server.server)
    again = server.server.get_request_handler("tools/call").handler
    assert handler is not again
    assert handler._healjson_heals_tools is again._healjson_heals_tools
    app = weather_app([])
    first_call_tool = app.call_tool
    heal_tools(app)
    assert first_call_tool._healjson_heals_tools is app.call_tool._healjson_heals_tools


def test_heal_tools_refuses_what_it_cannot_heal() -> None:
    """Not a server, a server without tools, a policy that is not one: errors that say so."""
    with pytest.raises(TypeError, match="MCPServer"):
        heal_tools(object())
    with pytest.raises(ValueError, match="on_call_tool"):
        heal_tools(Server("empty"))
    with pytest.raises(TypeError, match="HealPolicy"):
        heal_tools(weather_server().server, policy="strict")  # type: ignore[arg-type]


def test_server_side_events_name_the_tool_and_the_side() -> None:
    """A heal on the server is an event like a client's, with `side="server"`."""
    from healjson.testing import capture_events

    server = weather_server(FAMILIES[1].sent)
    heal_tools(server.server)

    async def go() -> Any:
        async with connect("client", server.server, heal=False) as session:
            return await session.call_tool("get_weather", {"city": "Oslo"})

    with capture_events() as logs:
        run(go)
    healed = [log for log in logs if log["event"] == "healjson.mcp.healed"]
    assert [("get_weather", "server")] == [(log["tool"], log["side"]) for log in healed]
    assert str(Flag.KEYS_ALIGNED) in healed[0]["flags"]


@pytest.mark.slow
def test_over_stdio_a_healed_scripted_server_answers_the_bare_sdk(tmp_path: Any) -> None:
    """`python -m healjson.testing mcp --heal`: a subprocess healing server side; the bare SDK
    client over stdio gets each family healed or as an error result naming the field."""
    params = weather_server(*(family.sent for family in FAMILIES)).stdio_parameters(
        tmp_path, heal=True
    )

    async def go() -> list[Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            return [await session.call_tool("get_weather", {"city": "Oslo"}) for _ in FAMILIES]

    for family, result in zip(FAMILIES, run(go), strict=True):
        if family.error_field is None:
            assert family.value == result.structured_content
        else:
            assert f"`{family.error_field}`" in text_of(result)


def test_a_direct_call_tool_without_a_request_keeps_the_sdks_conversion() -> None:
    """`MCPServer.call_tool(name, arguments)` from code (no request context): the SDK's own
    path, unhealed."""
    app = weather_app([{"Temperature": 1, "city": "Oslo"}])

    async def go() -> Any:
        return await caught(app.call_tool("weather", {"city": "Oslo"}))

    assert isinstance(run(go), Exception)


def test_a_return_value_that_is_not_data_keeps_the_sdks_error() -> None:
    """A value that cannot be read as JSON (an object): the SDK's own conversion error."""
    result = run(lambda: call_app(weather_app([object()])))
    assert True is result.is_error
    assert "Error executing tool weather" in text_of(result)
