"""The SDK `Response` fast reader: the same `Reply` as the full reader, for any response."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from openai.types.responses import Response

from healjson._core.wire.delta import read_chunk
from healjson._providers._unreadable import UnreadableReply
from healjson._providers.openai_responses import (
    Conversation,
    read_response,
    read_sdk_response,
    set_commentary_aside,
    text_format,
)

_TEXT = st.text(max_size=20)
_PART = st.one_of(
    st.builds(lambda t: {"type": "output_text", "text": t, "annotations": []}, _TEXT),
    st.builds(lambda t: {"type": "refusal", "refusal": t}, _TEXT),
)
_MESSAGE = st.builds(
    lambda parts, phase: {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": parts,
        **({"phase": phase} if phase else {}),
    },
    st.lists(_PART, max_size=3),
    st.sampled_from([None, "final_answer", "commentary"]),
)
_REASONING = st.builds(
    lambda t: {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": t}]},
    _TEXT,
)
_CALL = st.builds(
    lambda a: {"id": "fc_1", "type": "function_call", "call_id": "c1", "name": "f", "arguments": a},
    _TEXT,
)
_COUNT = st.integers(min_value=0, max_value=10**6)


@st.composite
def responses(draw: st.DrawFn) -> Response:
    status = draw(st.sampled_from(["completed", "incomplete", "in_progress"]))
    usage = draw(
        st.one_of(
            st.none(),
            st.builds(
                lambda i, o, c, r: {
                    "input_tokens": i,
                    "input_tokens_details": {"cached_tokens": c, "cache_write_tokens": r // 2},
                    "output_tokens": o,
                    "output_tokens_details": {"reasoning_tokens": r},
                    "total_tokens": i + o,
                },
                _COUNT,
                _COUNT,
                _COUNT,
                _COUNT,
            ),
        )
    )
    body: dict[str, Any] = {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "status": status,
        "model": draw(st.sampled_from(["gpt-test", "o-test"])),
        "output": draw(st.lists(st.one_of(_MESSAGE, _REASONING, _CALL), max_size=3)),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    }
    if status == "incomplete":
        body["incomplete_details"] = {"reason": "max_output_tokens"}
    return Response.model_validate(body)


@settings(max_examples=100, deadline=None)
@given(responses())
def test_the_fast_reader_reads_every_response_as_the_full_reader(response: Response) -> None:
    """For any Responses API `Response`, the fast reader gives the full reader's `Reply`."""
    assert read_sdk_response(response) == read_response(response)


def test_the_common_request_sends_the_callers_input_and_one_cached_format() -> None:
    """A Responses request keeps the caller's instructions and input and sends one text format,
    built once for equal calls."""
    strict = {"type": "json_schema", "json_schema": {"name": "M", "schema": {}, "strict": True}}
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]
    sent = [
        Conversation("Be brief.", "hi").request(
            {"messages": list(messages), "response_format": strict, "model": "m"}
        )
        for _ in range(2)
    ]
    assert sent[0] == {
        "model": "m",
        "instructions": "Be brief.",
        "input": "hi",
        "text": {"format": text_format(strict)},
    }
    assert sent[0]["text"] is sent[1]["text"]  # built once per format
    own = Conversation(None, "hi", {"verbosity": "low"}).request(
        {"messages": [{"role": "user", "content": "hi"}], "response_format": strict}
    )
    assert own["text"] == {"verbosity": "low", "format": text_format(strict)}


_KINDS = st.sampled_from(
    [
        "response.output_text.delta",
        "response.refusal.delta",
        "response.function_call_arguments.delta",
        "response.reasoning_summary_text.delta",
        "response.reasoning_text.delta",
        "response.in_progress",
        "response.content_part.added",
    ]
)
_EVENT = st.builds(
    lambda kind, piece, item: {"type": kind, "delta": piece, "item_id": item},
    _KINDS,
    st.one_of(_TEXT, st.none(), st.integers()),
    st.sampled_from(["msg_a", "msg_b"]),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(_EVENT, max_size=8))
def test_events_read_while_set_aside_as_the_core_reads_them(events: list[Any]) -> None:
    """The pieces the stream reader turns into `Delta`s read as the core reads the events, a
    `delta` that is no string refused alike (no commentary item: nothing set aside)."""
    assert [_read(e) for e in set_commentary_aside(iter(events))] == [_read(e) for e in events]


def _read(event: Any) -> Any:
    """The event's `Delta`, or the words it is refused with."""
    try:
        return read_chunk(event)
    except UnreadableReply as exc:
        return str(exc)
