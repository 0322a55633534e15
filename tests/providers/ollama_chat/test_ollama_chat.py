"""`healjson.wrap(ollama.Client())` / `wrap(ollama.AsyncClient())`: `chat(response_model=M)`.

Each test drives the official `ollama` SDK over HTTP to the scripted server on 127.0.0.1 (its
`/api/chat` route, streamed as JSON lines or not), sync and async. The SDK does not retry, so
the server's request count is exactly healjson's model calls.
"""

from __future__ import annotations

import json
from typing import Any

import ollama
import pytest
from pydantic import BaseModel

import healjson
from healjson import Degraded, Flag, Healed, HealPolicy, Reason
from healjson.testing import ScriptedReply, ScriptedServer
from ollama_kit import chat
from sdk_calls import TLS

GOOD = '{"name": "Ann", "age": 31}'
MESSAGES = [{"role": "user", "content": "Ann is 31. Extract the person as JSON."}]


class Person(BaseModel):
    name: str
    age: int


class Search(BaseModel):
    """Search the catalogue."""

    query: str
    limit: int


def lookup(sku: str, count: int = 1) -> str:
    """Look up a product.

    Args:
      sku: the product code
      count: how many
    """
    return sku * count


@pytest.fixture(params=["sync", "async"])
def runner(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(params=[False, True], ids=["whole", "streamed"])
def streamed(request: pytest.FixtureRequest) -> bool:
    return request.param  # type: ignore[no-any-return]


def ask(
    server: ScriptedServer,
    runner: str = "sync",
    streamed: bool = False,
    *,
    json_mode: str = "json_schema",
    **kwargs: Any,
) -> Any:
    """One healed `chat` through a fresh client (closed after): its outcome."""
    kwargs.setdefault("model", "llama3.2")
    kwargs.setdefault("messages", MESSAGES)
    if "tools" not in kwargs:
        kwargs.setdefault("response_model", Person)
    return chat(server, runner, streamed, json_mode=json_mode, **kwargs)


def body_of(server: ScriptedServer, index: int = 0) -> dict[str, Any]:
    return server.requests[index].body or {}


def test_structured_outputs_send_the_schema_as_format(
    scripted_server: ScriptedServer, runner: str, streamed: bool
) -> None:
    """The first tier asks Ollama to enforce the JSON schema (`format=<schema>`); the answer
    heals into the model, streamed or not, sync or async."""
    scripted_server.push(GOOD)

    outcome = ask(scripted_server, runner, streamed)

    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value
    body = body_of(scripted_server)
    assert Person.model_json_schema() == body["format"]
    assert streamed == body["stream"]


def test_a_broken_answer_is_repaired_in_a_second_call(
    scripted_server: ScriptedServer, runner: str, streamed: bool
) -> None:
    """An answer that breaks the schema gets one repair request naming the broken field;
    the repaired answer heals."""
    scripted_server.extend(['{"name": "Ann", "age": "old"}', GOOD])

    outcome = ask(scripted_server, runner, streamed)

    assert isinstance(outcome, Healed)
    assert 2 == len(outcome.attempts)
    repair = body_of(scripted_server, 1)["messages"]
    assert "age" in repair[-1]["content"]
    assert '{"name": "Ann", "age": "old"}' == repair[-2]["content"]


def test_a_fenced_answer_heals_locally_and_is_flagged_unenforced(
    scripted_server: ScriptedServer, runner: str
) -> None:
    """Prose and a fence around the JSON are removed without a second call; an answer the
    schema format should have prevented says so (`schema_not_enforced`)."""
    scripted_server.push(f"Sure!\n```json\n{GOOD}\n```")

    outcome = ask(scripted_server, runner)

    assert isinstance(outcome, Healed)
    assert 1 == len(scripted_server.requests)
    assert {"code_fence", "prose_around", "schema_not_enforced"} <= set(outcome.flags)


def test_a_refused_format_steps_down_to_json_mode(
    scripted_server: ScriptedServer, runner: str
) -> None:
    """An HTTP 400 naming the format is answered by the next tier within the same call
    (`format="json"` and the schema in the prompt); the client remembers it."""
    refusal = ScriptedReply(status=400, content="invalid format: json schema not supported")
    scripted_server.extend([refusal, GOOD])

    outcome = ask(scripted_server, runner)

    assert isinstance(outcome, Healed)
    assert 1 == len(outcome.attempts)
    assert "json" == body_of(scripted_server, 1)["format"]
    assert "JSON schema" in body_of(scripted_server, 1)["messages"][0]["content"]


def test_the_callers_own_format_is_sent_as_given_and_never_stepped_down(
    scripted_server: ScriptedServer, runner: str, streamed: bool
) -> None:
    """A call that names its own `format` gets no tier of healjson's: the format goes as the
    caller wrote it, its answer is healed, and a 400 naming it is the provider's error (no
    weaker tier is tried for a format healjson did not choose)."""
    refused = ScriptedReply.error(400, "invalid format: json schema not supported")
    scripted_server.extend(["Here: " + GOOD, refused])

    healed = ask(scripted_server, runner, streamed, format="json")
    failed = ask(scripted_server, runner, streamed, format="json")

    assert isinstance(healed, Healed)
    assert Person(name="Ann", age=31) == healed.value
    assert isinstance(failed, Degraded)
    assert Reason.API_ERROR == failed.reason
    assert ["json", "json"] == [body_of(scripted_server, i)["format"] for i in range(2)]


def test_another_400_degrades_with_the_providers_message(
    scripted_server: ScriptedServer, runner: str
) -> None:
    """An HTTP 400 that names no tier is the provider's answer: the run degrades with
    `api_error` and Ollama's message, never an exception."""
    scripted_server.push(ScriptedReply(status=400, content="model 'nope' not found"))

    outcome = ask(scripted_server, runner, model="nope")

    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason
    assert 1 == len(scripted_server.requests)
    assert "not found" in outcome.errors[0].value


def test_weaker_tiers_ask_in_the_prompt(scripted_server: ScriptedServer) -> None:
    """`json_mode="json_object"` sends `format="json"`, `"prompt"` no format; both carry the
    schema in a system message."""
    scripted_server.extend([GOOD, GOOD])

    assert isinstance(ask(scripted_server, json_mode="json_object"), Healed)
    assert isinstance(ask(scripted_server, json_mode="prompt"), Healed)

    assert "json" == body_of(scripted_server, 0)["format"]
    assert "format" not in body_of(scripted_server, 1)
    assert "system" == body_of(scripted_server, 1)["messages"][0]["role"]


def test_a_cut_answer_asks_for_more_tokens(scripted_server: ScriptedServer) -> None:
    """`done_reason: "length"` is a token cut: the next request raises `options.num_predict`."""
    scripted_server.extend([ScriptedReply(content='{"name": "An', finish_reason="length"), GOOD])
    policy = HealPolicy(on_truncation="raise_max_tokens")

    outcome = ask(scripted_server, options={"num_predict": 10}, policy=policy)

    assert isinstance(outcome, Healed)
    assert 10 < body_of(scripted_server, 1)["options"]["num_predict"]


def test_usage_and_thinking_are_read(scripted_server: ScriptedServer, streamed: bool) -> None:
    """`prompt_eval_count` / `eval_count` are the attempt's usage; `thinking` its reasoning."""
    usage = {"prompt_tokens": 12, "completion_tokens": 7}
    scripted_server.push(ScriptedReply(content=GOOD, reasoning="Ann, 31.", usage=usage))

    outcome = ask(scripted_server, streamed=streamed, think=True)

    assert isinstance(outcome, Healed)
    assert (12, 7) == (outcome.usage.prompt_tokens, outcome.usage.completion_tokens)
    assert "Ann, 31." == outcome.attempts[0].reasoning
    assert Flag.REASONING_SET_ASIDE in outcome.flags


def test_without_response_model_the_call_is_the_sdks(scripted_server: ScriptedServer) -> None:
    """No `response_model`: `chat` is the SDK's own call, its `ChatResponse` unchanged."""
    scripted_server.push("hello")
    raw = ollama.Client(host=scripted_server.ollama_host, verify=TLS)
    try:
        answer = healjson.wrap(raw).chat(model="llama3.2", messages=MESSAGES)
    finally:
        raw.close()

    assert isinstance(answer, ollama.ChatResponse)
    assert "hello" == answer.message.content
    assert "format" not in body_of(scripted_server)


def _call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def test_tool_calls_are_healed(
    scripted_server: ScriptedServer, runner: str, streamed: bool
) -> None:
    """`heal_tools=True`: a call whose arguments break its tool's schema is asked again alone
    (its rejection answered by a `tool` turn naming the tool); the repaired call validates."""
    scripted_server.extend(
        [
            ScriptedReply(content=None, tool_calls=[_call("Search", {"query": "pens"})]),
            ScriptedReply(
                content=None, tool_calls=[_call("Search", {"query": "pens", "limit": 3})]
            ),
        ]
    )

    outcome = ask(scripted_server, runner, streamed, tools=[Search], heal_tools=True)

    assert isinstance(outcome, Healed)
    [call] = outcome.value.calls
    assert Search(query="pens", limit=3) == call.arguments
    repair = body_of(scripted_server, 1)["messages"]
    assert {"role": "tool", "tool_name": "Search"} == {
        key: repair[2][key] for key in ("role", "tool_name")
    }
    assert {"query": "pens"} == repair[1]["tool_calls"][0]["function"]["arguments"]
    assert "function" == body_of(scripted_server)["tools"][0]["type"]


def test_a_python_function_tool_is_checked_against_its_signature(
    scripted_server: ScriptedServer,
) -> None:
    """A Python function as a tool (the SDK writes its schema) has its calls validated
    against its parameters; an argument of the wrong type is coerced locally when it can be."""
    scripted_server.push(ScriptedReply(content=None, tool_calls=[_call("lookup", {"sku": "A1"})]))

    outcome = ask(scripted_server, tools=[lookup], heal_tools=True)

    assert isinstance(outcome, Healed)
    [call] = outcome.value.calls
    assert ("A1", 1) == (call.arguments.sku, call.arguments.count)
    assert "lookup" == body_of(scripted_server)["tools"][0]["function"]["name"]


def test_an_in_stream_error_degrades(scripted_server: ScriptedServer, runner: str) -> None:
    """An `{"error": ...}` line part-way through a stream is the provider's failure."""
    scripted_server.push(ScriptedReply(content=GOOD, stream_error_after_chars=5))

    outcome = ask(scripted_server, runner, streamed=True, policy=HealPolicy(max_attempts=1))

    assert isinstance(outcome, Degraded)
    assert Reason.API_ERROR == outcome.reason


def test_replies_and_chunks_as_dicts_are_read() -> None:
    """Ollama's JSON as data (a response, a streamed chunk, the last chunk) reads as the SDK's
    objects do: content, thinking, calls with ids by position, finish and usage."""
    from healjson._core.wire.delta import read_chunk
    from healjson._core.wire.reply import to_reply

    reply = to_reply(
        {
            "model": "m",
            "done": True,
            "done_reason": "length",
            "prompt_eval_count": 3,
            "eval_count": 4,
            "message": {
                "role": "assistant",
                "content": "",
                "thinking": "hmm",
                "tool_calls": [{"function": {"name": "f", "arguments": {"a": 1}}}],
            },
        }
    )
    assert (None, "length", "hmm", 7) == (
        reply.content,
        reply.finish_reason,
        reply.reasoning,
        reply.usage.total_tokens if reply.usage else None,
    )
    assert [("f", '{"a": 1}', "call_0")] == [(c.name, c.arguments, c.id) for c in reply.tool_calls]
    piece = read_chunk({"model": "m", "done": False, "message": {"content": "{", "role": "x"}})
    assert ("{", None, None) == (piece.text, piece.finish_reason, piece.usage)
    last = read_chunk({"model": "m", "done": True, "done_reason": "stop", "eval_count": 2,
                       "message": {"role": "assistant", "content": ""}})  # fmt: skip
    assert ("stop", 2) == (last.finish_reason, last.usage.completion_tokens if last.usage else 0)


def test_the_sdks_tool_object_is_read(scripted_server: ScriptedServer) -> None:
    """An `ollama.Tool` is read as its dict (its parameters the schema its calls must fit)."""
    tool = ollama.Tool(
        function=ollama.Tool.Function(
            name="weather",
            parameters=ollama.Tool.Function.Parameters(
                required=["city"],
                properties={"city": ollama.Tool.Function.Parameters.Property(type="string")},
            ),
        )
    )
    scripted_server.extend(
        [
            ScriptedReply(content=None, tool_calls=[_call("weather", {"town": "Oslo"})]),
            ScriptedReply(content=None, tool_calls=[_call("weather", {"city": "Oslo"})]),
        ]
    )

    outcome = ask(scripted_server, tools=[tool], heal_tools=True)

    assert isinstance(outcome, Healed)
    assert {"city": "Oslo"} == outcome.value.calls[0].arguments
    assert 2 == len(scripted_server.requests)


def test_configuration_mistakes_raise_at_once(scripted_server: ScriptedServer) -> None:
    """Positional arguments or no `messages` in a healing call, `tool_contracts` without
    `heal_tools`, and a function tool without a name are refused before any request."""
    raw = ollama.Client(host=scripted_server.ollama_host, verify=TLS)
    try:
        chat = healjson.wrap(raw).chat
        with pytest.raises(TypeError, match="keyword arguments"):
            chat("m", MESSAGES, response_model=Person)
        with pytest.raises(TypeError, match="messages"):
            chat(model="m", response_model=Person)
        with pytest.raises(TypeError, match="heal_tools=True"):
            chat(model="m", messages=MESSAGES, tools=[Search], tool_contracts={})
        with pytest.raises(ValueError, match="a name"):
            chat(model="m", messages=MESSAGES, tools=[{"function": {}}], heal_tools=True)
        with pytest.raises(ValueError, match="json_mode"):
            healjson.wrap(raw, json_mode="structured_outputs")
    finally:
        raw.close()
    assert [] == scripted_server.requests
