"""A streamed answer's tool calls stay apart, as the same reply's unstreamed: each call is kept
with its own arguments, and the answer is the call the whole reply's is (`check.answer_text`:
the answer tool's, else the text beside the calls, else the first call), never every call's
arguments read as one text nor another tool's arguments. Driven through the official `ollama`
SDK over HTTP to the scripted server on 127.0.0.1 (Ollama sends each call whole, several in a
chunk), sync and async.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel

from healjson import Degraded, Healed, HealPolicy
from healjson.testing import ScriptedReply, ScriptedServer
from ollama_kit import chat
from pinned import pinned

MESSAGES = [{"role": "user", "content": "Ann is 31. Extract the person as JSON."}]
ONE_TRY = HealPolicy(max_attempts=1)
EVIL = {"name": "Evil", "age": 1}
ANN = {"name": "Ann", "age": 31}


class Person(BaseModel):
    name: str
    age: int


def ask(server: ScriptedServer, runner: str, *, stream: bool) -> Any:
    """One healed `chat(response_model=Person)` of one try: its outcome."""
    return chat(
        server,
        runner,
        stream,
        model="llama3.2",
        messages=MESSAGES,
        response_model=Person,
        policy=ONE_TRY,
    )


def calls_reply(calls: list[tuple[str, dict[str, Any]]]) -> ScriptedReply:
    """A reply of tool calls only (streamed, the scripted route sends them in one chunk)."""
    return ScriptedReply(
        content=None,
        tool_calls=[
            {"function": {"name": name, "arguments": json.dumps(args)}} for name, args in calls
        ],
    )


def chunk(message: dict[str, Any], *, done: bool = False) -> dict[str, Any]:
    line: dict[str, Any] = {"model": "llama3.2", "created_at": "x", "done": done}
    if done:
        line.update(done_reason="stop", prompt_eval_count=5, eval_count=7)
    return {**line, "message": {"role": "assistant", "content": "", **message}}


def ndjson(*lines: dict[str, Any]) -> ScriptedReply:
    body = "".join(json.dumps(line) + "\n" for line in lines)
    return ScriptedReply(body=body, content_type="application/x-ndjson")


def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"function": {"name": name, "arguments": args}}


def kept(attempt: Any) -> list[tuple[str, Any]]:
    """The tool calls an attempt kept: each name with its arguments read."""
    return [(call.name, json.loads(call.arguments)) for call in attempt.tool_calls]


def verdict(outcome: Any) -> tuple[str, Any]:
    assert isinstance(outcome, Healed | Degraded)
    return type(outcome).__name__, outcome.value if isinstance(outcome, Healed) else None


@pytest.fixture(params=["sync", "async"])
def runner(request: pytest.FixtureRequest) -> str:
    return request.param  # type: ignore[no-any-return]


ARGS = st.sampled_from([EVIL, ANN, {"foo": 1}, {"name": "Ann"}, {}])
CALLS = st.lists(st.tuples(st.sampled_from(["Person", "other"]), ARGS), min_size=1, max_size=3)


@pinned(max_examples=20)
@given(calls=CALLS)
@example(calls=[("other", EVIL), ("Person", {"foo": 1})])
@example(calls=[("other", {"x": 1}), ("Person", ANN)])
def test_streamed_tool_calls_read_as_the_whole_reply(
    calls: list[tuple[str, dict[str, Any]]],
) -> None:
    """A reply of tool calls heals (or degrades) streamed exactly as it does unstreamed: never
    with another tool's arguments, never with every call's arguments read as one answer."""
    with ScriptedServer([calls_reply(calls), calls_reply(calls)]) as server:
        whole = ask(server, "sync", stream=False)
        streamed = ask(server, "sync", stream=True)

    assert verdict(whole) == verdict(streamed)
    assert (
        kept(whole.attempts[0])
        == kept(streamed.attempts[0])
        == [(name, args) for name, args in calls]
    )


def test_a_call_to_another_tool_is_not_healed_as_the_answer(runner: str) -> None:
    """A stream whose answer tool's call breaks the schema degrades, even when another tool's
    call happens to fit it (its arguments are never the answer)."""
    with ScriptedServer([calls_reply([("other", EVIL), ("Person", {"foo": 1})])]) as server:
        outcome = ask(server, runner, stream=True)

    assert isinstance(outcome, Degraded)
    assert '{"foo": 1}' == outcome.attempts[0].raw_text


def test_calls_in_separate_chunks_are_not_joined(runner: str) -> None:
    """Calls streamed in chunks of their own are not read as one call: the answer tool's call
    is the answer, its arguments as sent."""
    stream = ndjson(
        chunk({"tool_calls": [call("other", {"x": 1})]}),
        chunk({"tool_calls": [call("Person", ANN)]}),
        chunk({}, done=True),
    )
    with ScriptedServer([stream]) as server:
        outcome = ask(server, runner, stream=True)

    assert isinstance(outcome, Healed)
    assert Person(**ANN) == outcome.value
    assert [("other", {"x": 1}), ("Person", ANN)] == kept(outcome.attempts[0])


def test_calls_of_a_stream_without_its_last_chunk_are_handed_on(runner: str) -> None:
    """A stream that ends without `done: true`: with no answer tool called, the first call's
    arguments are judged as the answer, never the calls' arguments joined; both are kept."""
    stream = ndjson(chunk({"tool_calls": [call("lookup", {"q": 1}), call("other", ANN)]}))
    with ScriptedServer([stream]) as server:
        outcome = ask(server, runner, stream=True)

    assert isinstance(outcome, Degraded)
    assert '{"q": 1}' == outcome.attempts[0].raw_text
    assert [("lookup", {"q": 1}), ("other", ANN)] == kept(outcome.attempts[0])


def test_text_streamed_beside_calls_stays_the_answer(runner: str) -> None:
    """Text streamed beside calls to other tools is the answer, as unstreamed; the calls are
    kept on the attempt, each with its own arguments."""
    stream = ndjson(
        chunk({"tool_calls": [call("other", EVIL), call("lookup", {"q": 1})]}),
        chunk({"content": json.dumps(ANN)}),
        chunk({}, done=True),
    )
    with ScriptedServer([stream]) as server:
        outcome = ask(server, runner, stream=True)

    assert isinstance(outcome, Healed)
    assert Person(**ANN) == outcome.value
    assert [("other", EVIL), ("lookup", {"q": 1})] == kept(outcome.attempts[0])
