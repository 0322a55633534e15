"""A Responses API stream and the same reply unstreamed reach the same outcome, whatever its calls.

A function call's pieces in a Responses stream carry the identity of their call (the event's
`output_index`; its `response.output_item.added` the item's `call_id` too), so two calls of
one tool stay two calls, each with its id and its own arguments (`Delta.tool_index`), on the
JSON-answer path (`responses.create(..., response_model=M, stream=True)`). The real openai SDK
over HTTP against `ScriptedServer` on loopback, with hand-written SSE bodies.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

import openai
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel, Field

import healjson
from healjson import HealPolicy
from healjson.testing import ScriptedReply, ScriptedServer
from outcomes import said
from pinned import pinned
from sdk_calls import TLS

INPUT = [{"role": "user", "content": "Ann is 31. Extract the person as JSON."}]
READ_TO_END = HealPolicy(max_attempts=1, stream_abort=False)
ANN = {"name": "Ann", "age": 31}
BOB = {"name": "Bob", "age": 5}
LOOKUP = {"type": "object", "properties": {"name": {"type": "string"}}}
TOOLS = [{"type": "function", "name": "lookup", "parameters": LOOKUP}]

Calls = list[tuple[str, dict[str, Any]]]


class Person(BaseModel):
    name: str = Field(min_length=1)
    age: int = Field(ge=0)


def _item(n: int, name: str, arguments: str, status: str = "completed") -> dict[str, Any]:
    return {"id": f"fc_{n}", "type": "function_call", "status": status, "call_id": f"call_{n}",
            "name": name, "arguments": arguments}  # fmt: skip


def _response(output: list[dict[str, Any]], status: str) -> dict[str, Any]:
    return {"id": "resp_1", "object": "response", "created_at": 0, "model": "gpt-test",
            "status": status, "output": output, "parallel_tool_calls": True, "tool_choice": "auto",
            "tools": [], "usage": {"input_tokens": 50, "output_tokens": 12, "total_tokens": 62,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0}}}  # fmt: skip


def whole(calls: Calls) -> ScriptedReply:
    """`calls` as one Responses body, each a `function_call` item (call id `call_<n>`)."""
    items = [_item(n, name, json.dumps(args)) for n, (name, args) in enumerate(calls)]
    return ScriptedReply(body=json.dumps(_response(items, "completed")),
                         content_type="application/json")  # fmt: skip


def streamed(calls: Calls, cuts: list[list[int]] | None = None) -> ScriptedReply:
    """`calls` as a Responses stream: each item added (empty), its arguments in deltas cut at
    `cuts[n]` (default: pieces of 5 characters) under its `output_index` and `item_id`, done."""
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": _response([], "in_progress")}
    ]
    for n, (name, args) in enumerate(calls):
        text = json.dumps(args)
        at = sorted({0, len(text), *(cuts[n] if cuts else range(0, len(text), 5))})
        where = {"output_index": n, "item_id": f"fc_{n}"}
        events.append({"type": "response.output_item.added", "output_index": n,
                       "item": _item(n, name, "", "in_progress")})  # fmt: skip
        events += [
            {"type": "response.function_call_arguments.delta", **where, "delta": text[a:b]}
            for a, b in itertools.pairwise(at)
        ]
        events += [
            {"type": "response.function_call_arguments.done", **where, "arguments": text},
            {"type": "response.output_item.done", "output_index": n,
             "item": _item(n, name, text)},
        ]  # fmt: skip
    items = [_item(n, name, json.dumps(args)) for n, (name, args) in enumerate(calls)]
    events.append({"type": "response.completed", "response": _response(items, "completed")})
    body = "".join(
        f"event: {e['type']}\ndata: {json.dumps({**e, 'sequence_number': i})}\n\n"
        for i, e in enumerate(events)
    )
    return ScriptedReply(body=body, content_type="text/event-stream")


def ask(server: ScriptedServer, *, stream: bool, **extra: Any) -> Any:
    """One healed `Person` call of one try on the Responses API: its outcome (a stream read to
    its end)."""
    sdk = openai.OpenAI(base_url=server.base_url, api_key="sk-test", max_retries=0,
                        http_client=openai.DefaultHttpxClient(verify=TLS))  # fmt: skip
    with sdk:
        client = healjson.wrap(sdk)
        found = client.responses.create(model="gpt-test", input=INPUT, response_model=Person,
                                        stream=stream, policy=READ_TO_END, **extra)  # fmt: skip
        if not stream:
            return found
        for _ in found:
            pass
        return found.outcome


def both(calls: Calls, cuts: list[list[int]] | None = None, **extra: Any) -> tuple[Any, Any]:
    """The outcomes of the reply unstreamed and streamed (its deltas cut at `cuts`)."""
    with ScriptedServer([whole(calls), streamed(calls, cuts)]) as server:
        unstreamed = ask(server, stream=False, **extra)
        stream = ask(server, stream=True, **extra)
    return unstreamed, stream


def test_two_calls_of_a_caller_tool_stream_apart() -> None:
    """Two calls of one caller tool in a Responses stream stay two calls, each with its id and
    arguments, as unstreamed."""
    unstreamed, stream = both([("lookup", ANN), ("lookup", BOB)], tools=TOOLS)

    assert said(stream) == said(unstreamed)
    calls = [(c.id, json.loads(c.arguments)) for c in stream.attempts[0].tool_calls]
    assert calls == [("call_0", ANN), ("call_1", BOB)]


def test_two_answer_tool_calls_stream_as_two_calls() -> None:
    """Two calls of the answer tool in a Responses stream are two candidates with their ids, as
    unstreamed, never one call whose arguments run together."""
    unstreamed, stream = both([("Person", ANN), ("Person", BOB)])

    assert said(stream) == said(unstreamed)
    assert [c.id for c in stream.attempts[0].tool_calls] == ["call_0", "call_1"]
    assert [json.loads(c.arguments) for c in stream.attempts[0].tool_calls] == [ANN, BOB]


VALUES = st.dictionaries(
    st.sampled_from(["name", "age", "x"]),
    st.one_of(st.integers(-2, 40), st.text(max_size=4), st.booleans(), st.none()),
    max_size=3,
)
CALLS = st.lists(st.tuples(st.sampled_from(["Person", "lookup"]), VALUES), min_size=1, max_size=3)


@st.composite
def calls_and_cuts(draw: st.DrawFn) -> tuple[Calls, list[list[int]]]:
    """Calls, and for each the places its arguments' text is cut into deltas."""
    calls = draw(CALLS)
    cuts = [
        draw(st.lists(st.integers(1, max(1, len(json.dumps(args)) - 1)), max_size=6))
        for _, args in calls
    ]
    return calls, cuts


@pinned(max_examples=12)
@given(drawn=calls_and_cuts())
@example(drawn=([("lookup", ANN), ("lookup", BOB)], [[3], [7]]))
@example(drawn=([("Person", ANN), ("Person", ANN)], [[], [1, 2]]))
def test_any_calls_stream_to_the_outcome_of_the_same_reply_unstreamed(
    drawn: tuple[Calls, list[list[int]]],
) -> None:
    """Any 1-3 function calls, their arguments streamed in any deltas, reach the outcome of the
    same reply unstreamed: calls, ids, arguments, value or reason, flags."""
    calls, cuts = drawn
    unstreamed, stream = both(calls, cuts)

    assert said(stream) == said(unstreamed)
    assert [args for _, _, args in said(stream)[-1]] == [args for _, args in calls]
