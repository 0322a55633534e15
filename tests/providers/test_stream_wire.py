"""A stream reads as its unstreamed reply: Anthropic's refusal stop, Gemini pieces without
candidates, OpenAI's interleaved choices. The real SDKs over real HTTP against the scripted
server on 127.0.0.1 where the server can send the shape, the SDK's own chunk objects where not."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from google.genai import types as genai_types
from openai.types.chat import ChatCompletionChunk
from pydantic import BaseModel

import healjson
from healjson import Degraded, Healed, Healer, Reason
from healjson.testing import ScriptedReply, ScriptedServer
from lanes import INSTRUCTOR_ONLY
from sdk_calls import gemini_client

USER = [{"role": "user", "content": "Extract it."}]


class Order(BaseModel):
    customer: str
    total: float


GOOD = '{"customer": "Ada", "total": 3.5}'


# --- Anthropic: a refusal stop withdraws what was streamed ---------------------------------------


@contextlib.contextmanager
def _anthropic_call(server: ScriptedServer, *, stream: bool) -> Iterator[Any]:
    """A model call through an anthropic client on `server`, the client closed after."""
    with anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="k", max_retries=0) as sdk:

        def call(messages: list[dict[str, Any]], **params: Any) -> Any:
            return sdk.messages.create(
                model="claude-x",
                max_tokens=200,
                messages=messages,
                stream=stream,  # type: ignore[arg-type]
            )

        yield call


REFUSALS = {
    "after text": ScriptedReply(content=GOOD, refusal="I can't help with that.", chunk_chars=6),
    "without text": ScriptedReply(refusal="I can't help with that."),
}


@pytest.mark.parametrize("name", list(REFUSALS))
def test_a_streamed_anthropic_refusal_degrades_as_the_unstreamed_one(name: str) -> None:
    """`stop_reason: "refusal"`: `Degraded(refusal)` after one call, streamed or not; the JSON
    text streamed before the stop is not healed into a value."""
    reply = REFUSALS[name]
    outcomes = []
    with ScriptedServer([reply, reply, GOOD, GOOD]) as server:
        healer = Healer(Order)
        with _anthropic_call(server, stream=False) as call:
            outcomes.append(healer.run(call, USER))
        with _anthropic_call(server, stream=True) as call:
            stream = healer.stream(call, USER)
            list(stream)
            outcomes.append(stream.outcome)
    for outcome in outcomes:
        assert isinstance(outcome, Degraded)
        assert Reason.REFUSAL == outcome.reason
        assert 1 == outcome.calls
        assert "I can't help with that." == outcome.errors[0].value
    unstreamed, streamed = outcomes
    assert unstreamed.raw_text == streamed.raw_text


def test_an_instructor_anthropic_stream_that_refuses_degrades_sync_and_async() -> None:
    """The same through `wrap(instructor.from_anthropic(...))`, sync and async."""
    instructor = pytest.importorskip("instructor", reason=INSTRUCTOR_ONLY)
    reply = REFUSALS["after text"]

    async def main(server: ScriptedServer) -> Any:
        raw = anthropic.AsyncAnthropic(
            base_url=server.anthropic_base_url, api_key="k", max_retries=0
        )
        wrapped = healjson.wrap(instructor.from_anthropic(raw))
        stream = wrapped.create_partial(model="claude-x", messages=USER, response_model=Order)
        [_ async for _ in stream]
        await raw.close()
        return stream.outcome

    with (
        ScriptedServer([reply, reply, GOOD, GOOD]) as server,
        anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="k", max_retries=0) as raw,
    ):
        wrapped = healjson.wrap(instructor.from_anthropic(raw))
        stream = wrapped.create_partial(model="claude-x", messages=USER, response_model=Order)
        list(stream)
        outcomes = [stream.outcome, asyncio.run(main(server))]
    for outcome in outcomes:
        assert isinstance(outcome, Degraded)
        assert Reason.REFUSAL == outcome.reason
        assert 1 == outcome.calls


# --- Gemini: pieces without candidates --------------------------------------------------------


def _sse(*payloads: dict[str, Any]) -> str:
    return "".join(f"data: {json.dumps(payload)}\r\n\r\n" for payload in payloads)


def _gemini_piece(text: str, finish: str | None = None) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": "gemini-x"}


BLOCKED = {"promptFeedback": {"blockReason": "SAFETY"}, "modelVersion": "gemini-x"}
USAGE = {"promptTokenCount": 3, "candidatesTokenCount": 5, "totalTokenCount": 8}


@contextlib.contextmanager
def _gemini_call(server: ScriptedServer, *, stream: bool) -> Iterator[Any]:
    """A model call through a google-genai client on `server`, the client closed after."""
    options = genai_types.HttpOptions(base_url=server.gemini_base_url, timeout=10_000)
    with gemini_client(api_key="k", http_options=options) as sdk:

        def call(messages: list[dict[str, Any]], **params: Any) -> Any:
            contents = messages[-1]["content"]
            if stream:
                return sdk.models.generate_content_stream(model="gemini-x", contents=contents)
            return sdk.models.generate_content(model="gemini-x", contents=contents)

        yield call


def _sse_reply(*payloads: dict[str, Any]) -> ScriptedReply:
    return ScriptedReply(body=_sse(*payloads), content_type="text/event-stream")


def test_a_blocked_gemini_prompt_is_a_content_filter_streamed_or_not() -> None:
    """A piece with only `promptFeedback.blockReason`: `content_filter` after one call."""
    script = [ScriptedReply(body=json.dumps(BLOCKED)), _sse_reply(BLOCKED)]
    with ScriptedServer(script) as server:
        healer = Healer(Order)
        with _gemini_call(server, stream=False) as call:
            unstreamed = healer.run(call, USER)
        with _gemini_call(server, stream=True) as call:
            stream = healer.stream(call, USER)
            list(stream)
    for outcome in (unstreamed, stream.outcome):
        assert isinstance(outcome, Degraded)
        assert Reason.CONTENT_FILTER == outcome.reason
        assert 1 == outcome.calls


def test_gemini_metadata_only_pieces_do_not_spoil_a_good_stream() -> None:
    """Pieces carrying only `modelVersion` / `responseId`, or only usage, add nothing."""
    pieces = (
        {"modelVersion": "gemini-x", "responseId": "r1"},
        _gemini_piece('{"customer": "Ada", '),
        {"responseId": "r1"},
        _gemini_piece('"total": 3.5}', "STOP"),
        {"usageMetadata": USAGE, "modelVersion": "gemini-x"},
    )
    with ScriptedServer([_sse_reply(*pieces)]) as server, _gemini_call(server, stream=True) as call:
        stream = Healer(Order).stream(call, USER)
        snapshots = list(stream)
    outcome = stream.outcome
    assert isinstance(outcome, Healed), outcome
    assert Order(customer="Ada", total=3.5) == outcome.value
    assert 1 == outcome.calls
    assert 5 == outcome.usage.completion_tokens
    assert snapshots


# --- OpenAI: interleaved choices ------------------------------------------------------------------


def _chunk(index: int, text: str, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    choice = {"index": index, "delta": {"content": text}, "finish_reason": finish}
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "gpt-test",
        "choices": [choice],
        **extra,
    }


def _interleaved() -> list[dict[str, Any]]:
    first, other = [GOOD[:12], GOOD[12:]], ['{"customer": "Bob", ', '"total": 9}']
    chunks = []
    for index, (mine, theirs) in enumerate(zip(first, other, strict=True)):
        finish = "stop" if index else None
        chunks += [_chunk(0, mine, finish), _chunk(1, theirs, finish)]
    usage = {"prompt_tokens": 4, "completion_tokens": 20, "total_tokens": 24}
    chunks.append({**_chunk(0, ""), "choices": [], "usage": usage})
    return chunks


@pytest.mark.parametrize("form", ["dict", "sdk"])
def test_interleaved_openai_choices_stream_choice_0_only(form: str) -> None:
    """With `n=2`, the deltas of choice 1 are not part of the answer (unstreamed, choice 0 is
    read); the usage chunk still counts."""
    chunks: list[Any] = _interleaved()
    if form == "sdk":
        chunks = [ChatCompletionChunk.model_validate(chunk) for chunk in chunks]

    def call(messages: Any, **params: Any) -> Iterator[Any]:
        return iter(chunks)

    stream = Healer(Order).stream(call, USER)
    snapshots = list(stream)
    outcome = stream.outcome
    assert isinstance(outcome, Healed), outcome
    assert Order(customer="Ada", total=3.5) == outcome.value
    assert 20 == outcome.usage.completion_tokens
    assert all("Bob" not in json.dumps(s.to_dict()) for s in snapshots)
