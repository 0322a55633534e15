"""A text block that completes structured content keeps everything that content says: a string
is matched only as written (a number equals a string only when the string is its JSON text),
and what the text leaves out (an `[]`, a `{}`) stays in the value sent. Over the real SDK, in
memory, and as a property of the judge."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from mcp import Client

import healjson
from healjson._mcp.results import judge_result
from healjson._mcp.tools import schemas_of
from healjson.mcp import heal_session
from healjson.testing import ScriptedMCPServer, ScriptedTool, ScriptedToolResult

CODE = {
    "type": "object",
    "properties": {"zip": {"type": "string"}, "name": {"type": "string"}, "n": {"type": "integer"}},
    "required": ["zip", "name", "n"],
}
WEATHER = {
    "type": "object",
    "properties": {
        "temperature": {"type": "number"},
        "city": {"type": "string"},
        "alerts": {"type": "array", "items": {"type": "string"}},
        "meta": {"type": "object"},
    },
    "required": ["temperature", "city"],
}


def called(result: ScriptedToolResult, schema: dict[str, Any]) -> Any:
    """One `tools/call` of tool `t` (output `schema`) answered with `result`, through a healed
    `mcp.Client` session."""
    server = ScriptedMCPServer([ScriptedTool("t", {"type": "object"}, schema)], {"t": [result]})

    async def main() -> Any:
        async with heal_session(Client(server.server)) as client:
            return await client.call_tool("t", {})

    return asyncio.run(main())


@pytest.mark.parametrize(
    ("said", "written"),
    [("007", "7"), ("1e3", "1000"), (" 12", "12"), ("Infinity", "inf"), ("7.0", "7")],
)
def test_a_text_with_another_string_never_replaces_the_servers(said: str, written: str) -> None:
    """Structured content with `zip` = `said` (and `n` missing) beside a text whose `zip` is
    another string with the same number in it: an error result, never the text's string."""
    text = json.dumps({"zip": written, "name": "Bond", "n": 1})
    result = called(ScriptedToolResult(structured={"zip": said, "name": "Bond"}, text=text), CODE)
    assert result.is_error
    assert result.structured_content is None


def test_a_number_and_its_json_text_are_one_value() -> None:
    """A temperature the structured content sends as the text `"21.5"` (and no city) is
    completed by a text holding the number 21.5 and the city."""
    structured = {"temperature": "21.5"}
    text = 'Result: {"temperature": 21.5, "city": "Oslo"}'
    result = called(ScriptedToolResult(structured=structured, text=text), WEATHER)
    assert not result.is_error
    assert {"temperature": 21.5, "city": "Oslo"} == result.structured_content


def test_empty_members_the_text_leaves_out_stay_in_the_value() -> None:
    """`alerts: []` and `meta: {}` in the structured content, absent from the completing text,
    are in the value sent; the outcome says it came from the text."""
    structured = {"city": "Oslo", "alerts": [], "meta": {}}
    text = 'Result: {"temperature": 5, "city": "Oslo"}'
    result = called(ScriptedToolResult(structured=structured, text=text), WEATHER)
    assert not result.is_error
    assert {"temperature": 5, "city": "Oslo", "alerts": [], "meta": {}} == (
        result.structured_content
    )
    assert healjson.Flag.STRUCTURED_FROM_TEXT in healjson.outcome_of(result).flags


def test_an_empty_member_the_schema_refuses_is_no_completion() -> None:
    """An `[]` the schema refuses (`minItems: 1`), left out by the text: not dropped to make the
    text fit, an error result."""
    schema = json.loads(json.dumps(WEATHER))
    schema["properties"]["alerts"]["minItems"] = 1
    structured = {"city": "Oslo", "alerts": []}
    text = '{"temperature": 5, "city": "Oslo"}'
    result = called(ScriptedToolResult(structured=structured, text=text), schema)
    assert result.is_error


_SCHEMAS = schemas_of("t", {"type": "object"}, CODE)
_TEXTS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)


@given(said=_TEXTS, written=_TEXTS)
@example(said="007", written="7")
@example(said="-0", written="0")
@example(said="x", written="x")
def test_a_string_is_completed_only_by_the_same_string(said: str, written: str) -> None:
    """For any two strings: structured `zip` = `said` with `n` missing, and a text whose `zip`
    is `written`: healed exactly when the two are the same string, and then with `said`."""
    verdict = judge_result(
        "t",
        _SCHEMAS,
        structured={"zip": said, "name": "Bond"},
        texts=[json.dumps({"zip": written, "name": "Bond", "n": 1})],
        is_error=False,
    )
    if said == written:
        assert verdict.error is None
        assert said == verdict.value["zip"]
    else:
        assert verdict.error is not None


@given(
    number=st.one_of(
        st.integers(-(10**20), 10**20), st.floats(allow_nan=False, allow_infinity=False)
    )
)
def test_a_number_is_completed_by_its_json_text(number: float) -> None:
    """For any finite number sent as structured content's `n` (as its JSON text, with `zip`
    missing): a text holding that number completes it."""
    schema = schemas_of(
        "t",
        {"type": "object"},
        {
            "type": "object",
            "properties": {"zip": {"type": "string"}, "n": {"type": "number"}},
            "required": ["zip", "n"],
        },
    )
    verdict = judge_result(
        "t",
        schema,
        structured={"n": json.dumps(number)},
        texts=[json.dumps({"zip": "A", "n": number})],
        is_error=False,
    )
    assert verdict.error is None
    assert number == verdict.value["n"]


@healjson.contract
def broken(value: Any) -> bool:
    """A contract with a bug of its own."""
    raise ZeroDivisionError("the check divided by zero")


def test_a_contract_that_raises_is_named_as_the_bug_not_the_servers_output() -> None:
    """A tool contract that raises makes an error result whose first line says the check is
    at fault, never "the server's output is at fault"; the contract's exception is named."""
    server = ScriptedMCPServer(
        [ScriptedTool("t", {"type": "object"}, WEATHER)],
        {"t": [ScriptedToolResult(structured={"temperature": 1, "city": "Oslo"})]},
    )

    async def main() -> Any:
        async with heal_session(Client(server.server), tool_contracts={"t": [broken]}) as client:
            return await client.call_tool("t", {})

    result = asyncio.run(main())
    assert result.is_error
    text = result.content[0].text
    first = text.splitlines()[0]
    assert "a contract that checks it raised" in first
    assert "server's output is at fault" not in text
    assert "ZeroDivisionError" in text
    assert healjson.Reason.CONTRACT_ERROR == healjson.outcome_of(result).reason
