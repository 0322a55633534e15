"""The scripted server's tool calls, read by the real SDKs over real HTTP: arguments text sent
verbatim (broken JSON included) on OpenAI chat and the Responses API, streamed or not; parallel
calls; names no tool declares; a cut call with `finish_reason="length"`; Anthropic's stream
carrying arguments that are no JSON object (its message cannot), and what is refused."""

from __future__ import annotations

from typing import Any

import anthropic
import openai
import pytest

from healjson.testing import ScriptedReply, ScriptedServer

USER: Any = [{"role": "user", "content": "Find shoes."}]
BROKEN = "{'query': 'red shoes', 'limit': 5,}"
CUT = '{"query": "red sho'


def _call(name: str, arguments: Any, call_id: str | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": arguments}}
    if call_id is not None:
        found["id"] = call_id
    return found


PARALLEL = ScriptedReply(
    content="Both.",
    tool_calls=[
        _call("search", BROKEN, "call_a"),
        _call("no_such_tool", '{"x": 1}', "call_b"),
        _call("search", {"query": "boots", "limit": 2}),
    ],
    finish_reason="tool_calls",
)
SENT = [
    ("call_a", "search", BROKEN),
    ("call_b", "no_such_tool", '{"x": 1}'),
    (None, "search", '{"query": "boots", "limit": 2}'),
]


def _openai(server: ScriptedServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)


def _same(found: list[tuple[str, str, str]]) -> None:
    assert [(name, text) for _, name, text in SENT] == [(name, text) for _, name, text in found]
    assert ["call_a", "call_b"] == [call_id for call_id, _, _ in found[:2]]
    assert found[2][0]  # an id made up for the call the script gave none


def test_chat_sends_parallel_calls_verbatim() -> None:
    """The chat route sends parallel tool calls with their ids, names and arguments exactly as
    scripted."""
    with ScriptedServer([PARALLEL]) as server, _openai(server) as sdk:
        message = sdk.chat.completions.create(model="m", messages=USER).choices[0].message
    calls = message.tool_calls or []
    _same([(c.id, c.function.name, c.function.arguments) for c in calls])  # type: ignore[union-attr]
    assert "Both." == message.content


def test_chat_streams_parallel_calls_verbatim() -> None:
    """The chat route streams parallel tool calls so that the joined deltas are exactly the
    scripted calls."""
    found: dict[int, list[Any]] = {}
    with ScriptedServer([PARALLEL]) as server, _openai(server) as sdk:
        for chunk in sdk.chat.completions.create(model="m", messages=USER, stream=True):
            for delta in chunk.choices[0].delta.tool_calls or [] if chunk.choices else []:
                entry = found.setdefault(delta.index, [None, "", ""])
                function = delta.function
                entry[0] = entry[0] or delta.id
                entry[1] += (function.name or "") if function else ""
                entry[2] += (function.arguments or "") if function else ""
    _same([tuple(found[i]) for i in sorted(found)])  # type: ignore[misc]


def test_responses_sends_parallel_calls_verbatim_streamed_or_not() -> None:
    """The Responses route sends parallel function calls exactly as scripted, streamed or not."""
    with ScriptedServer([PARALLEL, PARALLEL]) as server, _openai(server) as sdk:
        response = sdk.responses.create(model="m", input="Find shoes.")
        items = [i for i in response.output if i.type == "function_call"]
        _same([(i.call_id, i.name, i.arguments) for i in items])  # type: ignore[union-attr]
        done = [
            event.arguments
            for event in sdk.responses.create(model="m", input="Find shoes.", stream=True)
            if event.type == "response.function_call_arguments.done"
        ]
    assert [text for _, _, text in SENT] == done


def test_a_cut_call_is_sent_cut_with_the_token_limit_finish() -> None:
    """A cut call is sent cut, with the token limit as the finish, on chat and Responses,
    streamed or not."""
    cut = ScriptedReply(tool_calls=[_call("search", CUT)], finish_reason="length")
    with ScriptedServer([cut, cut, cut]) as server, _openai(server) as sdk:
        choice = sdk.chat.completions.create(model="m", messages=USER).choices[0]
        response = sdk.responses.create(model="m", input="Find shoes.")
        streamed = "".join(
            event.delta
            for event in sdk.responses.create(model="m", input="x", stream=True)
            if event.type == "response.function_call_arguments.delta"
        )
    assert ("length", CUT) == (
        choice.finish_reason,
        choice.message.tool_calls[0].function.arguments,
    )  # type: ignore[union-attr,index]
    assert "incomplete" == response.status
    assert "max_output_tokens" == response.incomplete_details.reason  # type: ignore[union-attr]
    assert CUT == response.output[0].arguments  # type: ignore[union-attr]
    assert CUT == streamed


@pytest.mark.parametrize("arguments", [BROKEN, CUT])
def test_anthropic_streams_arguments_that_are_no_json_object(arguments: str) -> None:
    """The Anthropic route streams tool arguments that are no JSON object as `input_json_delta`
    text."""
    reply = ScriptedReply(
        tool_calls=[_call("search", arguments, "toolu_1")], finish_reason="length", chunk_chars=4
    )
    with (
        ScriptedServer([reply]) as server,
        anthropic.Anthropic(
            base_url=server.anthropic_base_url, api_key="test", max_retries=0
        ) as sdk,
    ):
        events = list(sdk.messages.create(model="c", max_tokens=64, messages=USER, stream=True))
    starts = [e for e in events if e.type == "content_block_start"]
    assert [("tool_use", "toolu_1", "search")] == [
        (s.content_block.type, s.content_block.id, s.content_block.name)  # type: ignore[union-attr]
        for s in starts
    ]
    pieces = [
        e.delta.partial_json  # type: ignore[union-attr]
        for e in events
        if e.type == "content_block_delta"
    ]
    assert arguments == "".join(pieces)
    assert len(pieces) > 1
    stop = next(e for e in events if e.type == "message_delta")
    assert "max_tokens" == stop.delta.stop_reason  # type: ignore[union-attr]


def test_anthropic_refuses_such_arguments_in_a_whole_message() -> None:
    """The Anthropic route refuses such arguments in an unstreamed message, saying they need
    `stream=True`."""
    reply = ScriptedReply(tool_calls=[_call("search", BROKEN)])
    with (
        ScriptedServer([reply]) as server,
        anthropic.Anthropic(
            base_url=server.anthropic_base_url, api_key="test", max_retries=0
        ) as sdk,
        pytest.raises(anthropic.InternalServerError, match="stream=True"),
    ):
        sdk.messages.create(model="c", max_tokens=64, messages=USER)


@pytest.mark.parametrize(
    ("calls", "message"),
    [
        ("not a list", "must be a list"),
        ([{"name": "search"}], "must be"),
        ([_call("", "{}")], "function.name"),
        ([_call("search", object())], "function.arguments"),
        ([{**_call("search", "{}"), "id": 3}], "id must be"),
    ],
)
def test_a_malformed_call_is_refused_when_scripted(calls: Any, message: str) -> None:
    """A malformed scripted tool call is refused when the reply is built, naming the bad field."""
    with pytest.raises(ValueError, match=message):
        ScriptedReply(tool_calls=calls)
