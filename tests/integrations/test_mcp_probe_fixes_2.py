"""What a second probe of the MCP integration found, each pinned with the real `mcp` SDK in
memory: an `MCPServer`'s results are judged by healjson, never by the SDK's laxer conversion; a
result too deep to judge whole is still refused for what can be seen; a `listChanged` during a
listing loses nothing; a low-level handler's mapping is healed like its `CallToolResult`; one
unusable schema sets aside its own tool only; a wrapped client's `repr` hides its URL password.
"""

from __future__ import annotations

import math
from typing import Any

import anyio
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from mcp import Client, types
from mcp.server import MCPServer, Server
from pydantic import BaseModel

import healjson
from healjson.mcp import heal_tools
from integrations.test_mcp_probe_fixes import nested
from mcp_kit import CONNECTIONS, caught, connect, memory_session, run
from pinned import pinned

WEATHER = {
    "type": "object",
    "properties": {"temperature": {"type": "number"}, "city": {"type": "string"}, "extra": {}},
    "required": ["temperature", "city"],
}


class Weather(BaseModel):
    """An `MCPServer` tool's return type: its output schema."""

    temperature: float
    city: str


def tool(name: str, output_schema: dict[str, Any] | None = None) -> types.Tool:
    """A tool taking any object, with `output_schema` (default: `WEATHER`)."""
    schema = WEATHER if output_schema is None else output_schema
    return types.Tool(name=name, input_schema={"type": "object"}, output_schema=schema)


def texts(result: types.CallToolResult) -> list[str]:
    """The result's text blocks."""
    return [b.text for b in result.content if isinstance(b, types.TextContent)]


# ---------------------------------------------------------------------------------------------
# 1. heal_tools(MCPServer): what goes out is judged against the output schema by healjson
# ---------------------------------------------------------------------------------------------


def weather_app(returned: list[Any]) -> MCPServer:
    """A healed `MCPServer` whose `weather` tool returns `returned[0]` (a `Weather` tool) and
    whose `flag` tool returns `returned[0]` (a `bool` tool)."""
    app = MCPServer("w")

    @app.tool()
    def weather(city: str) -> Weather:
        return returned[0]  # type: ignore[no-any-return]

    @app.tool()
    def flag(city: str) -> bool:
        return returned[0]  # type: ignore[no-any-return]

    return heal_tools(app)  # type: ignore[no-any-return]


async def call_app(app: MCPServer, name: str) -> Any:
    """One call through the bare SDK client (what any client receives), or what it raised."""
    async with Client(app) as client:
        return await caught(client.call_tool(name, {"city": "Oslo"}))


_NOT_NUMBERS = st.sampled_from([True, False, math.nan, math.inf, -math.inf, "Infinity", "NaN"])


@pinned(max_examples=15)
@given(
    temperature=st.one_of(
        _NOT_NUMBERS, st.floats(allow_nan=False, allow_infinity=False), st.integers(-99, 99)
    )
)
@example(temperature=True)
@example(temperature=math.nan)
def test_an_mcpserver_sends_a_number_only_when_the_tool_returned_one(temperature: Any) -> None:
    """Whatever a `float` field of an `MCPServer` tool's return value holds, the client gets
    no exception and either an error result or that very number (never a boolean read as a
    number, never NaN or Infinity sent as something else)."""
    app = weather_app([{"temperature": temperature, "city": "Oslo"}])
    result = run(lambda: call_app(app, "weather"))
    assert isinstance(result, types.CallToolResult), result
    real = (
        isinstance(temperature, int | float)
        and not isinstance(temperature, bool)
        and math.isfinite(temperature)
    )
    if not real:
        assert True is result.is_error, result.structured_content
        return
    assert False is result.is_error, texts(result)
    sent = result.structured_content["temperature"]
    assert not isinstance(sent, bool)
    assert float(temperature) == sent


@pytest.mark.parametrize("returned", [1, 0, 1.0, 0.0])
def test_an_mcpserver_never_reads_a_number_as_a_boolean(returned: Any) -> None:
    """A `bool` tool of an `MCPServer` that returns a number answers an error result, never
    `true`/`false`."""
    result = run(lambda: call_app(weather_app([returned]), "flag"))
    assert isinstance(result, types.CallToolResult), result
    assert True is result.is_error
    assert result.structured_content is None


def test_an_mcpserver_tools_call_tool_result_is_judged_and_healed() -> None:
    """A `CallToolResult` an `MCPServer` tool returns, `"21.5"` for a number, goes out healed
    (the SDK's own check takes `"21.5"` and the client's SDK would raise)."""
    sloppy = types.CallToolResult(
        content=[], structured_content={"temperature": "21.5", "city": "Oslo"}
    )
    result = run(lambda: call_app(weather_app([sloppy]), "weather"))
    assert isinstance(result, types.CallToolResult), result
    assert False is result.is_error
    assert {"temperature": 21.5, "city": "Oslo"} == result.structured_content


# ---------------------------------------------------------------------------------------------
# 2. A result too deep to judge whole: refused for what can be seen, else the SDK's own check
# ---------------------------------------------------------------------------------------------


def lowlevel(tools: list[types.Tool], structured: dict[str, Any]) -> Server:
    """A low-level server listing `tools`, every call answered with `structured`."""

    async def on_list(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=list(tools))

    async def on_call(ctx: Any, params: Any) -> types.CallToolResult:
        return types.CallToolResult(content=[], structured_content=structured)

    return Server("probe", on_list_tools=on_list, on_call_tool=on_call)


@pytest.mark.parametrize("kind", CONNECTIONS)
@pytest.mark.parametrize(
    ("shallow", "field"),
    [
        ({"city": "Oslo"}, "temperature"),
        ({"temperature": "warm", "city": "Oslo"}, "temperature"),
        ({"temperature": 1, "city": 7}, "city"),
    ],
)
def test_a_deep_branch_does_not_hide_a_visible_problem(
    kind: str, shallow: dict[str, Any], field: str
) -> None:
    """Structured content with a problem at a shallow field and another branch nested 210
    deep is an error result naming that field (not a success, not a diagnostic about depth)."""
    server = lowlevel([tool("t")], {**shallow, "extra": nested(210)})

    async def go() -> Any:
        async with connect(kind, server) as session:
            return await caught(session.call_tool("t", {}))

    result = run(go)
    assert isinstance(result, types.CallToolResult), result
    assert True is result.is_error
    diagnostics = texts(result)[0]
    assert field in diagnostics
    assert "recursion" not in diagnostics
    outcome = healjson.outcome_of(result)
    assert isinstance(outcome, healjson.Degraded)
    assert [field] == [error.path for error in outcome.errors]


@pytest.mark.parametrize("kind", CONNECTIONS)
def test_a_result_healjson_cannot_judge_keeps_the_sdks_own_check(kind: str) -> None:
    """A result too deep to judge whole with no problem visible in the rest, that the SDK's
    own check refuses (its deep branch breaks the schema), raises as the bare SDK raises."""
    node = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/node"}, "leaf": {"type": "string"}},
    }
    schema = {
        "type": "object",
        "$defs": {"node": node},
        "properties": {"city": {"type": "string"}, "extra": {"$ref": "#/$defs/node"}},
    }
    inner: Any = {"leaf": 5}  # a number where the schema says string, 210 levels down
    for _ in range(210):
        inner = {"a": inner}
    server = lowlevel([tool("t", schema)], {"city": "Oslo", "extra": inner})

    async def go(heal: bool) -> Any:
        async with connect(kind, server, heal=heal) as session:
            return await caught(session.call_tool("t", {}))

    assert isinstance(run(lambda: go(False)), RuntimeError)
    assert isinstance(run(lambda: go(True)), RuntimeError)


# ---------------------------------------------------------------------------------------------
# 3. tools/list_changed while the listing reads page 2: nothing of page 1 is lost
# ---------------------------------------------------------------------------------------------


def paged_server(changes: int) -> tuple[Server, list[str]]:
    """A server listing tool `a` on page 1 and `b` on page 2, that says its tools changed
    while serving page 2 (the first `changes` times); every call answers without the required
    `temperature`. Also returns its log of pages served."""
    served: list[str] = []

    async def on_list(ctx: Any, params: Any) -> types.ListToolsResult:
        cursor = params.cursor if params else None
        served.append(cursor or "p1")
        if cursor is None:
            return types.ListToolsResult(tools=[tool("a")], next_cursor="p2")
        if served.count("p2") <= changes:
            await ctx.session.send_tool_list_changed()
            for _ in range(5):
                await anyio.sleep(0)
        return types.ListToolsResult(tools=[tool("b")])

    async def on_call(ctx: Any, params: Any) -> types.CallToolResult:
        return types.CallToolResult(content=[], structured_content={"city": "Oslo"})

    return Server("p", on_list_tools=on_list, on_call_tool=on_call), served


@pytest.mark.parametrize("changes", [1, 5])
def test_a_change_during_a_listing_loses_no_tool(changes: int) -> None:
    """A `listChanged` heard while the listing reads page 2 (once, or on every listing): the
    tool of page 1 is still judged, its non-conforming result an error result."""
    server, served = paged_server(changes)

    async def go() -> Any:
        async with memory_session(server) as session:
            return await caught(healjson.wrap(session).call_tool("a", {}))

    result = run(go)
    assert isinstance(result, types.CallToolResult), result
    assert True is result.is_error
    assert isinstance(healjson.outcome_of(result), healjson.Degraded)
    assert served.count("p1") >= 2  # the interrupted listing was read again


def test_a_tool_the_server_does_not_list_keeps_the_sdks_own_check() -> None:
    """A call of a tool the server's first listing leaves out (so healjson has no schema for
    it) whose result the SDK refuses once the tool is listed raises as the bare SDK raises."""
    listings: list[int] = []

    async def on_list(ctx: Any, params: Any) -> types.ListToolsResult:
        listings.append(1)
        return types.ListToolsResult(tools=[tool("a")] if len(listings) > 1 else [])

    async def on_call(ctx: Any, params: Any) -> types.CallToolResult:
        return types.CallToolResult(content=[], structured_content={"city": "Oslo"})

    server = Server("p", on_list_tools=on_list, on_call_tool=on_call)

    async def go(heal: bool) -> Any:
        listings.clear()
        async with memory_session(server) as session:
            if heal:
                return await caught(healjson.wrap(session).call_tool("a", {}))
            await session.list_tools()  # the listing healjson would make: `a` is not in it
            return await caught(session.call_tool("a", {}))

    assert isinstance(run(lambda: go(False)), RuntimeError)
    assert isinstance(run(lambda: go(True)), RuntimeError)


# ---------------------------------------------------------------------------------------------
# 4. heal_tools(low-level Server): a result returned as a mapping is healed like a model
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("structured", "healed"),
    [
        ({"Temperature": "21.5", "City": "Oslo"}, {"temperature": 21.5, "city": "Oslo"}),
        ({"temperature": 21.5, "city": "Oslo"}, {"temperature": 21.5, "city": "Oslo"}),
        ({"city": "Oslo"}, None),
    ],
)
def test_a_result_returned_as_a_mapping_is_healed(
    structured: dict[str, Any], healed: dict[str, Any] | None
) -> None:
    """A low-level handler's result given as the mapping of a `CallToolResult` reaches a bare
    client healed, or as an error result, exactly as the same result given as the model."""

    async def on_list(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool("as_dict"), tool("as_model")])

    async def on_call(ctx: Any, params: Any) -> Any:
        if params.name == "as_model":
            return types.CallToolResult(content=[], structured_content=structured)
        return {"resultType": "complete", "content": [], "structuredContent": structured}

    server = heal_tools(Server("p", on_list_tools=on_list, on_call_tool=on_call))

    async def go(name: str) -> Any:
        async with Client(server) as client:
            return await caught(client.call_tool(name, {}))

    as_dict, as_model = run(lambda: go("as_dict")), run(lambda: go("as_model"))
    for result in (as_dict, as_model):
        assert isinstance(result, types.CallToolResult), result
        assert (healed is None) is result.is_error
        assert healed == result.structured_content
    assert len(texts(as_dict)) == len(texts(as_model))


# ---------------------------------------------------------------------------------------------
# 5. One unusable schema sets aside its own tool only
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [5, 120])
def test_a_deep_output_schema_sets_aside_its_own_tool_only(depth: int) -> None:
    """A tool whose output schema nests `depth` levels (too deep to build, or not) listed
    before another: the other tool's healable result is still healed."""
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(depth):
        deep = {"type": "object", "properties": {"a": deep}}
    server = lowlevel([tool("tree", deep), tool("weather")], {"Temperature": "21.5", "city": "x"})

    async def go() -> Any:
        async with connect("client", server) as session:
            return await caught(session.call_tool("weather", {}))

    result = run(go)
    assert isinstance(result, types.CallToolResult), result
    assert False is result.is_error
    assert {"temperature": 21.5, "city": "x"} == result.structured_content


def test_a_deep_output_schema_on_a_healed_server_sets_aside_its_own_tool_only() -> None:
    """`heal_tools` on a low-level server listing a tool with a schema too deep to build still
    heals its other tool."""
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(120):
        deep = {"type": "object", "properties": {"a": deep}}
    server = heal_tools(
        lowlevel([tool("tree", deep), tool("w")], {"Temperature": "1", "city": "x"})
    )

    async def go() -> Any:
        async with Client(server) as client:
            return await caught(client.call_tool("w", {}))

    result = run(go)
    assert isinstance(result, types.CallToolResult), result
    assert {"temperature": 1, "city": "x"} == result.structured_content


# ---------------------------------------------------------------------------------------------
# 9. A wrapped client's repr hides a password in its server URL
# ---------------------------------------------------------------------------------------------


@pinned(max_examples=15)
@given(
    password=st.text(
        alphabet=st.characters(
            min_codepoint=33, max_codepoint=126, exclude_characters="/?#@'\"%\\"
        ),
        min_size=8,
        max_size=30,
    )
)
def test_the_repr_of_a_wrapped_client_hides_its_url_password(password: str) -> None:
    """`repr(healjson.wrap(Client(url)))` never shows the password of the URL's userinfo."""
    url = f"http://user:{password}@localhost:1/mcp"
    shown = repr(healjson.wrap(Client(url)))
    assert password not in shown
    assert "localhost:1/mcp" in shown
