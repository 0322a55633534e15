"""Stream chunks of each provider, read into `Delta`s, and the session that collects them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from anthropic.types import RawMessageStreamEvent
from google.genai import types as genai
from openai.types.chat import ChatCompletionChunk
from pydantic import BaseModel, Field, TypeAdapter

from healjson import Delta, Usage, Violation, contract
from healjson._core.judge.contracts import as_contract
from healjson._core.stream.session import StreamSession
from healjson._core.target.target import list_item_type, target_for
from healjson._core.wire.delta import read_chunk


def openai_chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> Any:
    return ChatCompletionChunk.model_validate(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "gpt-test",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **extra,
        }
    )


def test_openai_chunks_content_reasoning_tool_arguments_and_usage() -> None:
    """An OpenAI chat chunk is read into its text, reasoning, tool arguments and name, finish
    reason, and (on the last, choice-less chunk) usage."""
    assert "ab" == read_chunk(openai_chunk({"content": "ab"})).text
    assert "hm" == read_chunk(openai_chunk({"reasoning_content": "hm"})).reasoning
    tool = {"index": 0, "function": {"name": "Order", "arguments": '{"a"'}}
    delta = read_chunk(openai_chunk({"tool_calls": [tool]}))
    assert ('{"a"', "Order") == (delta.tool_arguments, delta.tool_name)
    assert "length" == read_chunk(openai_chunk({}, "length")).finish_reason
    last = ChatCompletionChunk.model_validate(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "gpt-test",
            "choices": [],
            "usage": {"prompt_tokens": 5, "completion_tokens": 7, "total_tokens": 12},
        }
    )
    assert Usage(5, 7, requests=1) == read_chunk(last).usage


def anthropic_event(data: dict[str, Any]) -> Any:
    adapter: TypeAdapter[Any] = TypeAdapter(RawMessageStreamEvent)
    return adapter.validate_python(data)


def test_anthropic_events() -> None:
    """Anthropic stream events are read into their usage and model, text, tool arguments and stop
    reason."""
    start = anthropic_event(
        {
            "type": "message_start",
            "message": {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "model": "claude-test",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 11, "output_tokens": 1},
            },
        }
    )
    # the input's counts, stated in part (the output's placeholder left out: `message_delta`
    # has the output's)
    opening = read_chunk(start)
    assert (Usage(11, 0), True, "claude-test") == (
        opening.usage,
        opening.usage_partial,
        opening.model,
    )
    text = anthropic_event(
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "{"}}
    )
    assert "{" == read_chunk(text).text
    thinking = {"type": "thinking_delta", "thinking": "so"}
    assert (
        "so"
        == read_chunk(
            anthropic_event({"type": "content_block_delta", "index": 0, "delta": thinking})
        ).reasoning
    )
    end = anthropic_event(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "max_tokens", "stop_sequence": None},
            "usage": {"output_tokens": 40},
        }
    )
    assert ("length", 40) == (
        read_chunk(end).finish_reason,
        read_chunk(end).usage.completion_tokens,
    )


def test_gemini_pieces() -> None:
    """A Gemini stream piece is read into its text, its finish reason (`MAX_TOKENS` as `length`)
    and its usage."""
    piece = genai.GenerateContentResponse.model_validate(
        {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"text": '{"a":'}]},
                    "finish_reason": "MAX_TOKENS",
                }
            ],
            "usage_metadata": {"prompt_token_count": 3, "candidates_token_count": 4},
        }
    )
    delta = read_chunk(piece)
    assert ('{"a":', "length") == (delta.text, delta.finish_reason)
    assert Usage(3, 4, requests=1) == delta.usage


def test_text_pieces_and_unknown_chunks() -> None:
    """A text or UTF-8 bytes chunk is read as text, and a chunk of no known shape raises
    `TypeError` naming a stream chunk."""
    assert "x" == read_chunk("x").text
    assert "é" == read_chunk("é".encode()).text
    with pytest.raises(TypeError, match="stream chunk"):
        read_chunk(object())


class Item(BaseModel):
    sku: str
    qty: int = Field(ge=1)


class Pair(BaseModel):
    low: int
    high: int = Field(le=100)
    note: str = ""


def feed(session: StreamSession, text: str, size: int = 3) -> None:
    for i in range(0, len(text), size):
        session.feed(Delta(text=text[i : i + size]))


def test_session_accepts_good_items_and_holds_bad_ones_with_located_diagnostics() -> None:
    """A list stream's session accepts each valid item and holds a bad one with diagnostics at
    its path, never aborting."""
    session = StreamSession(target_for(list[Item]), one_value=True)
    feed(session, json.dumps([{"sku": "A", "qty": 1}, {"sku": "B", "qty": 0}]))

    assert {0: Item(sku="A", qty=1)} == session.accepted
    assert ["[1].qty"] == [d.path for d in session.held[1]]
    assert session.abort is None  # a list is never aborted: the rest keep flowing


def test_session_aborts_on_a_closed_field_outside_its_schema() -> None:
    """A session aborts once a closed field breaks its schema, naming that field."""
    session = StreamSession(target_for(Pair), one_value=True)  # a JSON-mode request
    feed(session, '{"low": 1, "high": 500, "note": "')

    assert session.abort is not None
    assert ["high"] == [d.path for d in session.abort]


def test_session_runs_a_contract_once_its_fields_have_arrived() -> None:
    """A session runs a contract only once every field it names has arrived, then aborts on its
    violation."""

    @contract(fields=("low", "high"))
    def ordered(pair: Pair) -> Violation | None:
        return Violation("low must not exceed high") if pair.low > pair.high else None

    session = StreamSession(target_for(Pair), [as_contract(ordered)], one_value=True)
    session.feed(Delta(text='{"low": 9, "hi'))
    assert session.abort is None  # `high` has not arrived
    session.feed(Delta(text='gh": 3, '))
    assert session.abort is not None
    assert "low must not exceed high" == session.abort[0].constraint


def test_session_leaves_async_contracts_to_the_final_check() -> None:
    """A session never runs an async contract mid-stream: it is left to the final check."""

    @contract(fields=("low",))
    async def remote(pair: Pair) -> Violation | None:
        return Violation("never")

    session = StreamSession(target_for(Pair), [as_contract(remote)], one_value=True)
    feed(session, '{"low": 1, "high": 2}')
    assert session.abort is None


def test_session_usage_pieces_merge_and_the_reply_keeps_everything() -> None:
    """A session merges usage reported in parts, and its reply keeps the text, finish reason,
    reasoning and model."""
    session = StreamSession(target_for(Pair))
    session.feed(Delta(usage=Usage(10, 0), model="m", usage_partial=True))
    session.feed(Delta(reasoning="think"))
    session.feed(Delta(text='{"low": 1, "high": 2}'))
    session.feed(Delta(finish_reason="stop", usage=Usage(0, 8), usage_partial=True))

    reply = session.reply()
    assert ('{"low": 1, "high": 2}', "stop", "think", "m") == (
        reply.content,
        reply.finish_reason,
        reply.reasoning,
        reply.model,
    )
    assert Usage(10, 8, requests=1, model="m") == reply.usage


def test_tool_arguments_are_the_answer_in_tool_mode() -> None:
    """In tool mode, the tool call's streamed arguments are the answer the snapshots and the
    reply hold."""
    session = StreamSession(target_for(Pair))
    session.feed(Delta(tool_name="Pair", tool_arguments='{"low": 1, '))
    snapshot = session.feed(Delta(tool_arguments='"high": 2}'))

    assert snapshot is not None
    assert {"low": 1, "high": 2} == snapshot.data
    assert '{"low": 1, "high": 2}' == session.reply().tool_calls[0].arguments


def test_a_long_string_gives_few_snapshots() -> None:
    """A string growing by one character per delta gives a snapshot only each time it has
    grown by an eighth: the copies stay linear in the length."""
    session = StreamSession(target_for(Pair))
    session.feed(Delta(text='{"note": "'))
    count = sum(session.feed(Delta(text="x")) is not None for _ in range(20_000))
    assert count < 80


@pytest.mark.parametrize(
    ("annotation", "item"),
    [(list[Item], Item), (tuple[Item, ...], Item), (Item, None), (tuple[int, str], None)],
)
def test_list_item_types(annotation: Any, item: Any) -> None:
    """`list_item_type` gives the item type of a list or a homogeneous tuple, and `None` for
    anything else."""
    assert item is list_item_type(annotation)
