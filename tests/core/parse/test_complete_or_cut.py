"""Complete or cut, decided right; the answer is only the response tool's call.

Escaped JSON outside a string and nested encodings are complete replies (healed, never called
truncated, never a reason to raise `max_tokens`); a cut reply's value always carries the
`truncated` flag, and a cut tool call's arguments are truncated; another tool's call is reported,
never validated as the answer.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import (
    Degraded,
    Flag,
    Healed,
    Healer,
    HealPolicy,
    Reason,
    Reply,
    Source,
    outcome_from_dict,
)
from healjson._core.wire.reply import ToolCall
from healjson.testing import ScriptedModel, ScriptedReply, ScriptedServer, from_schema
from pinned import pinned
from sdk_calls import wrapped_create


class Point(BaseModel):
    x: int
    label: str


POINT = Point(x=3, label='a "quoted" label')
POINT_JSON = POINT.model_dump_json()


def encoded(text: str, levels: int) -> str:
    for _ in range(levels):
        text = json.dumps(text)
    return text


ENCODED = {
    "escaped_outside_a_string": f"The answer is {encoded(POINT_JSON, 1)}",
    "whole_reply_is_a_json_string": encoded(POINT_JSON, 1),
    "two_levels": encoded(POINT_JSON, 2),
    "three_levels": encoded(POINT_JSON, 3),
    "string_holding_prose_and_json": encoded(f"Here you go: {POINT_JSON}", 1),
    "string_holding_a_fence": encoded(f"Sure!\n```json\n{POINT_JSON}\n```", 1),
    "two_levels_inside_prose": f"Result: {encoded(POINT_JSON, 2)} (done)",
}


@pytest.mark.parametrize("text", ENCODED.values(), ids=ENCODED.keys())
def test_encoded_json_is_decoded_never_called_truncated(text: str) -> None:
    """Escapes and nested encodings are read as what they are: a complete value."""
    outcome = healjson.validate(text, Point)
    assert isinstance(outcome, Healed)
    assert POINT == outcome.value
    assert Flag.DOUBLE_ENCODED in outcome.flags
    assert Flag.TRUNCATED not in outcome.flags


@pinned()
@given(value=from_schema(Point), levels=st.integers(1, 3), prose=st.booleans())
@example(value=Point(x=0, label="\\"), levels=1, prose=True)  # a backslash before the close
@example(value=Point(x=0, label='\\"'), levels=2, prose=False)
def test_any_value_encoded_up_to_three_times_heals(value: Point, levels: int, prose: bool) -> None:
    """For any valid value and 1-3 levels of encoding, with or without prose: the value."""
    text = encoded(value.model_dump_json(), levels)
    if prose:
        text = f"Here is the result: {text} - hope that helps."
    assert value == healjson.validate(text, Point).unwrap()


def test_an_encoded_reply_never_raises_max_tokens() -> None:
    """`on_truncation="raise_max_tokens"` has nothing to raise: one call, parameters as sent."""
    model = ScriptedModel([ENCODED["escaped_outside_a_string"]])
    healer = Healer(Point, policy=HealPolicy(on_truncation="raise_max_tokens"))
    outcome = healer.run(model, "Where?", max_tokens=50)
    assert isinstance(outcome, Healed)
    assert 1 == outcome.calls


# --- cut replies -----------------------------------------------------------------------------


def test_a_cut_reply_whose_value_closed_is_healed_with_the_truncated_flag() -> None:
    """Complete, strictly valid JSON with `finish_reason=length` is flagged, on every path."""
    for text in (POINT_JSON, f"```json\n{POINT_JSON}\n```", f"Sure: {POINT_JSON}"):
        outcome = healjson.validate(text, Point, finish_reason="length")
        assert isinstance(outcome, Healed), text
        assert Flag.TRUNCATED in outcome.flags
    assert Flag.TRUNCATED in healjson.parse(POINT_JSON, finish_reason="length").flags


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_cut_healed_reply_is_flagged_through_the_healer(mode: str) -> None:
    """The engine's first step (a clean first reply) does not drop the flag either."""
    model = ScriptedModel([Reply(POINT_JSON, "length")])
    healer = Healer(Point)
    if mode == "sync":
        outcome = healer.run(model, "Where?")
    else:
        outcome = asyncio.run(healer.arun(model.acall, "Where?"))
    assert isinstance(outcome, Healed)
    assert Flag.TRUNCATED in outcome.flags


def test_a_cut_tool_call_is_truncated_even_when_its_arguments_parse() -> None:
    """A provider that sends arguments as an object may have closed a cut call's: arguments
    sent as an object are never taken as complete in a cut reply."""
    call = ToolCall("Point", POINT_JSON, as_object=True)
    cut = Reply(None, "length", tool_calls=(call,))
    outcome = Healer(Point, policy=HealPolicy(max_attempts=1)).run(ScriptedModel([cut]), "Where?")
    assert isinstance(outcome, Degraded)
    assert Reason.TOKEN_TRUNCATED == outcome.reason
    assert POINT.model_dump() == outcome.partial


def test_a_cut_tool_call_whose_text_parses_whole_is_complete() -> None:
    """Arguments the model wrote as text prove themselves, as an answer's text does: a cut
    reply whose call's text parses whole and validates is healed, flagged `truncated`."""
    cut = Reply(None, "length", tool_calls=(ToolCall("Point", POINT_JSON),))
    outcome = Healer(Point, policy=HealPolicy(max_attempts=1)).run(ScriptedModel([cut]), "Where?")
    assert isinstance(outcome, Healed)
    assert POINT == outcome.value
    assert Flag.TRUNCATED in outcome.flags


def test_a_complete_tool_call_of_the_response_tool_is_the_answer() -> None:
    """healjson's own tool (no caller `tools=`): its arguments are the answer."""
    reply = Reply("Calling the tool.", "tool_calls", tool_calls=(ToolCall("Point", POINT_JSON),))
    outcome = Healer(Point).run(ScriptedModel([reply]), "Where?")
    assert POINT == outcome.unwrap()
    assert (ToolCall("Point", POINT_JSON),) == outcome.attempts[0].tool_calls


def test_of_several_calls_the_one_named_after_the_target_is_the_answer() -> None:
    """Parallel calls: the response tool's arguments, not the first call's."""
    calls = (ToolCall("lookup", '{"x": 0, "label": "no"}'), ToolCall("Point", POINT_JSON))
    outcome = Healer(Point).run(ScriptedModel([Reply(None, "tool_calls", tool_calls=calls)]), "?")
    assert POINT == outcome.unwrap()


# --- another tool's call -----------------------------------------------------------------------

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}},
    },
}
WEATHER_CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"x": 3, "label": "Paris"}'},
}


def test_a_call_of_the_callers_own_tool_is_reported_never_validated() -> None:
    """With `tools=` of the caller's, `get_weather`'s arguments are not the answer even though
    they would validate."""
    reply = Reply(
        None, "tool_calls", tool_calls=(ToolCall("get_weather", '{"x": 3, "label": "Paris"}'),)
    )
    healer = Healer(Point, policy=HealPolicy(max_attempts=1))
    outcome = healer.run(ScriptedModel([reply]), "Where?", tools=[WEATHER_TOOL])
    assert isinstance(outcome, Degraded)
    assert Source.TOOL_CALL == outcome.errors[0].source
    assert "get_weather" in outcome.errors[0].constraint


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_wrap_never_validates_another_tools_call(
    scripted_server: ScriptedServer, mode: Literal["sync", "async"]
) -> None:
    """Over HTTP with the real openai SDK: the weather call is reported, a repair asks for the
    answer, and the answer that follows is the value."""
    scripted_server.extend(
        [ScriptedReply(tool_calls=[WEATHER_CALL], finish_reason="tool_calls"), POINT_JSON]
    )
    kwargs: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": "user", "content": "Where?"}],
        "response_model": Point,
        "tools": [WEATHER_TOOL],
    }
    outcome = wrapped_create(scripted_server, mode, **kwargs)
    assert isinstance(outcome, Healed)
    assert POINT == outcome.value
    assert 2 == outcome.calls
    assert Source.TOOL_CALL == outcome.attempts[0].diagnostics[0].source
    assert "get_weather" == outcome.attempts[0].tool_calls[0].name


# --- a cut scalar is never a value -------------------------------------------------------------


class Counted(BaseModel):
    name: str
    count: int


@pytest.mark.parametrize(
    "text", ["12", "-3.5", "true", "null", " 42 \n", "<think>x</think>42", "1e5"]
)
def test_a_bare_scalar_at_the_end_of_a_cut_reply_is_never_a_value(text: str) -> None:
    """A number or literal that the token limit cut the reply after may itself be cut (`12` of
    `123`): `parse` keeps no value and reports the truncation."""
    result = healjson.parse(text, finish_reason="length")
    assert not result.ok
    assert None is result.value
    assert True is result.truncated
    assert Source.TRUNCATION is result.error.source


@pytest.mark.parametrize(
    ("text", "target", "partial"),
    [
        ("42", int, None),
        ("3.5", float, None),
        ("true", bool, None),
        ("12", list[int], None),
        ("Hello wor", str, None),
        ("[1, 2, 12", list[int], [1, 2]),
        ('{"name": "x", "count": 12', Counted, {"name": "x"}),
    ],
)
def test_a_cut_scalar_degrades_as_truncated_keeping_only_what_closed(
    text: str, target: Any, partial: Any
) -> None:
    """Whatever the target, a cut reply whose last token is a bare scalar (or, for a scalar
    target, text) is `token_truncated`; the partial value keeps the members complete before it."""
    outcome = healjson.validate(text, target, finish_reason="length")
    assert isinstance(outcome, Degraded), (text, outcome)
    assert Reason.TOKEN_TRUNCATED == outcome.reason
    assert partial == outcome.partial


@pytest.mark.parametrize(
    ("text", "target"),
    [('"abc"', str), ('{"name": "x", "count": 12}', Counted), ("```\n42\n```", int)],
)
def test_a_cut_reply_whose_last_token_closed_still_heals(text: str, target: Any) -> None:
    """A closing quote, bracket or fence after the value ends it before the cut: it heals,
    flagged `truncated`."""
    outcome = healjson.validate(text, target, finish_reason="length")
    assert isinstance(outcome, Healed), (text, outcome)
    assert Flag.TRUNCATED in outcome.flags


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_cut_number_is_asked_again_over_http(
    scripted_server: ScriptedServer, mode: Literal["sync", "async"]
) -> None:
    """Over HTTP with the real openai SDK: a reply cut after `12` is not healed as 12; the
    engine asks again and the complete answer is the value."""
    scripted_server.extend([ScriptedReply("12", finish_reason="length"), "123"])
    kwargs: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": "user", "content": "How many?"}],
        "response_model": int,
    }
    outcome = wrapped_create(scripted_server, mode, **kwargs)
    assert isinstance(outcome, Healed)
    assert 123 == outcome.value
    assert 2 == outcome.calls
    assert Source.TRUNCATION == outcome.attempts[0].diagnostics[0].source


def test_a_record_keeps_arguments_sent_as_an_object() -> None:
    """An outcome's record keeps which calls' arguments the provider sent as an object (a
    record without the field loads them as text, as records written before it)."""
    call = ToolCall("Point", POINT_JSON, as_object=True)
    cut = Reply(None, "length", tool_calls=(call,))
    outcome = Healer(Point, policy=HealPolicy(max_attempts=1)).run(ScriptedModel([cut]), "Where?")
    data = outcome.to_dict()
    again = outcome_from_dict(data)
    assert (call,) == again.attempts[0].tool_calls
    del data["attempts"][0]["tool_calls"][0]["as_object"]
    assert not outcome_from_dict(data).attempts[0].tool_calls[0].as_object
