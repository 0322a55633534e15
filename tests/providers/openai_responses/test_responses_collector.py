"""The Responses API's tool-call stream collector keeps what arrived as it arrives: the text,
each call by its item (id, name, kind, argument or custom input pieces; the whole item once
done), and gives it (`received()`) for a stream that never reached its final event: one cut, one
that ended with `response.failed` or an `error` event."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from healjson._core.stream.reading import CallsReader
from healjson._core.wire.effects import CallFailure, new_call_result, new_model_call
from healjson._core.wire.reply import CUSTOM, FUNCTION, ToolCall
from healjson._providers.openai_responses import ResponseFailed
from healjson._providers.openai_responses_tools import ResponsesCollector
from pinned import pinned

FUNCTION_ITEM = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": "Search"}
CUSTOM_ITEM = {"id": "ct_1", "type": "custom_tool_call", "call_id": "call_2", "name": "shell"}


def added(index: int, item: dict[str, Any]) -> dict[str, Any]:
    """`response.output_item.added` for `item` (empty) at `index`."""
    empty = {**item, "arguments": ""} if item["type"] == "function_call" else {**item, "input": ""}
    return {"type": "response.output_item.added", "output_index": index, "item": empty}


def delta(kind: str, item_id: str, index: int, piece: str) -> dict[str, Any]:
    """A `response.<kind>.delta` event of item `item_id` at `index`."""
    return {"type": f"response.{kind}.delta", "item_id": item_id, "output_index": index,
            "delta": piece}  # fmt: skip


def text(piece: str, item_id: str = "msg_1") -> dict[str, Any]:
    """An `output_text` delta of message `item_id`."""
    return delta("output_text", item_id, 0, piece)


def fed(events: list[dict[str, Any]]) -> ResponsesCollector:
    """A collector fed `events`, in order."""
    collector = ResponsesCollector()
    for event in events:
        collector.feed(event)
    return collector


def test_an_error_event_keeps_the_text_and_the_call_so_far() -> None:
    """An `error` event raises `ResponseFailed`, and the collector still gives the text and
    the call's name, id, kind and argument pieces that arrived before it."""
    collector = fed(
        [
            {"type": "response.created", "response": {"model": "gpt-test", "usage": None}},
            text("Let me "),
            text("look."),
            added(1, FUNCTION_ITEM),
            delta("function_call_arguments", "fc_1", 1, '{"query": '),
            delta("function_call_arguments", "fc_1", 1, '"la'),
        ]
    )
    with pytest.raises(ResponseFailed, match="overloaded"):
        collector.feed({"type": "error", "message": "overloaded", "sequence_number": 7})
    with pytest.raises(ResponseFailed, match="before the response was complete"):
        collector.reply()

    got = collector.received()

    assert ("Let me look.", None, "gpt-test") == (got.content, got.finish_reason, got.model)
    assert (ToolCall("Search", '{"query": "la', "call_1", FUNCTION),) == got.tool_calls


def test_a_custom_call_keeps_its_input_pieces_then_its_whole_item() -> None:
    """A custom tool's call is kept as a custom call: its input pieces exactly while it
    streams, its whole item (the input as the item holds it) once `output_item.done` came."""
    whole = {**CUSTOM_ITEM, "input": 'echo "{a: 1" }'}
    pieces = [added(0, CUSTOM_ITEM), delta("custom_tool_call_input", "ct_1", 0, 'echo "{a')]

    assert (ToolCall("shell", 'echo "{a', "call_2", CUSTOM),) == fed(pieces).received().tool_calls
    done = {"type": "response.output_item.done", "output_index": 0, "item": whole}
    got = fed([*pieces, done]).received()
    assert (ToolCall("shell", 'echo "{a: 1" }', "call_2", CUSTOM),) == got.tool_calls


def test_the_arguments_done_event_makes_them_whole() -> None:
    """`function_call_arguments.done` replaces the pieces with the arguments it holds."""
    done = {"type": "response.function_call_arguments.done", "item_id": "fc_1",
            "output_index": 0, "arguments": '{"query": "lamp"}'}  # fmt: skip
    got = fed([added(0, FUNCTION_ITEM), delta("function_call_arguments", "fc_1", 0, "{"), done])

    assert '{"query": "lamp"}' == got.received().tool_calls[0].arguments


def test_calls_are_kept_apart_by_their_item() -> None:
    """Two calls' pieces stay each with its own item; pieces of an item never announced make a
    call of their own, as does an output index reused by an item of another id."""
    second = {**FUNCTION_ITEM, "id": "fc_2", "call_id": "call_3", "name": "Other"}
    got = fed(
        [
            added(0, FUNCTION_ITEM),
            added(1, second),
            delta("function_call_arguments", "fc_1", 0, "{1"),
            delta("function_call_arguments", "fc_2", 1, "{2"),
            delta("function_call_arguments", "fc_1", 0, "}"),
            delta("function_call_arguments", "fc_9", 0, "{9"),
        ]
    ).received()

    assert [("Search", "{1}"), ("Other", "{2"), ("", "{9")] == [
        (call.name, call.arguments) for call in got.tool_calls
    ]


def test_commentary_is_set_aside_as_the_whole_reply_sets_it() -> None:
    """With phased message items, a commentary item's text is reasoning and the final answer's
    is the content, as `read_response` reads a whole response."""
    commentary = {"id": "msg_c", "type": "message", "phase": "commentary", "content": []}
    final = {"id": "msg_f", "type": "message", "phase": "final_answer", "content": []}
    got = fed(
        [
            {"type": "response.output_item.added", "output_index": 0, "item": commentary},
            text("Checking.", "msg_c"),
            {"type": "response.output_item.added", "output_index": 1, "item": final},
            text("Here.", "msg_f"),
        ]
    ).received()

    assert ("Here.", "Checking.") == (got.content, got.reasoning)


def test_a_failed_response_keeps_the_usage_it_reported() -> None:
    """`response.failed` raises, and what had arrived is kept with the usage the failed
    response reported, exact: the failed call's spend is not estimated."""
    failed = {"type": "response.failed", "response": {
        "status": "failed", "model": "gpt-test", "output": [],
        "error": {"code": "server_error", "message": "boom"},
        "usage": {"input_tokens": 11, "output_tokens": 7}}}  # fmt: skip
    reading = CallsReader(ResponsesCollector).open(
        new_model_call(1, ({"role": "user", "content": "x"},), {}), 0.0
    )
    assert reading.feed(text("Hello")) != []
    with pytest.raises(ResponseFailed, match="boom"):
        reading.feed(failed)

    result = reading.salvage(new_call_result(None, CallFailure("api_error", "boom"), 0.0))

    assert result.failure is not None
    assert "Hello" == result.failure.raw_text
    usage = result.failure.usage
    assert usage is not None
    assert (11, 7, False) == (usage.prompt_tokens, usage.completion_tokens, usage.estimated)


def test_a_completed_stream_gives_its_final_response() -> None:
    """Once the final event came, `reply()` and `received()` are its whole response."""
    whole = {**FUNCTION_ITEM, "arguments": '{"query": "lamp"}'}
    completed = {"type": "response.completed", "response": {
        "status": "completed", "model": "gpt-test", "output": [whole],
        "usage": {"input_tokens": 3, "output_tokens": 4}}}  # fmt: skip
    collector = fed([added(0, FUNCTION_ITEM), completed])

    assert collector.reply() == collector.received()
    assert "tool_calls" == collector.reply().finish_reason


@pinned(max_examples=75)
@given(
    st.text(max_size=40),
    st.text(max_size=40),
    st.integers(min_value=1, max_value=7),
    st.integers(min_value=0, max_value=200),
)
@example("", "{}", 1, 0)
@example("héllo 😀", '{"q": "\\u00e9"}', 3, 5)
def test_any_cut_keeps_a_prefix_of_the_answer(
    said: str, arguments: str, size: int, cut: int
) -> None:
    """Cut anywhere, a stream keeps a prefix of its text and of its call's arguments, and the
    pieces that arrived whole: the whole answer's text and arguments at the end."""
    events: list[dict[str, Any]] = [text(said[i : i + size]) for i in range(0, len(said), size)]
    events.append(added(1, FUNCTION_ITEM))
    events += [
        delta("function_call_arguments", "fc_1", 1, arguments[i : i + size])
        for i in range(0, len(arguments), size)
    ]

    got = fed(events[:cut]).received()
    whole = fed(events).received()

    assert said.startswith(got.content or "")
    assert (whole.content or "") == said
    (call,) = whole.tool_calls
    assert (call.name, call.arguments, call.id) == ("Search", arguments, "call_1")
    assert all(arguments.startswith(c.arguments) for c in got.tool_calls)


def test_commentary_text_is_not_shown_as_answer_text() -> None:
    """A commentary item's text deltas are no answer text for the caller to see (the reply
    sets them aside as reasoning); a final answer's, and an unphased item's, are."""
    commentary = {"id": "msg_c", "type": "message", "phase": "commentary", "content": []}
    final = {"id": "msg_f", "type": "message", "phase": "final_answer", "content": []}
    collector = ResponsesCollector()
    shown = [
        collector.feed(event)
        for event in (
            {"type": "response.output_item.added", "output_index": 0, "item": commentary},
            text("Checking.", "msg_c"),
            {"type": "response.output_item.added", "output_index": 1, "item": final},
            text("Here.", "msg_f"),
            text("More.", "msg_x"),
        )
    ]
    assert ["", "", "", "Here.", "More."] == shown
