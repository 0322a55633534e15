"""`healjson.wrap(session)` with the real `mcp` SDK: a `ClientSession` or `Client` whose
`call_tool` returns the SDK's `CallToolResult`, healed against the tool's `outputSchema`.

Every failure family is run against the bare SDK too (which raises `RuntimeError` for each), in
memory on both of the SDK's paths (its `Client`'s direct 2026-07-28 path and a `ClientSession`
over memory streams with the 2025-11-25 handshake), and over stdio against a subprocess.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from mcp import ClientSession, MCPError, types
from mcp.client.stdio import stdio_client

import healjson
from healjson import Flag, Violation, contract
from healjson.adapters._mcp import HealingSession
from healjson.testing import ScriptedMCPServer, ScriptedTool, ScriptedToolResult, capture_events
from mcp_kit import (
    CONNECTIONS,
    FAMILIES,
    GOOD,
    Family,
    caught,
    connect,
    run,
    weather_server,
)

ARGS = {"city": "Oslo"}


def text_of(result: types.CallToolResult) -> str:
    """The result's text blocks, joined."""
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def call_once(
    kind: str, server: ScriptedMCPServer, *, heal: bool = True, **options: Any
) -> Any:
    """One `get_weather` call on a fresh connection: its result, or the exception it raised."""
    async with connect(kind, server.server, heal=heal, **options) as session:
        return await caught(session.call_tool("get_weather", ARGS))


# ---------------------------------------------------------------------------------------------
# The failure families
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", CONNECTIONS)
@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
def test_each_failure_family_raises_in_the_bare_sdk(kind: str, family: Family) -> None:
    """The bare SDK raises `RuntimeError` for every family: what healjson is measured against."""
    raised = run(lambda: call_once(kind, weather_server(family.sent), heal=False))
    assert isinstance(raised, RuntimeError)
    assert "get_weather" in str(raised)


@pytest.mark.parametrize("kind", CONNECTIONS)
@pytest.mark.parametrize("family", FAMILIES, ids=lambda family: family.name)
def test_each_failure_family_is_healed_or_an_error_result_naming_the_field(
    kind: str, family: Family
) -> None:
    """Healable families come back as conforming structured content with their flags; the
    others as an error result whose text names the field, never a `RuntimeError`."""
    server = weather_server(family.sent)
    result = run(lambda: call_once(kind, server))
    outcome = healjson.outcome_of(result)
    assert isinstance(result, types.CallToolResult)
    assert outcome is not None
    if family.error_field is None:
        assert False is result.is_error
        assert family.value == result.structured_content
        assert set(family.flags) <= {str(flag) for flag in outcome.flags}
        assert outcome.ok
    else:
        assert True is result.is_error
        assert None is result.structured_content
        text = text_of(result)
        assert f"`{family.error_field}`" in text
        assert "rule:" in text
        assert "fix:" in text
        assert False is outcome.ok
        assert family.error_field in {d.path for d in outcome.errors}


@pytest.mark.parametrize("kind", CONNECTIONS)
def test_a_conforming_result_is_the_sdks_own_object_unchanged(kind: str) -> None:
    """A valid result is handed back as the SDK returned it, with a clean outcome."""
    server = weather_server(ScriptedToolResult(structured=GOOD))
    result = run(lambda: call_once(kind, server))
    outcome = healjson.outcome_of(result)
    assert GOOD == result.structured_content
    assert [json.dumps(GOOD)] == [b.text for b in result.content]
    assert outcome is not None
    assert outcome.ok
    assert () == outcome.flags


def test_the_text_blocks_stay_as_the_server_sent_them() -> None:
    """Healing sets the structured content; the content blocks are the server's own."""
    sent = '{"Temperature": 21.5, "city": "Oslo"}'
    server = weather_server(ScriptedToolResult(structured=json.loads(sent), text=sent))
    result = run(lambda: call_once("client", server))
    assert {"temperature": 21.5, "city": "Oslo"} == result.structured_content
    assert sent == text_of(result)


def test_json_among_prose_in_a_text_block_is_recovered() -> None:
    """A text block with prose around the JSON is read by L1 (flags `prose_around` and
    `structured_from_text`)."""
    server = weather_server(ScriptedToolResult(text=f"Here you go: {json.dumps(GOOD)} (cached)"))
    result = run(lambda: call_once("client", server))
    outcome = healjson.outcome_of(result)
    assert GOOD == result.structured_content
    assert outcome is not None
    assert {Flag.PROSE_AROUND, Flag.STRUCTURED_FROM_TEXT} <= set(outcome.flags)


def test_structured_content_that_fails_falls_back_to_a_conforming_text_block() -> None:
    """Broken structured content (a required field missing) beside a conforming JSON text block
    that holds each of its values in its place: the text's value."""
    sent = ScriptedToolResult(structured={"temperature": 21.5}, text=json.dumps(GOOD))
    result = run(lambda: call_once("client", weather_server(sent)))
    assert GOOD == result.structured_content
    assert Flag.STRUCTURED_FROM_TEXT in healjson.outcome_of(result).flags  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "structured",
    [
        {"temperature": "warm", "city": "Oslo"},  # the text names another city
        {"temperature": "warm", "city": "Bergen", "conditions": ["rain"]},  # other conditions
        {"temperature": "n/a", "city": "Bergen", "conditions": ["snow"]},  # all but one agree
    ],
)
def test_a_text_block_contradicting_the_structured_content_never_replaces_it(
    structured: dict[str, Any],
) -> None:
    """Structured content that cannot be healed, beside a text block holding a different answer
    (`Bergen` for `Oslo`, -4 for `n/a`): an error result with the structured content's
    diagnostics, never the text's value."""
    text = 'cached reading: {"temperature": -4, "city": "Bergen", "conditions": ["snow"]}'
    sent = ScriptedToolResult(structured=structured, text=text)
    result = run(lambda: call_once("client", weather_server(sent)))
    assert result.is_error
    assert result.structured_content is None


def test_a_boolean_in_a_numeric_field_is_an_error_result() -> None:
    """`true` for the temperature is no quantity: an error result naming the field, never 1.0."""
    sent = ScriptedToolResult(structured={**GOOD, "temperature": True})
    result = run(lambda: call_once("client", weather_server(sent)))
    assert result.is_error
    assert "temperature" in text_of(result)


def test_a_result_with_neither_structured_content_nor_text_is_an_error_result() -> None:
    """Nothing to read: an error result (nothing is invented to fill the schema)."""
    result = run(lambda: call_once("client", weather_server(ScriptedToolResult(text=()))))
    assert True is result.is_error
    assert "get_weather" in text_of(result)


def test_an_error_result_keeps_the_content_the_server_sent_after_the_diagnostics() -> None:
    """The diagnostics come first; the server's own blocks follow, then its structured
    content as JSON text: nothing dropped."""
    sent = ScriptedToolResult(structured={"city": "Oslo"}, text="partial reading: Oslo")
    result = run(lambda: call_once("client", weather_server(sent)))
    blocks = [b.text for b in result.content if isinstance(b, types.TextContent)]
    assert 3 == len(blocks)
    assert "`temperature`" in blocks[0]
    assert "partial reading: Oslo" == blocks[1]
    assert {"city": "Oslo"} == json.loads(blocks[2])


def test_any_json_value_is_structured_content_on_the_2026_path() -> None:
    """An array schema (the 2026-07-28 spec allows any JSON value): numbers as strings are
    read as integers, a wrapping object is removed."""
    schema = {"type": "array", "items": {"type": "integer"}}
    sent = [
        ScriptedToolResult(structured=["1", "2", "3"], text=()),
        ScriptedToolResult(structured={"ids": [1, 2, 3]}, text=()),
    ]
    server = ScriptedMCPServer([ScriptedTool("ids", output_schema=schema)], {"ids": sent})

    async def go() -> list[Any]:
        async with connect("client", server.server) as session:
            return [await session.call_tool("ids", {}) for _ in sent]

    coerced, unwrapped = run(go)
    assert [1, 2, 3] == coerced.structured_content == unwrapped.structured_content
    assert Flag.UNWRAPPED in healjson.outcome_of(unwrapped).flags  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------------------
# What passes through
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", CONNECTIONS)
def test_an_error_result_is_passed_through_untouched(kind: str) -> None:
    """An `isError` result is never judged against the success schema: it comes back as the
    server sent it, with no outcome."""
    sent = ScriptedToolResult(structured={"code": 503}, text="upstream timeout", is_error=True)
    result = run(lambda: call_once(kind, weather_server(sent)))
    assert True is result.is_error
    assert "upstream timeout" == text_of(result)
    assert {"code": 503} == result.structured_content
    assert None is healjson.outcome_of(result)


def test_a_tool_without_an_output_schema_passes_through() -> None:
    """No `outputSchema`: nothing to judge, the result is the server's."""
    server = weather_server(echo=[ScriptedToolResult(structured={"Anything": "1"})])

    async def go() -> Any:
        async with connect("client", server.server) as session:
            return await session.call_tool("echo", {"x": 1})

    result = run(go)
    assert {"Anything": "1"} == result.structured_content
    assert None is healjson.outcome_of(result)


def test_a_protocol_error_stays_the_sdks() -> None:
    """A JSON-RPC error (here an exhausted script) is raised as the SDK raises it."""
    raised = run(lambda: call_once("client", weather_server()))
    assert isinstance(raised, MCPError)
    assert "exhausted" in str(raised)


# ---------------------------------------------------------------------------------------------
# Arguments
# ---------------------------------------------------------------------------------------------

SLOPPY_ARGS = {"City": "Oslo", "options": '{"units": "C", "days": "3"}', "hours": "[9, 12]"}
CLEAN_ARGS = {"city": "Oslo", "options": {"units": "C", "days": 3}, "hours": [9, 12]}


@pytest.mark.parametrize("kind", CONNECTIONS)
def test_arguments_are_normalised_against_the_input_schema(kind: str) -> None:
    """Stringified object and array parsed, a key aligned, `"3"` read as an integer: the
    schema-checking server accepts the call; `arguments_normalised` is flagged."""
    server = weather_server(ScriptedToolResult(structured=GOOD))

    async def go() -> Any:
        async with connect(kind, server.server) as session:
            return await session.call_tool("get_weather", SLOPPY_ARGS)

    result = run(go)
    assert CLEAN_ARGS == server.calls[0].arguments
    assert Flag.ARGUMENTS_NORMALISED in healjson.outcome_of(result).flags  # type: ignore[union-attr]


def test_the_bare_sdk_sends_sloppy_arguments_and_the_server_refuses_them() -> None:
    """Without healjson the server answers `-32602` for the stringified object."""
    server = weather_server(ScriptedToolResult(structured=GOOD))

    async def go() -> Any:
        async with connect("client", server.server, heal=False) as session:
            return await caught(session.call_tool("get_weather", SLOPPY_ARGS))

    raised = run(go)
    assert isinstance(raised, MCPError)
    assert -32602 == raised.code


def test_arguments_that_cannot_be_fitted_are_sent_as_given() -> None:
    """A missing required argument is not invented: the call goes out as given and the
    server's own answer stands."""
    server = weather_server(ScriptedToolResult(structured=GOOD))

    async def go() -> Any:
        async with connect("client", server.server) as session:
            return await caught(session.call_tool("get_weather", {"town": "Oslo"}))

    raised = run(go)
    assert isinstance(raised, MCPError)
    assert "Invalid params" in str(raised)
    assert {"town": "Oslo"} == server.calls[0].arguments


def test_clean_arguments_are_sent_as_they_are() -> None:
    """Conforming arguments go out unchanged and are not flagged."""
    server = weather_server(ScriptedToolResult(structured=GOOD))
    result = run(lambda: call_once("client", server))
    assert ARGS == server.calls[0].arguments
    assert Flag.ARGUMENTS_NORMALISED not in healjson.outcome_of(result).flags  # type: ignore[union-attr]


def test_normalised_arguments_of_a_passed_through_result_are_its_outcome() -> None:
    """An error result with normalised arguments: the outcome is the arguments' run."""
    server = weather_server(ScriptedToolResult(text="down", is_error=True))

    async def go() -> Any:
        async with connect("client", server.server) as session:
            return await session.call_tool("get_weather", {"CITY": "Oslo"})

    result = run(go)
    outcome = healjson.outcome_of(result)
    assert outcome is not None
    assert outcome.ok
    assert {"city": "Oslo"} == outcome.value
    assert {Flag.KEYS_ALIGNED, Flag.ARGUMENTS_NORMALISED} <= set(outcome.flags)


# ---------------------------------------------------------------------------------------------
# Rules per tool
# ---------------------------------------------------------------------------------------------


@contract(fields=("temperature",))
def plausible(value: dict[str, Any]) -> Violation | None:
    """A temperature on Earth."""
    if not -90 <= value["temperature"] <= 60:
        return Violation("temperature must be between -90 and 60", fields=("temperature",))
    return None


def test_a_tool_contract_breach_is_an_error_result_naming_the_rule() -> None:
    """`tool_contracts` judge the validated value: a breach is an error result."""
    server = weather_server(ScriptedToolResult(structured={"temperature": 99, "city": "Oslo"}))
    result = run(lambda: call_once("client", server, tool_contracts={"get_weather": [plausible]}))
    assert True is result.is_error
    assert "between -90 and 60" in text_of(result)


def test_a_fix_rule_settles_the_breach_locally() -> None:
    """`on_fail="fix"`: the fixed value is the structured content (flag `contract_fixed`)."""

    @contract(fields=("city",), on_fail="fix", fix=lambda v: {**v, "city": v["city"].strip()})
    def trimmed(value: dict[str, Any]) -> Violation | None:
        """No stray spaces."""
        return (
            Violation("city has spaces around it")
            if value["city"] != value["city"].strip()
            else None
        )

    server = weather_server(ScriptedToolResult(structured={"temperature": 3, "city": " Oslo "}))
    result = run(lambda: call_once("client", server, tool_contracts={"get_weather": [trimmed]}))
    assert {"temperature": 3, "city": "Oslo"} == result.structured_content
    assert Flag.CONTRACT_FIXED in healjson.outcome_of(result).flags  # type: ignore[union-attr]


def test_tool_contracts_given_to_a_call_replace_the_sessions() -> None:
    """`call_tool(..., tool_contracts=...)` judges this call with its own rules."""
    server = weather_server(
        ScriptedToolResult(structured={"temperature": 99, "city": "Oslo"}), repeat=True
    )

    async def go() -> tuple[Any, Any]:
        async with connect(
            "client", server.server, tool_contracts={"get_weather": [plausible]}
        ) as s:
            strict = await s.call_tool("get_weather", ARGS)
            lenient = await s.call_tool("get_weather", ARGS, tool_contracts={})
            return strict, lenient

    strict, lenient = run(go)
    assert (True, False) == (strict.is_error, lenient.is_error)


def test_bad_tool_contracts_raise_at_once() -> None:
    """A rule that is not a rule is a configuration error, raised when the session is wrapped."""
    with pytest.raises(TypeError, match="tool_contracts"):
        healjson.mcp.heal_session(ClientSession.__new__(ClientSession), tool_contracts=["x"])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="contracts must be functions"):
        healjson.mcp.heal_session(ClientSession.__new__(ClientSession), tool_contracts={"t": [1]})


# ---------------------------------------------------------------------------------------------
# The wrapper itself
# ---------------------------------------------------------------------------------------------


def test_wrap_dispatches_sessions_and_clients_and_wraps_once() -> None:
    """`healjson.wrap` takes a `ClientSession` or a `Client`; wrapping a wrapper wraps what is
    beneath it; anything else on the wrapper is the SDK object's."""
    server = weather_server(ScriptedToolResult(structured=GOOD))
    client = server.client()
    wrapped = healjson.wrap(client)
    again = healjson.wrap(wrapped)
    assert isinstance(wrapped, HealingSession)
    assert isinstance(again, HealingSession)
    assert client is again.wrapped
    assert client.mode == wrapped.mode
    assert "HealingSession(" in repr(wrapped)
    with pytest.raises(TypeError, match="ClientSession"):
        HealingSession(object())


def test_the_tools_are_listed_once_for_many_calls() -> None:
    """The output schemas are listed once per session, however many calls follow."""
    server = weather_server(ScriptedToolResult(structured=GOOD), repeat=True)
    listings: list[int] = []
    original = server._list_tools

    async def counted(ctx: Any, params: Any) -> Any:
        listings.append(1)
        return await original(ctx, params)

    server._list_tools = counted  # type: ignore[method-assign]

    async def go() -> None:
        async with connect("client", server.server) as session:
            for _ in range(5):
                await session.call_tool("get_weather", ARGS)
            await session.list_tools()

    run(go)
    assert 2 == len(listings)  # the first call's listing, and the caller's own


def test_a_tool_the_server_does_not_list_passes_through() -> None:
    """No schema for an unlisted name: the server's answer (here its error) is the SDK's."""

    async def go() -> Any:
        async with connect("client", weather_server().server) as session:
            return await caught(session.call_tool("nowhere", {}))

    assert "Unknown tool" in str(run(go))


def test_each_heal_is_a_run_with_events_and_a_trace() -> None:
    """A healed result is a healjson run: its events, the MCP event naming the tool, and a
    trace of the outcome."""
    server = weather_server(FAMILIES[1].sent, FAMILIES[4].sent)

    async def go() -> tuple[Any, Any]:
        async with connect("client", server.server) as session:
            return (
                await session.call_tool("get_weather", ARGS),
                await session.call_tool("get_weather", ARGS),
            )

    with capture_events() as logs:
        healed, _failed = run(go)
    events = [log["event"] for log in logs]
    assert {"healjson.healed", "healjson.degraded"} <= set(events)
    mcp_events = [log for log in logs if log["event"].startswith("healjson.mcp.")]
    assert ["healjson.mcp.healed", "healjson.mcp.error_result"] == [e["event"] for e in mcp_events]
    assert {"get_weather"} == {e["tool"] for e in mcp_events}
    assert healjson.outcome_of(healed).run_id == mcp_events[0]["run_id"]  # type: ignore[union-attr]
    assert "keys_aligned" in healjson.outcome_of(healed).trace()  # type: ignore[union-attr]
    assert ["temperature: is required"] == mcp_events[1]["errors"]


# ---------------------------------------------------------------------------------------------
# Size and concurrency
# ---------------------------------------------------------------------------------------------

LIST_SCHEMA = {
    "type": "object",
    "properties": {
        "rows": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
                "required": ["id", "name"],
            },
        }
    },
    "required": ["rows"],
}


def big_rows() -> list[dict[str, Any]]:
    """About a megabyte of rows."""
    return [{"id": index, "name": f"item-{index:06d}-" + "x" * 40} for index in range(16_000)]


@pytest.mark.parametrize("as_text", [False, True], ids=["structured", "text_only"])
def test_a_one_megabyte_result_is_judged_and_healed(as_text: bool) -> None:
    """A 1 MB result (structured with a key in another case, or JSON in text only) heals."""
    rows = big_rows()
    sent = (
        ScriptedToolResult(text=json.dumps({"rows": rows}))
        if as_text
        else ScriptedToolResult(structured={"Rows": rows}, text=())
    )
    assert len(json.dumps(rows)) > 1_000_000
    server = ScriptedMCPServer(
        [ScriptedTool("table", output_schema=LIST_SCHEMA)], {"table": [sent]}
    )

    async def go() -> Any:
        async with connect("client", server.server) as session:
            return await session.call_tool("table", {})

    result = run(go)
    assert False is result.is_error
    assert rows == result.structured_content["rows"]


def test_fifty_concurrent_calls_on_one_session_each_get_their_own_result() -> None:
    """50 calls at once on one session, slow and fast, every family mixed: each call gets its
    own healed result (or its error result); the tools are listed once."""

    def answer(arguments: Any) -> ScriptedToolResult:
        family = FAMILIES[arguments["hours"][0] % len(FAMILIES)]
        return ScriptedToolResult(
            structured=family.sent.structured,
            text=family.sent.text,
            delay_s=0.002 * (arguments["hours"][0] % 5),
        )

    server = weather_server(answer, repeat=True)
    results: dict[int, Any] = {}

    async def one(session: Any, index: int) -> None:
        results[index] = await session.call_tool("get_weather", {"city": "Oslo", "hours": [index]})

    async def go() -> None:
        async with connect("client", server.server) as session, anyio.create_task_group() as group:
            for index in range(50):
                group.start_soon(one, session, index)

    run(go)
    assert 50 == len(results) == len(server.calls)
    for index, result in results.items():
        family = FAMILIES[index % len(FAMILIES)]
        if family.error_field is None:
            assert family.value == result.structured_content
        else:
            assert True is result.is_error
            assert f"`{family.error_field}`" in text_of(result)


# ---------------------------------------------------------------------------------------------
# Over stdio
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_over_stdio_every_family_is_healed_and_the_arguments_normalised(tmp_path: Any) -> None:
    """The scripted server as a subprocess over stdio: each family healed or an error result,
    an error result passed through, the arguments the server received normalised."""
    sent = [family.sent for family in FAMILIES] + [ScriptedToolResult(text="down", is_error=True)]
    params = weather_server(*sent).stdio_parameters(tmp_path)

    async def go() -> list[Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            healed = healjson.wrap(session)
            return [await healed.call_tool("get_weather", SLOPPY_ARGS) for _ in sent]

    results = run(go)
    for family, result in zip(FAMILIES, results, strict=False):
        if family.error_field is None:
            assert family.value == result.structured_content
        else:
            assert f"`{family.error_field}`" in text_of(result)
    assert (True, "down") == (results[-1].is_error, text_of(results[-1]))
    calls = ScriptedMCPServer.recorded_calls(tmp_path)
    assert [CLEAN_ARGS] * len(sent) == [call.arguments for call in calls]


def test_arguments_sent_as_one_json_string_are_sent_as_the_object() -> None:
    """The whole arguments object as its JSON text: parsed and sent as the object (the bare
    SDK refuses a string for `arguments` before anything is sent)."""
    server = weather_server(ScriptedToolResult(structured=GOOD))

    async def go(heal: bool) -> Any:
        async with connect("client", server.server, heal=heal) as session:
            return await caught(session.call_tool("get_weather", '{"city": "Oslo"}'))

    assert isinstance(run(lambda: go(False)), Exception)
    result = run(lambda: go(True))
    assert GOOD == result.structured_content
    assert [{"city": "Oslo"}] == [call.arguments for call in server.calls]


def test_an_output_schema_that_is_not_json_schema_leaves_the_result_as_sent() -> None:
    """A server's broken `outputSchema`: the bare SDK raises, healjson cannot judge against it
    and hands the result back as the server sent it (no outcome)."""
    broken = {"type": "object", "properties": {"n": {"type": "whole number"}}}
    sent = ScriptedToolResult(structured={"n": 1})
    bare = ScriptedMCPServer([ScriptedTool("count", output_schema=broken)], {"count": [sent]})
    healed = ScriptedMCPServer([ScriptedTool("count", output_schema=broken)], {"count": [sent]})

    async def go(server: ScriptedMCPServer, heal: bool) -> Any:
        async with connect("client", server.server, heal=heal) as session:
            return await caught(session.call_tool("count", {}))

    assert isinstance(run(lambda: go(bare, False)), RuntimeError)
    result = run(lambda: go(healed, True))
    assert {"n": 1} == result.structured_content
    assert None is healjson.outcome_of(result)


def test_the_scripted_server_says_what_is_wrong_with_its_script() -> None:
    """Results for a tool it does not list, a script file with a function, an unknown key in
    a script file: errors that name the problem."""
    with pytest.raises(ValueError, match="does not list"):
        ScriptedMCPServer([], {"nowhere": [ScriptedToolResult()]})
    with pytest.raises(ValueError, match="holds a function"):
        weather_server(lambda arguments: ScriptedToolResult()).script()
    with pytest.raises(ValueError, match="unknown keys"):
        ScriptedToolResult.from_dict({"structured": 1, "colour": "red"})


def test_a_script_round_trips_through_its_file_data() -> None:
    """`script()` and `from_script()` keep tools, results and options."""
    server = weather_server(
        ScriptedToolResult(structured=GOOD, delay_s=0.1),
        ScriptedToolResult(text=("a", "b"), is_error=True),
        repeat=True,
        check_arguments=False,
    )
    again = ScriptedMCPServer.from_script(json.loads(json.dumps(server.script())))
    assert server.script() == again.script()
    assert ("a", "b") == again.results["get_weather"][1].texts()  # type: ignore[union-attr]
