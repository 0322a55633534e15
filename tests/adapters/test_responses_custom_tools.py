"""The Responses API's custom tools under `heal_tools=True`: a `custom_tool_call` output item is
read as a call of kind `custom`, its free-text input kept exactly (never read as JSON), judged
against the declared custom tool (flat: `{"type": "custom", "name"}`), returned as a custom
call, and sent back as a `custom_tool_call` item (answered by a `custom_tool_call_output`) when
a repair asks again for other calls; streamed, the whole call is read at its item's
`response.output_item.done` and its input deltas never join a function call's arguments. The
real openai SDK over real HTTP against the scripted server (raw bodies: the Responses route
scripts function calls only)."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import healjson
from healjson import HealedCall
from healjson.testing import ScriptedReply, ScriptedServer
from openai_tools_kit import TRICKY, WAYS, Mode, Search, healed, value
from pinned import pinned

ASKED = "Patch the file and find red shoes."
SHELL = {"type": "custom", "name": "shell", "description": "Run a shell command."}
PATCH = {
    "type": "custom",
    "name": "patch",
    "format": {"type": "grammar", "syntax": "regex", "definition": ".*"},
}


def custom(name: str, text: str, call_id: str) -> dict[str, Any]:
    """A custom tool's call as a Responses output item."""
    return {
        "type": "custom_tool_call",
        "id": f"ctc_{call_id}",
        "call_id": call_id,
        "name": name,
        "input": text,
    }


def function(name: str, arguments: str, call_id: str) -> dict[str, Any]:
    """A function call as a Responses output item."""
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def message(text: str) -> dict[str, Any]:
    """An assistant message item of one `output_text` part."""
    part = {"type": "output_text", "text": text, "annotations": []}
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [part],
    }


def response(*items: dict[str, Any], status: str = "completed") -> dict[str, Any]:
    """A `response` holding these output items."""
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "gpt-test",
        "status": status,
        "output": list(items),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 10,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 20,
        },
    }


def whole(*items: dict[str, Any]) -> ScriptedReply:
    """The response, sent as a raw JSON body."""
    return ScriptedReply(body=json.dumps(response(*items)))


def streamed(*items: dict[str, Any], size: int = 3) -> ScriptedReply:
    """The same answer as the API's typed events: per item, added (empty), its deltas (a custom
    call's input in `response.custom_tool_call_input.delta` pieces of `size` characters), its
    done event, and done (whole); the final `response.completed` holds the whole response."""
    events: list[dict[str, Any]] = [{"type": "response.created", "response": response()}]
    for index, item in enumerate(items):
        where: dict[str, Any] = {"item_id": item["id"], "output_index": index}
        kind = item["type"]
        if kind == "message":
            text, member, event = item["content"][0]["text"], "text", "response.output_text"
            empty = {**item, "content": [], "status": "in_progress"}
            where |= {"content_index": 0, "logprobs": []}
        else:
            member, event = (
                ("input", "response.custom_tool_call_input")
                if kind == "custom_tool_call"
                else ("arguments", "response.function_call_arguments")
            )
            text, empty = item[member], {**item, member: ""}
        added = {"type": "response.output_item.added", "output_index": index, "item": empty}
        events.append(added)
        events += [
            {"type": f"{event}.delta", **where, "delta": text[at : at + size]}
            for at in range(0, len(text), size)
        ]
        events.append({"type": f"{event}.done", **where, member: text})
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": response(*items)})
    body = "".join(
        f"event: {e['type']}\ndata: {json.dumps({**e, 'sequence_number': n})}\n\n"
        for n, e in enumerate(events)
    )
    return ScriptedReply(body=body, content_type="text/event-stream")


def heal(
    server: ScriptedServer, mode: Mode = "sync", *, stream: bool = False, **kwargs: Any
) -> Any:
    """One `heal_tools=True` responses request (the custom shell tool and the search tool); its
    outcome."""
    kwargs.setdefault("tools", [SHELL, Search])
    kwargs.setdefault("input", ASKED)
    return healed(server, "responses", mode, stream=stream, **kwargs)


def sent_input(server: ScriptedServer, number: int) -> list[dict[str, Any]]:
    """The `input` items of request `number` as the scripted server received them."""
    found = (server.requests[number].body or {})["input"]
    assert isinstance(found, list)
    return found


@pytest.mark.parametrize(("mode", "stream"), WAYS)
def test_a_custom_tool_call_is_healed_as_a_custom_call_with_its_input_as_sent(
    mode: Mode, stream: bool
) -> None:
    """A `custom_tool_call` item comes back in one request as a custom call with its call id,
    name and input exactly as sent (braces and quotes that are no JSON included)."""
    make = streamed if stream else whole
    with ScriptedServer([make(message("Running it."), custom("shell", TRICKY, "call_sh"))]) as s:
        outcome = heal(s, mode, stream=stream)
    answer = value(outcome)
    assert 1 == len(s.requests)
    assert "Running it." == answer.text
    assert (HealedCall("call_sh", "shell", TRICKY, TRICKY, True, (), "custom"),) == answer.calls
    assert [{"id": "call_sh", "name": "shell", "arguments": TRICKY, "kind": "custom"}] == (
        outcome.to_dict()["attempts"][0]["tool_calls"]
    )
    assert [SHELL] == (s.requests[0].body or {})["tools"][:1]  # sent as the caller wrote it


@pytest.mark.parametrize(("mode", "stream"), WAYS)
def test_a_repair_of_a_broken_function_call_sends_the_custom_call_back_as_custom(
    mode: Mode, stream: bool
) -> None:
    """Beside a broken function call, the accepted custom call goes back in the repair's input
    as a `custom_tool_call` item with its input (answered by a `custom_tool_call_output`), only
    the function call is asked again, and the healed answer keeps the custom call as it was."""
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
    items = sent_input(server, 1)
    assert {"role": "user", "content": ASKED} == items[0]
    sent_back = {"type": "custom_tool_call", "call_id": "call_sh", "name": "shell"}
    assert {**sent_back, "input": TRICKY} == items[1]
    assert ("function_call", "call_se", "Search") == (
        items[2]["type"],
        items[2]["call_id"],
        items[2]["name"],
    )
    outputs = {item["call_id"]: item for item in items if item.get("type", "").endswith("_output")}
    assert "custom_tool_call_output" == outputs["call_sh"]["type"]
    assert outputs["call_sh"]["output"].startswith("Accepted")
    assert "function_call_output" == outputs["call_se"]["type"]
    assert outputs["call_se"]["output"].startswith("Rejected")
    assert "`Search` (call_se)" in items[-1]["content"]


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_custom_call_to_an_undeclared_tool_is_rejected_and_asked_again(mode: Mode) -> None:
    """A custom call naming no declared tool is rejected (sent back as a `custom_tool_call`
    item with its input), and the declared custom tool's call that replaces it heals."""
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
    items = sent_input(server, 1)
    sent_back = {"type": "custom_tool_call", "call_id": "call_a", "name": "bash"}
    assert {**sent_back, "input": "ls -la"} == items[1]
    assert "custom_tool_call_output" == items[2]["type"]


def test_a_function_call_to_a_custom_tool_is_asked_again_as_its_kind() -> None:
    """A function call naming a custom tool (so never JSON-read as one) is rejected with the
    tool's kind named, and the custom call that replaces it heals."""
    script = [
        whole(function("shell", '{"cmd": "ls"}', "call_a")),
        whole(custom("shell", "ls", "call_b")),
    ]
    with ScriptedServer(script) as server:
        outcome = heal(server)
    assert [("call_b", "shell", "ls", "custom")] == [
        (c.id, c.name, c.arguments, c.kind) for c in value(outcome).calls
    ]
    assert "custom tool" in outcome.attempts[0].diagnostics[0].constraint


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_forced_custom_tool_is_kept_to(stream: bool) -> None:
    """A Responses `tool_choice` of `{"type": "custom", "name"}` forces that custom tool: a call
    of another tool is asked again as a call to it, and its call heals."""
    make = streamed if stream else whole
    choice = {"type": "custom", "name": "patch"}
    script = [
        make(function("Search", '{"query": "x", "limit": 1}', "c1")),
        make(custom("patch", "*** Begin Patch", "c2")),
    ]
    with ScriptedServer(script) as server:
        outcome = heal(server, stream=stream, tools=[SHELL, PATCH, Search], tool_choice=choice)
    answer = value(outcome)
    assert [("c2", "patch", "*** Begin Patch", "custom")] == [
        (c.id, c.name, c.arguments, c.kind) for c in answer.calls
    ]
    assert "must be a call to `patch`" in outcome.attempts[0].diagnostics[0].constraint
    assert [SHELL, PATCH] == (server.requests[0].body or {})["tools"][:2]
    assert choice == (server.requests[1].body or {})["tool_choice"]


def test_a_forced_custom_tool_never_called_is_asked_for_as_free_text() -> None:
    """When a forced custom tool is not called at all, the repair asks for its input as free
    text, never for arguments as a JSON object."""
    choice = {"type": "custom", "name": "patch"}
    script = [whole(message("I would rather not.")), whole(custom("patch", "diff", "c1"))]
    with ScriptedServer(script) as server:
        outcome = heal(server, tools=[PATCH, Search], tool_choice=choice)
    assert [("patch", "diff", "custom")] == [
        (c.name, c.arguments, c.kind) for c in value(outcome).calls
    ]
    asked = sent_input(server, 1)[-1]["content"]
    assert "requires a call to the tool `patch`" in asked
    assert "free text" in asked
    assert "JSON object" not in asked


def test_a_required_call_never_made_names_both_kinds_of_input() -> None:
    """`tool_choice="required"` over a custom tool and a function, answered by no call: the
    repair says how each kind's call carries its input (free text, a JSON object)."""
    script = [whole(message("Nothing to do.")), whole(custom("shell", "true", "c1"))]
    with ScriptedServer(script) as server:
        outcome = heal(server, tool_choice="required")
    assert "custom" == value(outcome).calls[0].kind
    asked = sent_input(server, 1)[-1]["content"]
    assert "a custom tool's whole input as free text" in asked
    assert "a function's arguments as a JSON object" in asked


def test_an_outcome_record_keeps_the_repairs_custom_calls_and_tools() -> None:
    """An outcome's record keeps what a repair knew of custom calls and tools (a sent-back
    call's kind, the declared custom tools): loaded back, the repair renders the same."""
    choice = {"type": "custom", "name": "patch"}
    script = [whole(message("No.")), whole(custom("patch", "diff", "c1"))]
    with ScriptedServer(script) as server:
        forced = heal(server, tools=[PATCH, Search], tool_choice=choice)
    script = [
        whole(custom("shell", "ls", "c1"), function("Search", '{"query": "x"}', "c2")),
        whole(function("Search", '{"query": "x", "limit": 1}', "c3")),
    ]
    with ScriptedServer(script) as server:
        mixed = heal(server)
    for outcome in (forced, mixed):
        prompt = outcome.attempts[1].prompt  # the repair the second attempt was made with
        again = healjson.outcome_from_dict(outcome.to_dict()).attempts[1].prompt
        assert prompt is not None
        assert again is not None
        assert prompt.calls is not None
        assert prompt.calls == again.calls
        assert again.calls is not None
        assert prompt.calls.render() == again.calls.render()
    assert ("patch",) == forced.attempts[1].prompt.calls.custom
    assert "custom" == mixed.attempts[1].prompt.calls.calls[0].kind


def test_a_custom_call_in_a_structured_answer_stream_stays_apart() -> None:
    """In a streamed structured answer (`response_model=`) beside the caller's tools, a custom
    call is read whole at its item's end, kept as a custom call with its id and input exactly,
    and its input never joins the function call streamed after it, which keeps its own id."""
    script = [
        streamed(
            message('{"query": "red shoes", "limit": 5}'),
            custom("shell", TRICKY, "call_sh"),
            function("shell", '{"x": 1}', "call_fn"),
            size=2,
        )
    ]
    with (
        ScriptedServer(script) as server,
        openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk,
    ):
        made = healjson.wrap(sdk).responses.create(
            model="gpt-test", input=ASKED, tools=[SHELL], response_model=Search, stream=True
        )
        list(made)
        outcome = made.outcome
    assert Search(query="red shoes", limit=5) == outcome.value
    calls = outcome.attempts[0].tool_calls
    assert [
        ("shell", TRICKY, "call_sh", "custom"),
        ("shell", '{"x": 1}', "call_fn", "function"),
    ] == [(c.name, c.arguments, c.id, c.kind) for c in calls]


@pinned(max_examples=10)
@given(text=st.text(max_size=80), stream=st.booleans())
@example(text=TRICKY, stream=True)
@example(text="", stream=False)
@example(text="", stream=True)
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
