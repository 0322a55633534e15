"""A streamed call and the same reply unstreamed reach the same outcome, whatever its tool calls.

A streamed tool call's pieces carry the provider's identity of the call (OpenAI chat's `index`,
Anthropic's content block `index` and `id`): a piece at a new identity starts a call of its own,
whatever the tool's name, so two calls of one tool stay two calls, each with its id and its own
arguments (`Delta.tool_index`). A content block's start is its first piece (a text block's text,
a `tool_use` block's `input` when not empty), as the SDK's own message keeps it. A usage count the
provider states, 0 included, is stated. Each scenario drives a real SDK (anthropic, openai) over
HTTP against `ScriptedServer` on loopback, with hand-written SSE bodies.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import anthropic
import openai
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

import healjson
from healjson import Degraded, Flag, Healed, HealPolicy
from healjson.testing import ScriptedReply, ScriptedServer
from outcomes import said
from pinned import pinned
from sdk_calls import TLS

MESSAGES = [{"role": "user", "content": "Ann is 31. Extract the person as JSON."}]
READ_TO_END = HealPolicy(max_attempts=1, stream_abort=False)
ANN = {"name": "Ann", "age": 31}
BOB = {"name": "Bob", "age": 5}
LOOKUP = {"type": "object", "properties": {"name": {"type": "string"}}}
A_TOOLS = [{"name": "lookup", "description": "look up", "input_schema": LOOKUP}]
O_TOOLS = [{"type": "function", "function": {"name": "lookup", "parameters": LOOKUP}}]

Calls = list[tuple[str, dict[str, Any]]]


class Person(BaseModel):
    name: str = Field(min_length=1)
    age: int = Field(ge=0)


# -- the wire, written by hand --------------------------------------------------------------------


def sse(events: list[dict[str, Any]]) -> ScriptedReply:
    """Anthropic events as one SSE body."""
    body = "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events)
    return ScriptedReply(body=body, content_type="text/event-stream")


def pieces(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def anthropic_stream(
    calls: Calls, size: int = 7, *, out: int = 12, text: str = ""
) -> ScriptedReply:
    """`calls` as an Anthropic stream: each a `tool_use` block (its id `toolu_<n>`), its input in
    `input_json_delta` pieces of `size` characters; `text` in a first text block's start."""
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {"id": "msg_1", "type": "message",
         "role": "assistant", "model": "claude-test", "content": [], "stop_reason": None,
         "usage": {"input_tokens": 50, "output_tokens": 1}}},
    ]  # fmt: skip
    first = 0
    if text:
        block = {"type": "text", "text": text}
        events += [{"type": "content_block_start", "index": 0, "content_block": block},
                   {"type": "content_block_stop", "index": 0}]  # fmt: skip
        first = 1
    for n, (name, args) in enumerate(calls, start=first):
        block = {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": {}}
        events.append({"type": "content_block_start", "index": n, "content_block": block})
        for piece in pieces(json.dumps(args, ensure_ascii=False), size):
            delta = {"type": "input_json_delta", "partial_json": piece}
            events.append({"type": "content_block_delta", "index": n, "delta": delta})
        events.append({"type": "content_block_stop", "index": n})
    stop = "tool_use" if calls else "end_turn"
    events += [{"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": out}}, {"type": "message_stop"}]  # fmt: skip
    return sse(events)


def anthropic_message(calls: Calls, *, out: int = 12, text: str = "") -> ScriptedReply:
    """The same reply unstreamed: one Messages body."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    first = len(content)
    content += [
        {"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": args}
        for n, (name, args) in enumerate(calls, start=first)
    ]
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-test",
               "content": content, "stop_reason": "tool_use" if calls else "end_turn",
               "stop_sequence": None,
               "usage": {"input_tokens": 50, "output_tokens": out}}  # fmt: skip
    return ScriptedReply(body=json.dumps(message), content_type="application/json")


def chat_stream(calls: Calls, size: int = 7) -> ScriptedReply:
    """`calls` as an OpenAI chat stream: each call's first delta its index, id and name, then
    its arguments in pieces of `size` characters under its index alone."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        line = {"id": "c1", "object": "chat.completion.chunk", "created": 0,
                "model": "gpt-test", "choices": [choice]}  # fmt: skip
        return f"data: {json.dumps(line)}\n\n"

    body = chunk({"role": "assistant", "content": None})
    for n, (name, args) in enumerate(calls):
        head = {"index": n, "id": f"call_{n}", "type": "function",
                "function": {"name": name, "arguments": ""}}  # fmt: skip
        body += chunk({"tool_calls": [head]})
        for piece in pieces(json.dumps(args, ensure_ascii=False), size):
            body += chunk({"tool_calls": [{"index": n, "function": {"arguments": piece}}]})
    body += chunk({}, "tool_calls") + "data: [DONE]\n\n"
    return ScriptedReply(body=body, content_type="text/event-stream")


def chat_completion(calls: Calls) -> ScriptedReply:
    """The same reply unstreamed: one chat completion."""
    tool_calls = [
        {"id": f"call_{n}", "type": "function",
         "function": {"name": name, "arguments": json.dumps(args, ensure_ascii=False)}}
        for n, (name, args) in enumerate(calls)
    ]  # fmt: skip
    message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
    body = {"id": "c1", "object": "chat.completion", "created": 0, "model": "gpt-test",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 50, "completion_tokens": 12,
                      "total_tokens": 62}}  # fmt: skip
    return ScriptedReply(body=json.dumps(body), content_type="application/json")


# -- the calls ------------------------------------------------------------------------------------


@contextmanager
def _client(server: ScriptedServer, provider: str) -> Iterator[Any]:
    sdk: Any
    if provider == "anthropic":
        http = anthropic.DefaultHttpxClient(verify=TLS)
        sdk = anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="sk-test",
                                  max_retries=0, http_client=http)  # fmt: skip
        mode = "json_object"  # the forced answer tool: the answer is a tool call's arguments
    else:
        sdk = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0,
                            http_client=openai.DefaultHttpxClient(verify=TLS))  # fmt: skip
        mode = "json_schema"
    with sdk:
        yield healjson.wrap(sdk, json_mode=mode)


def ask(server: ScriptedServer, provider: str, *, stream: bool, **extra: Any) -> Any:
    """One healed `Person` call of one try through `provider`'s SDK: its outcome (a stream read
    to its end)."""
    extra.setdefault("policy", READ_TO_END)
    with _client(server, provider) as client:
        if provider == "anthropic":
            create = client.messages.create
            extra.setdefault("max_tokens", 256)
            model = "claude-test"
        else:
            create = client.chat.completions.create
            model = "gpt-test"
        found = create(
            model=model, messages=MESSAGES, response_model=Person, stream=stream, **extra
        )
        if not stream:
            return found
        for _ in found:
            pass
        return found.outcome


def both(provider: str, calls: Calls, size: int = 7, **extra: Any) -> tuple[Any, Any]:
    """The outcomes of the reply unstreamed and streamed (in pieces of `size` characters)."""
    if provider == "anthropic":
        replies = [anthropic_message(calls), anthropic_stream(calls, size)]
    else:
        replies = [chat_completion(calls), chat_stream(calls, size)]
    with ScriptedServer(replies) as server:
        whole = ask(server, provider, stream=False, **extra)
        streamed = ask(server, provider, stream=True, **extra)
    return whole, streamed


# -- defect 1: a call is its identity, not its name ----------------------------------------------


def test_two_identical_answer_tool_calls_stream_as_two_calls() -> None:
    """Two identical calls of the answer tool stream as two calls with their ids, one answer
    flagged as several candidates, never as one text with prose around it."""
    whole, streamed = both("anthropic", [("Person", ANN), ("Person", ANN)])

    assert said(streamed) == said(whole)
    assert isinstance(streamed, Healed)
    assert [c.id for c in streamed.attempts[0].tool_calls] == ["toolu_0", "toolu_1"]
    assert Flag.PROSE_AROUND not in streamed.flags
    assert Flag.SCHEMA_NOT_ENFORCED not in streamed.flags


def test_two_calls_of_a_caller_tool_stream_apart_on_anthropic() -> None:
    """Two calls of one caller tool in an Anthropic stream are two calls, named so in the
    diagnostic, as unstreamed."""
    whole, streamed = both("anthropic", [("lookup", ANN), ("lookup", BOB)], tools=A_TOOLS)

    assert said(streamed) == said(whole)
    assert isinstance(streamed, Degraded)
    assert "`lookup`, `lookup`" in streamed.errors[0].constraint


def test_two_calls_of_a_caller_tool_stream_apart_on_openai_chat() -> None:
    """Two calls of one caller tool in an OpenAI chat stream are two calls, each with its id
    and arguments, as unstreamed."""
    whole, streamed = both("chat", [("lookup", ANN), ("lookup", BOB)], tools=O_TOOLS)

    assert said(streamed) == said(whole)
    assert [c.id for c in streamed.attempts[0].tool_calls] == ["call_0", "call_1"]


def test_pieces_of_several_calls_in_one_chat_delta_stay_apart() -> None:
    """An OpenAI chat delta carrying pieces of two calls adds each to its own call."""
    heads = [
        {"index": n, "id": f"call_{n}", "type": "function",
         "function": {"name": "Person", "arguments": json.dumps(args)}}
        for n, args in enumerate([ANN, ANN])
    ]  # fmt: skip
    lines = [
        {"choices": [{"index": 0, "delta": {"tool_calls": heads}, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]
    top = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "gpt-test"}
    body = "".join(f"data: {json.dumps({**top, **line})}\n\n" for line in lines)
    with ScriptedServer([ScriptedReply(body=body + "data: [DONE]\n\n",
                                       content_type="text/event-stream")]) as server:  # fmt: skip
        streamed = ask(server, "chat", stream=True)

    assert isinstance(streamed, Healed)
    assert streamed.value == Person(**ANN)
    calls = [(c.id, json.loads(c.arguments)) for c in streamed.attempts[0].tool_calls]
    assert calls == [("call_0", ANN), ("call_1", ANN)]


VALUES = st.one_of(
    st.sampled_from([ANN, BOB, {"name": "Ann"}, {"name": "", "age": 3}, {}]),
    st.dictionaries(
        st.sampled_from(["name", "age", "x"]),
        st.one_of(st.integers(-2, 40), st.text(max_size=4), st.booleans(), st.none()),
        max_size=3,
    ),
)
CALLS = st.lists(st.tuples(st.sampled_from(["Person", "lookup"]), VALUES), min_size=1, max_size=3)


@pinned(max_examples=30)
@given(
    provider=st.sampled_from(["anthropic", "chat"]),
    calls=CALLS,
    size=st.integers(1, 12),
)
@example(provider="anthropic", calls=[("Person", ANN), ("Person", BOB)], size=8)
@example(provider="anthropic", calls=[("Person", ANN), ("Person", ANN)], size=3)
@example(provider="chat", calls=[("lookup", ANN), ("lookup", BOB)], size=5)
def test_any_tool_calls_stream_to_the_outcome_of_the_same_reply_unstreamed(
    provider: str, calls: Calls, size: int
) -> None:
    """Any tool calls (names often repeated), streamed in any pieces, reach the outcome of the
    same reply unstreamed: its value or reason, its flags, its calls with ids and arguments."""
    whole, streamed = both(provider, calls, size)

    assert said(streamed) == said(whole)
    assert [args for _, _, args in said(streamed)[-1]] == [args for _, args in calls]


# -- defect 3: a block's start is its first piece -------------------------------------------------


def test_text_carried_by_a_text_blocks_start_is_read() -> None:
    """A text block whose start carries its text is read as the SDK's message reads it."""
    events = [
        {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
         "model": "claude-test", "content": [], "usage": {"input_tokens": 5, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "text", "text": '{"name": "Ann", '}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "text_delta", "text": '"age": 31}'}},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"},
         "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]  # fmt: skip
    with ScriptedServer([sse(events)]) as server:
        outcome = ask(server, "anthropic", stream=True)

    assert isinstance(outcome, Healed)
    assert outcome.value == Person(**ANN)


def test_a_tool_input_carried_by_its_start_is_the_answer() -> None:
    """A `tool_use` block whose start carries its whole input (no deltas) is the answer, as
    unstreamed."""
    block = {"type": "tool_use", "id": "toolu_0", "name": "Person", "input": ANN}
    events = [
        {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
         "model": "claude-test", "content": [], "usage": {"input_tokens": 5, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
         "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]  # fmt: skip
    with ScriptedServer([sse(events)]) as server:
        outcome = ask(server, "anthropic", stream=True)

    assert isinstance(outcome, Healed)
    assert outcome.value == Person(**ANN)
    assert [(c.id, json.loads(c.arguments)) for c in outcome.attempts[0].tool_calls] == [
        ("toolu_0", ANN)
    ]


def test_heal_tools_stream_reads_what_block_starts_carry() -> None:
    """`heal_tools=True` streams keep a text block's start text and a tool input carried by
    its start, as the SDK's own message does."""
    block = {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"name": "Ann"}}
    events = [
        {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant",
         "model": "claude-test", "content": [], "usage": {"input_tokens": 5, "output_tokens": 1}}},
        {"type": "content_block_start", "index": 0,
         "content_block": {"type": "text", "text": "Let me "}},
        {"type": "content_block_delta", "index": 0,
         "delta": {"type": "text_delta", "text": "check."}},
        {"type": "content_block_stop", "index": 0},
        {"type": "content_block_start", "index": 1, "content_block": block},
        {"type": "content_block_stop", "index": 1},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
         "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]  # fmt: skip
    with ScriptedServer([sse(events)]) as server, _client(server, "anthropic") as client:
        stream = client.messages.create(model="claude-test", max_tokens=256, messages=MESSAGES,
                                        tools=A_TOOLS, heal_tools=True, stream=True)  # fmt: skip
        for _ in stream:
            pass
        outcome = stream.outcome

    assert isinstance(outcome, Healed)
    assert outcome.value.text == "Let me check."
    assert [(c.id, c.arguments) for c in outcome.value.calls] == [("toolu_1", {"name": "Ann"})]


# -- defect 4: a stated 0 is a count --------------------------------------------------------------


def test_a_stated_zero_output_count_is_exact_as_unstreamed() -> None:
    """An Anthropic stream whose `message_delta` states `output_tokens: 0` reports 0 exactly,
    as the same reply unstreamed does."""
    with ScriptedServer([anthropic_message([("Person", ANN)], out=0),
                         anthropic_stream([("Person", ANN)], out=0)]) as server:  # fmt: skip
        whole = ask(server, "anthropic", stream=False)
        streamed = ask(server, "anthropic", stream=True)

    counts = [(o.usage.prompt_tokens, o.usage.completion_tokens, o.usage.estimated)
              for o in (whole, streamed)]  # fmt: skip
    assert counts == [(50, 0, False), (50, 0, False)]
