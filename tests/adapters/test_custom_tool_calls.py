"""OpenAI chat's custom tools under `heal_tools=True`: a call of `type: "custom"` is read with
its name and its free-text input kept exactly, judged against the declared custom tool (never
as JSON), returned as a custom call, and sent back as one when a repair asks again for other
calls; streamed, its pieces never join a function call. The real openai SDK over real HTTP
against the scripted server (its raw bodies: the chat route scripts function calls only)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import healjson
from healjson import Degraded, HealedCall, Reply, ToolCall, ToolCalls
from healjson._durable import reply_as_data, reply_from_data
from healjson.testing import ScriptedReply, ScriptedServer
from openai_tools_kit import TRICKY, WAYS, Mode, Search, healed, value
from pinned import pinned

SAID = [{"role": "user", "content": "Patch the file and find red shoes."}]
SHELL = {"type": "custom", "custom": {"name": "shell", "description": "Run a shell command."}}
PATCH = {
    "type": "custom",
    "custom": {
        "name": "patch",
        "format": {"type": "grammar", "grammar": {"syntax": "regex", "definition": ".*"}},
    },
}


def custom(name: str, text: str, call_id: str) -> dict[str, Any]:
    """A custom tool's call in chat's shape."""
    return {"id": call_id, "type": "custom", "custom": {"name": name, "input": text}}


def function(name: str, arguments: str, call_id: str) -> dict[str, Any]:
    """A function call in chat's shape."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def whole(*calls: dict[str, Any], content: str | None = None) -> ScriptedReply:
    """A `chat.completion` of these calls, sent as a raw body."""
    message = {"role": "assistant", "content": content, "tool_calls": list(calls)}
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-test",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    }
    return ScriptedReply(body=json.dumps(body))


def streamed(*calls: dict[str, Any], content: str | None = None, size: int = 3) -> ScriptedReply:
    """The same answer as a chat stream: each call's head (id, type, name), then its input or
    arguments in pieces of `size` characters (a custom call's pieces under `custom.input`, the
    field the SDK's delta type lacks)."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        body = {"id": "x", "object": "chat.completion.chunk", "created": 1, "model": "gpt-test"}
        return f"data: {json.dumps({**body, 'choices': [choice]})}\n\n"

    events = [chunk({"role": "assistant", "content": ""})]
    if content:
        events += [chunk({"content": content[i : i + size]}) for i in range(0, len(content), size)]
    for index, call in enumerate(calls):
        kind = call["type"]
        field, member = (kind, "input") if kind == "custom" else (kind, "arguments")
        text = call[field][member]
        head = {"name": call[field]["name"], member: ""}
        events.append(
            chunk({"tool_calls": [{"index": index, "id": call["id"], "type": kind, field: head}]})
        )
        for at in range(0, len(text), size):
            piece = {"index": index, field: {member: text[at : at + size]}}
            events.append(chunk({"tool_calls": [piece]}))
    text = "".join(events) + chunk({}, "tool_calls") + "data: [DONE]\n\n"
    return ScriptedReply(body=text, content_type="text/event-stream")


def heal(
    server: ScriptedServer, mode: Mode = "sync", *, stream: bool = False, **kwargs: Any
) -> Any:
    """One `heal_tools=True` chat request (the custom shell tool and the search tool); its
    outcome."""
    kwargs.setdefault("tools", [SHELL, Search])
    kwargs.setdefault("messages", SAID)
    return healed(server, "chat", mode, stream=stream, **kwargs)


@pytest.mark.parametrize(("mode", "stream"), WAYS)
def test_a_custom_call_is_healed_as_a_custom_call_with_its_input_as_sent(
    mode: Mode, stream: bool
) -> None:
    """A custom tool's call comes back in one request as a custom call: its id, its name, and
    its input exactly as sent (braces and quotes that are no JSON included), read as no JSON."""
    call = custom("shell", TRICKY, "call_sh")
    reply = streamed(call, content="Running it.") if stream else whole(call, content="Running it.")
    with ScriptedServer([reply]) as server:
        outcome = heal(server, mode, stream=stream)
    answer = value(outcome)
    assert 1 == len(server.requests)
    assert "Running it." == answer.text
    [made] = answer.calls
    assert HealedCall("call_sh", "shell", TRICKY, TRICKY, True, (), "custom") == made
    assert [{"id": "call_sh", "name": "shell", "arguments": TRICKY, "kind": "custom"}] == (
        outcome.to_dict()["attempts"][0]["tool_calls"]
    )
    assert () == outcome.flags


@pytest.mark.parametrize(("mode", "stream"), WAYS)
def test_a_repair_of_a_broken_function_call_sends_the_custom_call_back_as_custom(
    mode: Mode, stream: bool
) -> None:
    """Beside a broken function call, an accepted custom call is sent back by the repair as a
    custom call with its input (answered "accepted"), only the function call is asked again,
    and the healed answer keeps the custom call, its id, place and input, as a custom call."""
    make = streamed if stream else whole
    script = [
        make(
            custom("shell", TRICKY, "call_sh"),
            function("Search", '{"query": "red shoes", "limit": "many"}', "call_se"),
        ),
        make(function("Search", '{"query": "red shoes", "limit": 5}', "call_se2")),
    ]
    with ScriptedServer(script) as server:
        outcome = heal(server, mode, stream=stream)
    answer = value(outcome)
    assert 2 == len(server.requests)
    assert [("call_sh", "shell", "custom"), ("call_se2", "Search", "function")] == [
        (c.id, c.name, c.kind) for c in answer.calls
    ]
    assert TRICKY == answer.calls[0].arguments == answer.calls[0].raw
    assert Search(query="red shoes", limit=5) == answer.calls[1].arguments
    assert ("calls[1]",) == outcome.changed_fields
    messages = (server.requests[1].body or {})["messages"]
    turn = messages[len(SAID)]
    assert custom("shell", TRICKY, "call_sh") == turn["tool_calls"][0]
    assert "function" == turn["tool_calls"][1]["type"]
    answers = {m["tool_call_id"]: m["content"] for m in messages if m["role"] == "tool"}
    assert answers["call_sh"].startswith("Accepted")
    assert answers["call_se"].startswith("Rejected")
    assert "`Search` (call_se)" in messages[-1]["content"]
    assert "shell" not in messages[-1]["content"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_custom_call_to_an_undeclared_tool_is_rejected_and_asked_again(mode: Mode) -> None:
    """A custom call naming no declared tool is rejected as a call to an undeclared tool (sent
    back as a custom call with its input), and the declared custom tool's call that replaces it
    heals."""
    script = [
        whole(custom("bash", "ls -la", "call_a")),
        whole(custom("shell", "ls -la", "call_b")),
    ]
    with ScriptedServer(script) as server:
        outcome = heal(server, mode)
    answer = value(outcome)
    assert 2 == len(server.requests)
    assert [("call_b", "shell", "ls -la", "custom")] == [
        (c.id, c.name, c.arguments, c.kind) for c in answer.calls
    ]
    [problem] = outcome.attempts[0].diagnostics
    assert "must call a declared tool" in problem.constraint
    turn = (server.requests[1].body or {})["messages"][len(SAID)]
    assert [custom("bash", "ls -la", "call_a")] == turn["tool_calls"]


def test_a_custom_call_no_tool_ever_declares_degrades_keeping_its_input() -> None:
    """When the attempts are spent on a custom call to an undeclared tool, `Degraded.partial`
    still holds it as a custom call with its input as sent."""
    script = [whole(custom("bash", TRICKY, "call_a"))] * 2
    with ScriptedServer(script) as server:
        outcome = heal(server, policy=healjson.HealPolicy(max_attempts=2))
    assert isinstance(outcome, Degraded), outcome
    assert isinstance(outcome.partial, ToolCalls)
    [kept] = outcome.partial.calls
    assert ("bash", TRICKY, TRICKY, False, "custom") == (
        kept.name,
        kept.arguments,
        kept.raw,
        kept.ok,
        kept.kind,
    )


def test_a_call_of_the_wrong_kind_is_asked_again_as_its_tools_kind() -> None:
    """A function call to a custom tool (and so never JSON-read as one) is rejected with the
    tool's kind named, and the custom call that replaces it heals."""
    script = [
        whole(function("shell", '{"cmd": "ls"}', "call_a")),
        whole(custom("shell", "ls", "call_b")),
    ]
    with ScriptedServer(script) as server:
        outcome = heal(server)
    answer = value(outcome)
    assert [("call_b", "shell", "ls", "custom")] == [
        (c.id, c.name, c.arguments, c.kind) for c in answer.calls
    ]
    [problem] = outcome.attempts[0].diagnostics
    assert "custom tool" in problem.constraint


def test_a_forced_custom_tool_and_a_grammar_format_are_read() -> None:
    """A `tool_choice` naming a custom tool forces it, the tools go out as the caller wrote
    them, and a custom tool with a grammar `format` takes its input unchecked (the provider's
    to enforce)."""
    choice = {"type": "custom", "custom": {"name": "patch"}}
    script = [whole(function("Search", '{"query": "x", "limit": 1}', "c1"))]
    script.append(whole(custom("patch", "*** Begin Patch", "c2")))
    with ScriptedServer(script) as server:
        outcome = heal(server, tools=[SHELL, PATCH, Search], tool_choice=choice)
    answer = value(outcome)
    assert [("c2", "patch", "custom")] == [(c.id, c.name, c.kind) for c in answer.calls]
    assert [SHELL, PATCH] == (server.requests[0].body or {})["tools"][:2]
    assert "must be a call to `patch`" in outcome.attempts[0].diagnostics[0].constraint


def test_tool_contracts_on_a_custom_tool_are_refused() -> None:
    """A custom tool's input is free text no contract reads: `tool_contracts` naming one is
    refused before any request."""
    with (
        ScriptedServer([]) as server,
        pytest.raises(ValueError, match="custom tool"),
    ):
        heal(server, tool_contracts={"shell": [lambda value: None]})
    assert [] == server.requests


def test_the_record_round_trips_a_custom_call_and_the_trace_names_it() -> None:
    """An outcome's record keeps a custom call's kind (and loads it back), its value's data
    names the kind, and its trace shows custom calls as such (a function call's record is as
    before, with no `kind`)."""
    script = [
        whole(
            custom("shell", "ls", "call_sh"),
            function("Search", '{"query": "x", "limit": "many"}', "call_se"),
        ),
        whole(function("Search", '{"query": "x", "limit": 2}', "call_se2")),
    ]
    earlier = [
        *SAID,
        {"role": "assistant", "content": None, "tool_calls": [custom("shell", "pwd", "c0")]},
        {"role": "tool", "tool_call_id": "c0", "content": "/srv"},
        {"role": "user", "content": "Now list it."},
    ]
    with ScriptedServer(script) as server:
        outcome = heal(server, messages=earlier)
    record = outcome.to_dict()
    first = record["attempts"][0]["tool_calls"]
    assert "custom" == first[0]["kind"]
    assert "kind" not in first[1]
    again = healjson.outcome_from_dict(record)
    assert "custom" == again.attempts[0].tool_calls[0].kind
    assert "custom" == outcome.value.to_dict()["calls"][0]["kind"]
    assert "kind" not in outcome.value.to_dict()["calls"][1]
    trace = outcome.trace()
    assert "**Custom tool call** `shell` (call_sh)" in trace
    assert '- custom tool call `shell` (c0): `"pwd"`' in trace  # the request's earlier turn


def test_a_durable_steps_record_of_a_reply_keeps_a_custom_calls_kind() -> None:
    """A reply kept as a durable step's data (DBOS, Temporal) loads back with its custom call
    still custom, its input exact; a function call's data is as before (three fields)."""
    reply = Reply(
        None,
        "tool_calls",
        tool_calls=(ToolCall("shell", TRICKY, "c1", "custom"), ToolCall("Search", "{}", "c2")),
    )
    data = reply_as_data(reply)
    assert [["shell", TRICKY, "c1", "custom"], ["Search", "{}", "c2"]] == data["reply"][
        "tool_calls"
    ]
    assert "altered" not in data["reply"]
    assert reply.tool_calls == reply_from_data(data).tool_calls


@pinned(max_examples=10)
@given(text=st.text(max_size=80), stream=st.booleans())
@example(text=TRICKY, stream=True)
@example(text="", stream=False)
@example(text='{"not": "json"', stream=True)
def test_any_custom_input_comes_back_byte_identical(text: str, stream: bool) -> None:
    """Whatever the custom call's input (any unicode, braces and quotes, empty), whole or
    streamed in pieces, the healed custom call carries it byte for byte."""
    call = custom("shell", text, "call_x")
    with ScriptedServer([streamed(call, size=2) if stream else whole(call)]) as server:
        outcome = heal(server, stream=stream)
    [made] = value(outcome).calls
    assert ("custom", text.encode(), text.encode()) == (
        made.kind,
        made.arguments.encode(),
        made.raw.encode(),
    )
