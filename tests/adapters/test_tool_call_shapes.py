"""A tool call's arguments are a JSON object whatever the tool's schema leaves out, the calls of
one answer keep ids no two of them share, and a key echoed as a call's id or name is shown
nowhere: the real openai SDK over real HTTP against the scripted server."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Flag, Healed
from healjson.testing import ScriptedReply, ScriptedServer
from pinned import pinned

KEY = "sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcd"
SAID = [{"role": "user", "content": "the weather?"}]
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def tool(parameters: Any) -> dict[str, Any]:
    return {"type": "function", "function": {"name": "weather", "parameters": parameters}}


def answer(*calls: tuple[str | None, str], name: str = "weather") -> ScriptedReply:
    """A reply of tool calls, each `(id, arguments)`."""
    made = [
        {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}
        for call_id, arguments in calls
    ]
    return ScriptedReply(tool_calls=made, finish_reason="tool_calls")


def heal(replies: list[ScriptedReply], parameters: Any = CITY, *, key: str = "k") -> Any:
    with ScriptedServer(replies) as server:
        sdk = openai.OpenAI(base_url=server.base_url, api_key=key, max_retries=0)
        with sdk:
            return healjson.wrap(sdk).chat.completions.create(
                model="m", messages=SAID, tools=[tool(parameters)], heal_tools=True
            )


UNTYPED = [{}, {"properties": {"city": {"type": "string"}}, "required": ["city"]}]


@pytest.mark.parametrize("parameters", UNTYPED, ids=["empty", "no-type"])
def test_double_encoded_arguments_are_unwrapped_under_a_schema_without_type(
    parameters: dict[str, Any],
) -> None:
    """`parameters` of `{}` (a tool without arguments) or `properties` without `type`: an object
    sent as a JSON string is read as the object, flagged `double_encoded`."""
    outcome = heal([answer(("c1", json.dumps(json.dumps({"city": "Oslo"}))))], parameters)
    assert isinstance(outcome, Healed), outcome
    [made] = outcome.value.calls
    assert {"city": "Oslo"} == made.arguments
    assert Flag.DOUBLE_ENCODED in made.flags


@pytest.mark.parametrize("parameters", UNTYPED, ids=["empty", "no-type"])
@pytest.mark.parametrize("arguments", ["null", "42", '["Oslo"]', '"Oslo"', "true"])
def test_arguments_that_are_no_object_are_asked_again(
    parameters: dict[str, Any], arguments: str
) -> None:
    """Arguments that are no JSON object never come back as a call's arguments: the call is
    asked again, and the object the repair sends is the call's."""
    outcome = heal([answer(("c1", arguments)), answer(("c2", '{"city": "Oslo"}'))], parameters)
    assert isinstance(outcome, Healed), outcome
    assert 2 == outcome.calls
    [made] = outcome.value.calls
    assert {"city": "Oslo"} == made.arguments


@pytest.mark.parametrize("kind", ["array", "string", ["string", "null"]])
def test_a_tool_whose_schema_allows_no_object_is_refused_before_any_request(kind: Any) -> None:
    """A tool declared with parameters of a type that is no object is a bad declaration: a
    `ValueError` naming the tool, and no request is sent."""
    with ScriptedServer([answer(("c1", "{}"))]) as server:
        sdk = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        with sdk, pytest.raises(ValueError, match=r"'weather'.*must describe a JSON object"):
            healjson.wrap(sdk).chat.completions.create(
                model="m", messages=SAID, tools=[tool({"type": kind})], heal_tools=True
            )
        assert [] == server.requests


def test_a_schema_that_allows_an_object_or_null_takes_an_object() -> None:
    """`"type": ["object", "null"]` declares an object: a call's arguments are one."""
    outcome = heal([answer(("c1", '{"city": "Oslo"}'))], {**CITY, "type": ["object", "null"]})
    assert isinstance(outcome, Healed), outcome
    assert {"city": "Oslo"} == outcome.value.calls[0].arguments


IDS = st.lists(
    st.sampled_from(["c1", "c1_1", "c1_2", "c1_2_2", "call_0", "call_1", None]),
    min_size=1,
    max_size=5,
)


@pinned(max_examples=25)
@given(ids=IDS)
def test_the_calls_of_one_answer_have_ids_no_two_share(ids: list[str | None]) -> None:
    """However the model spells its calls' ids (repeated, missing, or a renaming's own
    spelling): every healed call has an id of its own, a call keeps its own id when no call
    before it took it, and the calls stay in their order."""
    replies = [
        answer(*((call_id, json.dumps({"city": f"c{at}"})) for at, call_id in enumerate(ids)))
    ]
    outcome = heal(replies)
    assert isinstance(outcome, Healed), outcome
    made = outcome.value.calls
    assert [{"city": f"c{at}"} for at in range(len(ids))] == [call.arguments for call in made]
    assert len({call.id for call in made}) == len(made)
    seen: set[str] = set()
    for own, call in zip(ids, made, strict=True):
        if own and own not in seen:
            assert own == call.id
        seen.add(call.id)


@pytest.mark.parametrize("where", ["id", "name"])
def test_a_key_echoed_as_a_calls_id_or_name_is_shown_nowhere(where: str) -> None:
    """The client's key as a call's id (a proxy reflecting the request) or as the name of a
    tool it calls: never in the trace, the record or the outcome's repr."""
    if where == "id":
        replies = [answer((KEY, '{"city": "Oslo"}'))]
    else:
        replies = [answer(("c1", '{"city": "Oslo"}'), name=KEY), answer(("c2", '{"city": "Oslo"}'))]
    outcome = heal(replies, key=KEY)
    assert KEY not in outcome.trace()
    assert KEY not in json.dumps(outcome.to_dict(), default=str)
    assert KEY not in repr(outcome)


def test_a_tool_call_stream_that_fails_keeps_what_had_arrived() -> None:
    """A tool-call stream that breaks part-way degrades with `api_error`, its attempt keeping
    the text and the calls that had arrived (as a JSON stream keeps its text)."""
    reply = ScriptedReply(
        content="Hello there",
        chunk_chars=3,
        stream_error_after_chars=20,
        tool_calls=[{"id": "c1", "function": {"name": "weather", "arguments": '{"city":"Oslo"}'}}],
    )
    with ScriptedServer([reply]) as server:
        sdk = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        with sdk:
            stream = healjson.wrap(sdk).chat.completions.create(
                model="m", messages=SAID, tools=[tool(CITY)], heal_tools=True, stream=True
            )
            streamed = "".join(map(str, stream))
    outcome = stream.outcome
    assert not outcome.ok
    assert "api_error" == outcome.reason
    [attempt] = outcome.attempts
    assert streamed == attempt.raw_text == "Hello there"
    [arrived] = attempt.tool_calls
    assert ("weather", "c1") == (arrived.name, arrived.id)
    assert '{"city":"Oslo"}'.startswith(arrived.arguments)


class Person(BaseModel):
    name: str
    age: int


@pytest.mark.parametrize("order", ["answer-last", "answer-first"])
def test_the_attempts_text_is_the_call_judged_as_the_answer(order: str) -> None:
    """A reply of calls alone, one of them to the answer tool (named after the target): the
    attempt's `raw_text`, which the trace and a repair quote, is that call's arguments, the
    one whose errors are reported, wherever it stands among the calls."""
    calls = [
        {"id": "a", "function": {"name": "other", "arguments": '{"name": "Eve", "age": 1}'}},
        {"id": "b", "function": {"name": "Person", "arguments": '{"foo": 1}'}},
    ]
    if order == "answer-first":
        calls.reverse()
    scripted = [ScriptedReply(tool_calls=calls, finish_reason="tool_calls")]
    with ScriptedServer(scripted * 3) as server:
        sdk = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        with sdk:
            outcome = healjson.wrap(sdk).chat.completions.create(
                model="m", messages=SAID, response_model=Person
            )
    assert not outcome.ok
    assert all('{"foo": 1}' == attempt.raw_text for attempt in outcome.attempts)


def test_an_estimated_usage_keeps_the_replys_model() -> None:
    """A reply without usage: its counts are estimated, for the model the reply named."""
    message = {"role": "assistant", "content": '{"name": "Ann", "age": 3}'}
    body = {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "model-x",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    reply = ScriptedReply(body=json.dumps(body))
    with ScriptedServer([reply]) as server:
        sdk = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        with sdk:
            outcome = healjson.wrap(sdk).chat.completions.create(
                model="m", messages=SAID, response_model=Person
            )
    assert outcome.ok, outcome
    assert outcome.usage.estimated
    assert "model-x" == outcome.usage.model == outcome.attempts[0].usage.model


def sse_of(*calls: tuple[int | None, str | None, str]) -> ScriptedReply:
    """A chat stream whose chunks each carry one piece `(index, id, arguments)` of a call to
    `weather` (the id only where given), then the finish."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        body = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "m"}
        return f"data: {json.dumps({**body, 'choices': [choice]})}\n\n"

    pieces = []
    for index, call_id, arguments in calls:
        piece: dict[str, Any] = {"type": "function", "function": {"arguments": arguments}}
        if index is not None:
            piece["index"] = index
        if call_id is not None:
            piece["id"] = call_id
            piece["function"]["name"] = "weather"
        pieces.append(chunk({"tool_calls": [piece]}))
    text = "".join(pieces) + chunk({}, "tool_calls") + "data: [DONE]\n\n"
    return ScriptedReply(body=text, content_type="text/event-stream")


@pytest.mark.parametrize("index", [0, None], ids=["all-at-0", "no-index"])
def test_streamed_calls_a_server_numbers_alike_stay_apart_by_their_ids(index: int | None) -> None:
    """A server that streams each parallel call at index 0 (or with no index), each with its
    own id: the calls stay apart, each healed as sent, none merged into another or dropped;
    a call's later pieces (no id) still join it."""
    stream_of = sse_of(
        (index, "a", '{"city":'),
        (index, None, ' "Oslo"}'),
        (index, "b", '{"city": "Bergen"}'),
    )
    with ScriptedServer([stream_of]) as server:
        sdk = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        with sdk:
            stream = healjson.wrap(sdk).chat.completions.create(
                model="m", messages=SAID, tools=[tool(CITY)], heal_tools=True, stream=True
            )
            list(stream)
    outcome = stream.outcome
    assert isinstance(outcome, Healed), outcome
    assert 1 == outcome.calls
    made = [(call.id, call.arguments) for call in outcome.value.calls]
    assert [("a", {"city": "Oslo"}), ("b", {"city": "Bergen"})] == made


@pytest.mark.parametrize("arguments", ['{"city": "Oslo"}', '{"city": "Oslo"}  '])
def test_a_call_cut_at_the_limit_whose_text_is_whole_is_healed_flagged(arguments: str) -> None:
    """The real SDK: a reply cut at the token limit (`finish_reason="length"`) whose call's
    arguments text parses whole and validates is healed at once, flagged `truncated` (its
    text proves it complete); it was asked again until the attempts ran out."""
    made = [
        {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": arguments}}
    ]
    outcome = heal([ScriptedReply(tool_calls=made, finish_reason="length")] * 3)
    assert isinstance(outcome, Healed)
    assert 1 == outcome.calls
    assert {"city": "Oslo"} == outcome.value.calls[0].arguments
    assert Flag.TRUNCATED in outcome.flags


def test_a_call_cut_at_the_limit_whose_text_is_not_whole_is_asked_again() -> None:
    """A cut call whose text is not whole JSON is still truncated: asked again."""
    made = [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"ci'}}]
    outcome = heal(
        [ScriptedReply(tool_calls=made, finish_reason="length"), answer(("c2", '{"city": "Oslo"}'))]
    )
    assert isinstance(outcome, Healed)
    assert 2 == outcome.calls
    assert {"city": "Oslo"} == outcome.value.calls[0].arguments
