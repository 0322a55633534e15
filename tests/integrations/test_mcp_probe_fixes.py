"""What a probe of the MCP integration found, each pinned with the real `mcp` SDK in memory:
a text block replaces structured content only where it says the same thing in the same place;
an error result healjson makes keeps everything the tool gave; a listing that fails leaves the
call to the bare SDK; the server side judges a result against the schema listed now; a result
deeper than the validator reads passes as given.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import Client, MCPError, types
from mcp.server import MCPServer, Server

import healjson
from healjson.mcp import heal_tools
from mcp_kit import CONNECTIONS, caught, connect, run
from pinned import pinned

RANGE = {
    "type": "object",
    "properties": {
        "low": {"type": "number"},
        "high": {"type": "number"},
        "city": {"type": "string"},
        "unit": {"type": "string"},
        "ok": {"type": ["boolean", "integer"]},
    },
    "required": ["low", "high", "city", "unit"],
}
WEATHER = {
    "type": "object",
    "properties": {"temperature": {"type": "number"}, "city": {"type": "string"}},
    "required": ["temperature", "city"],
}

Answer = Callable[[str, Any], Awaitable[types.CallToolResult]]


def lowlevel(tools: list[types.Tool], answer: Answer, *, log: list[Any] | None = None) -> Server:
    """A low-level server listing `tools` (the list as it is at each listing) and answering
    `answer(name, arguments)`; `log` records ("list" | "call", the request's session)."""

    async def on_list(ctx: Any, params: Any) -> types.ListToolsResult:
        if log is not None:
            log.append(("list", ctx.session))
        return types.ListToolsResult(tools=list(tools))

    async def on_call(ctx: Any, params: Any) -> types.CallToolResult:
        if log is not None:
            log.append(("call", ctx.session))
        return await answer(params.name, params.arguments)

    return Server("probe", on_list_tools=on_list, on_call_tool=on_call)


def tool(name: str, output_schema: dict[str, Any] | None) -> types.Tool:
    """A tool taking any object, with `output_schema`."""
    return types.Tool(name=name, input_schema={"type": "object"}, output_schema=output_schema)


def answering(structured: Any, *texts: str, is_error: bool = False) -> Answer:
    """An answer that is always this result (`structured` None: no structured content)."""
    blocks = [types.TextContent(type="text", text=text) for text in texts]

    async def answer(name: str, arguments: Any) -> types.CallToolResult:
        if structured is None:
            return types.CallToolResult(content=blocks, is_error=is_error)
        return types.CallToolResult(
            content=blocks, structured_content=structured, is_error=is_error
        )

    return answer


async def call(kind: str, server: Server, name: str = "t", *, heal: bool = True) -> Any:
    """One call of `name` on a fresh connection: its result, or the exception it raised."""
    async with connect(kind, server, heal=heal) as session:
        return await caught(session.call_tool(name, {}))


def texts(result: types.CallToolResult) -> list[str]:
    """The result's text blocks."""
    return [b.text for b in result.content if isinstance(b, types.TextContent)]


# ---------------------------------------------------------------------------------------------
# 1. A text block stands in for structured content only where it says the same in each place
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", CONNECTIONS)
@pytest.mark.parametrize(
    "text",
    [
        {"low": 20, "high": 5, "city": "Oslo", "unit": "C"},  # low and high swapped
        {"low": 5, "high": 20, "city": "Bergen", "unit": "C", "from": "Oslo"},  # Oslo elsewhere
    ],
    ids=["swapped", "moved"],
)
def test_a_text_holding_the_values_in_other_places_never_replaces_structured_content(
    kind: str, text: dict[str, Any]
) -> None:
    """Structured content missing `unit`, beside a text holding its values under other keys:
    an error result keeping the structured content, never the text's values."""
    structured = {"low": 5, "high": 20, "city": "Oslo"}
    server = lowlevel([tool("t", RANGE)], answering(structured, json.dumps(text)))
    result = run(lambda: call(kind, server))
    assert True is result.is_error
    assert structured == json.loads(texts(result)[-1])


@pytest.mark.parametrize("kind", CONNECTIONS)
def test_a_text_holding_each_value_in_its_place_completes_structured_content(kind: str) -> None:
    """Structured content missing `unit`, beside a text saying the same and more (keys in
    another case, a number as text): the text's value, flagged `structured_from_text`."""
    text = '{"Low": "5", "high": 20.0, "city": "Oslo", "unit": "C"}'
    server = lowlevel([tool("t", RANGE)], answering({"low": 5, "high": 20, "city": "Oslo"}, text))
    result = run(lambda: call(kind, server))
    outcome = healjson.outcome_of(result)
    assert False is result.is_error
    assert {"low": 5, "high": 20, "city": "Oslo", "unit": "C"} == result.structured_content
    assert outcome is not None
    assert "structured_from_text" in {str(flag) for flag in outcome.flags}


def _same_json(a: Any, b: Any) -> bool:
    """Equal as JSON values: a boolean is never a number."""
    return isinstance(a, bool) == isinstance(b, bool) and a == b


@pinned(max_examples=20)
@given(
    low=st.sampled_from([5, 20]),
    high=st.sampled_from([5, 20]),
    city=st.sampled_from(["Oslo", "Bergen"]),
    ok=st.sampled_from([0, 1, True, False]),
    said_low=st.sampled_from([5, 20]),
    said_high=st.sampled_from([5, 20]),
    said_city=st.sampled_from(["Oslo", "Bergen"]),
    said_ok=st.sampled_from([0, 1, True, False]),
)
def test_a_healed_result_never_contradicts_the_structured_content_it_replaces(
    low: int,
    high: int,
    city: str,
    ok: Any,
    said_low: int,
    said_high: int,
    said_city: str,
    said_ok: Any,
) -> None:
    """Whatever the text says beside structured content that cannot be healed: the healed
    result agrees with each structured value in its place (`1` is not `true`), and a text
    agreeing with every one completes it."""
    structured = {"low": low, "high": high, "city": city, "ok": ok}
    said = {"low": said_low, "high": said_high, "city": said_city, "ok": said_ok, "unit": "C"}
    server = lowlevel([tool("t", RANGE)], answering(structured, json.dumps(said)))
    result = run(lambda: call("client", server))
    if not result.is_error:
        for key, value in structured.items():
            assert _same_json(value, result.structured_content[key])
    agrees = all(_same_json(value, said[key]) for key, value in structured.items())
    assert agrees == (not result.is_error)


ALERTED = {
    **RANGE,
    "properties": {**RANGE["properties"], "alerts": {"type": "array", "items": {"type": "string"}}},
}


@pinned(max_examples=15)
@given(
    said=st.lists(st.sampled_from(["storm", "flood"]), max_size=2),
    text=st.lists(st.sampled_from(["storm", "flood"]), max_size=2),
)
def test_a_list_the_structured_content_holds_is_never_completed_by_the_texts_items(
    said: list[str], text: list[str]
) -> None:
    """A list in the structured content says how many items it holds (`[]`: none): a text
    completes the result only when its list is the same, never one with items the structured
    content did not give."""
    structured = {"low": 5, "high": 20, "city": "Oslo", "alerts": said}
    full = {**structured, "unit": "C", "alerts": text}
    server = lowlevel([tool("t", ALERTED)], answering(structured, json.dumps(full)))

    result = run(lambda: call("client", server))

    assert (said == text) == (not result.is_error)
    if not result.is_error:
        assert said == result.structured_content["alerts"]


# ---------------------------------------------------------------------------------------------
# 2. An error result healjson makes keeps everything the tool gave
# ---------------------------------------------------------------------------------------------

UNHEALABLE = {"temperature": "warm", "city": "Oslo", "report": "a long, valuable report"}


@pytest.mark.parametrize("kind", CONNECTIONS)
def test_a_server_side_error_result_keeps_the_structured_content_as_json_text(kind: str) -> None:
    """`heal_tools` on a low-level server whose result cannot be healed: the bare client gets
    the diagnostics, then the structured content as a JSON text block."""
    server = heal_tools(lowlevel([tool("t", WEATHER)], answering(UNHEALABLE)))
    result = run(lambda: call(kind, server, heal=False))
    blocks = texts(result)
    assert True is result.is_error
    assert "`temperature`" in blocks[0]
    assert UNHEALABLE == json.loads(blocks[-1])


@pytest.mark.parametrize("kind", CONNECTIONS)
def test_a_client_side_error_result_keeps_the_blocks_and_the_structured_content(
    kind: str,
) -> None:
    """The healed client's error result: diagnostics, the tool's own blocks as sent, then its
    structured content as JSON text (once: not again when a block already holds it)."""
    image = types.ImageContent(type="image", data="aGk=", mime_type="image/png")

    async def answer(name: str, arguments: Any) -> types.CallToolResult:
        blocks: list[Any] = [types.TextContent(type="text", text="raw reading"), image]
        if name == "twice":
            blocks.append(types.TextContent(type="text", text=json.dumps(UNHEALABLE)))
        return types.CallToolResult(content=blocks, structured_content=UNHEALABLE)

    server = lowlevel([tool("t", WEATHER), tool("twice", WEATHER)], answer)
    once = run(lambda: call(kind, server))
    twice = run(lambda: call(kind, server, "twice"))
    assert True is once.is_error is twice.is_error
    assert [types.TextContent(type="text", text="raw reading"), image] == once.content[1:3]
    assert UNHEALABLE == json.loads(texts(once)[-1])
    assert 3 == len(texts(twice))
    assert UNHEALABLE == json.loads(texts(twice)[-1])


def test_an_mcpserver_tool_value_that_cannot_be_healed_is_kept_in_its_error_result() -> None:
    """An `MCPServer` tool returning a value its schema refuses: the error result carries the
    value as JSON text beside the diagnostics."""
    app = MCPServer("probe")

    @app.tool(structured_output=True)
    def reading() -> dict[str, float]:
        """A reading."""
        return {"temperature": "warm"}  # type: ignore[dict-item]

    heal_tools(app)

    async def go() -> Any:
        async with Client(app) as client:
            return await client.call_tool("reading", {})

    result = run(go)
    assert True is result.is_error
    assert {"temperature": "warm"} == json.loads(texts(result)[-1])


# ---------------------------------------------------------------------------------------------
# 3. A listing that fails: the call is the bare SDK's
# ---------------------------------------------------------------------------------------------


def _unlisted(mode: str, ran: list[str]) -> Server:
    """A server whose tools cannot be listed (`nolist`: no handler; `failing`: it fails)."""

    async def on_call(ctx: Any, params: Any) -> types.CallToolResult:
        ran.append(params.name)
        text = [types.TextContent(type="text", text="done")]
        return types.CallToolResult(content=text, is_error=params.name == "e")

    async def on_list(ctx: Any, params: Any) -> types.ListToolsResult:
        raise MCPError(code=-32000, message="listing unavailable")

    if mode == "nolist":
        return Server("probe", on_call_tool=on_call)
    return Server("probe", on_call_tool=on_call, on_list_tools=on_list)


def _seen(answer: Any) -> Any:
    """What a caller sees of a call: the result's error flag and text, or the exception's."""
    if isinstance(answer, BaseException):
        return type(answer).__name__, str(answer)
    return answer.is_error, texts(answer)


@pytest.mark.parametrize("kind", CONNECTIONS)
@pytest.mark.parametrize("mode", ["nolist", "failing"])
@pytest.mark.parametrize("name", ["e", "x"])
def test_a_listing_that_fails_leaves_the_call_to_the_bare_sdk(
    kind: str, mode: str, name: str
) -> None:
    """Tools that cannot be listed: the healed client sends the call, and returns (or raises)
    what the bare SDK does."""
    bare_ran: list[str] = []
    healed_ran: list[str] = []
    bare = run(lambda: call(kind, _unlisted(mode, bare_ran), name, heal=False))
    healed = run(lambda: call(kind, _unlisted(mode, healed_ran), name))
    assert [name] == bare_ran == healed_ran
    assert _seen(bare) == _seen(healed)


@pytest.mark.parametrize("kind", CONNECTIONS)
def test_a_server_whose_listing_fails_answers_the_call_unhealed(kind: str) -> None:
    """`heal_tools` on a server whose listing fails: the tool runs and its result goes out as
    the handler returned it."""
    ran: list[str] = []
    server = heal_tools(_unlisted("failing", ran))
    result = run(lambda: call(kind, server, "e", heal=False))
    assert ["e"] == ran
    assert (True, ["done"]) == _seen(result)


# ---------------------------------------------------------------------------------------------
# 4. The server side judges against the schema listed now
# ---------------------------------------------------------------------------------------------

CELSIUS = {
    "type": "object",
    "properties": {"celsius": {"type": "number"}},
    "required": ["celsius"],
    "additionalProperties": False,
}
KELVIN = {
    "type": "object",
    "properties": {"kelvin": {"type": "number"}},
    "required": ["kelvin"],
    "additionalProperties": False,
}


def test_the_server_side_judges_a_result_against_the_schema_listed_now() -> None:
    """A low-level server whose tool's `outputSchema` changes between calls: each result is
    judged (and healed) against the schema listed at its call."""
    tools = [tool("t", CELSIUS)]
    answers = iter([{"celsius": 1}, {"Kelvin": "274"}])

    async def answer(name: str, arguments: Any) -> types.CallToolResult:
        return types.CallToolResult(content=[], structured_content=next(answers))

    server = heal_tools(lowlevel(tools, answer))

    async def go() -> tuple[Any, Any]:
        async with Client(server) as client:
            first = await client.call_tool("t", {})
            tools[0] = tool("t", KELVIN)
            await client.list_tools()
            return first, await client.call_tool("t", {})

    first, second = run(go)
    assert {"celsius": 1} == first.structured_content
    assert False is second.is_error
    assert {"kelvin": 274} == second.structured_content


def test_the_server_side_lists_with_each_calls_own_session() -> None:
    """Two sessions of one healed server: each call's listing runs in that call's own context
    (its session), never in the first call's."""
    log: list[Any] = []
    server = heal_tools(lowlevel([tool("t", CELSIUS)], answering({"celsius": 1}), log=log))

    async def go() -> None:
        for _ in range(2):
            async with Client(server) as client:
                await client.list_tools()
                await client.call_tool("t", {})

    run(go)
    calls = [session for what, session in log if what == "call"]
    assert 2 == len(set(map(id, calls)))
    for index, (what, session) in enumerate(log):
        if what == "call":
            assert log[index - 1] == ("list", session)  # listed just before, in its session


@pytest.mark.parametrize("kind", CONNECTIONS)
def test_a_tool_listed_after_a_call_found_it_absent_is_healed(kind: str) -> None:
    """The healed client calls a tool the server does not list yet (unhealed), then the server
    lists it: the next call is healed against its schema."""
    tools: list[types.Tool] = []
    server = lowlevel(tools, answering({"Celsius": "2"}, is_error=False))

    async def go() -> tuple[Any, Any]:
        async with connect(kind, server) as session:
            first = await caught(session.call_tool("t", {}))
            tools.append(tool("t", CELSIUS))
            return first, await session.call_tool("t", {})

    _, second = run(go)
    assert False is second.is_error
    assert {"celsius": 2} == second.structured_content


# ---------------------------------------------------------------------------------------------
# 5. A result deeper than the validator reads passes as given
# ---------------------------------------------------------------------------------------------


def nested(depth: int) -> dict[str, Any]:
    """`{"a": {"a": ...}}`, `depth` levels."""
    value: dict[str, Any] = {}
    node = value
    for _ in range(depth):
        node["a"] = {}
        node = node["a"]
    return value


@pytest.mark.parametrize("kind", CONNECTIONS)
@pytest.mark.parametrize("side", ["client", "server"])
def test_a_result_deeper_than_the_validator_reads_passes_as_given(kind: str, side: str) -> None:
    """Structured content nested 210 levels under `{"type": "object"}`: the bare SDK takes it,
    and so does healjson on either side: as given, no error result, no outcome."""
    deep = nested(210)
    server = lowlevel([tool("t", {"type": "object"})], answering(deep, json.dumps(deep)))
    if side == "server":
        heal_tools(server)
    result = run(lambda: call(kind, server, heal=side == "client"))
    assert False is result.is_error
    assert deep == result.structured_content
    assert healjson.outcome_of(result) is None


# ---------------------------------------------------------------------------------------------
# 6. The server's listChanged notification: the next call lists the tools again
# ---------------------------------------------------------------------------------------------


def test_a_tool_whose_schema_changed_is_judged_by_the_new_one_after_list_changed() -> None:
    """A server changes a tool's `outputSchema` and sends `notifications/tools/list_changed`
    (a `ClientSession`, 2025-11-25): the healed client's next call is judged (and healed)
    against the new schema, with no listing of the caller's own."""
    tools = [tool("t", CELSIUS), tool("switch", None)]
    answers = iter([{"celsius": 1}, {"Kelvin": "274"}])
    listings: list[int] = []

    async def on_list(ctx: Any, params: Any) -> types.ListToolsResult:
        listings.append(len(listings))
        return types.ListToolsResult(tools=list(tools))

    async def on_call(ctx: Any, params: Any) -> types.CallToolResult:
        if params.name == "switch":
            tools[0] = tool("t", KELVIN)
            await ctx.session.send_tool_list_changed()
            return types.CallToolResult(content=[])
        return types.CallToolResult(content=[], structured_content=next(answers))

    server = Server("probe", on_list_tools=on_list, on_call_tool=on_call)

    async def go() -> tuple[Any, Any]:
        async with connect("session", server) as session:
            first = await session.call_tool("t", {})
            await session.call_tool("switch", {})
            for _ in range(5):  # the notification is handled beside the call's answer
                await anyio.sleep(0)
            return first, await session.call_tool("t", {})

    first, second = run(go)
    assert {"celsius": 1} == first.structured_content
    assert False is second.is_error, texts(second)
    assert {"kelvin": 274} == second.structured_content
    assert 2 == len(listings)  # listed once, then once more after the change
