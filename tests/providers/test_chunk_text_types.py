"""A stream chunk whose text is not a string is no chunk of a reply: the call is `api_error`.

Each wire format's stream carries the answer's text in one member of its chunks (chat
`choices[0].delta.content`, Anthropic `text_delta.text`, Gemini `parts[i].text`, Ollama
`message.content`, the Responses API's `response.output_text.delta` `delta`). A chunk whose text
member is present and holds a number, a boolean, a list or an object is read neither as empty
text (the answer would silently lose that piece) nor as its `str()`: the streamed call fails as
the provider's failure, as a whole reply with such text does, and the message names the member
and its type. google-genai and ollama refuse such a chunk themselves (their models validate it);
healjson's readers refuse it when the chunk reaches them as it was sent (a dict, an object built
without validation), on the fast path too.

The streams here are the scripted server's own for each route, captured over HTTP, with the
text of one chunk replaced: served as raw bodies to every wrapped SDK, sync and async.
"""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionChunk

from healjson import Degraded, Healed, Reason
from healjson._core.wire.delta import read_chunk, read_sdk_chunk
from healjson._providers._unreadable import UnreadableReply
from healjson._providers.anthropic_messages.tools import AnthropicCollector
from healjson._providers.ollama_chat import OllamaCollector
from healjson._providers.openai_responses import set_commentary_aside
from healjson._providers.openai_responses_tools import ResponsesCollector
from healjson._providers.openai_tools import ChatCollector
from healjson.testing import ScriptedReply, ScriptedServer
from pinned import pinned
from wrapped_calls import Person, ask

ANSWER = '{"name": "Ann", "age": 31}'
PROVIDERS = ("chat", "responses", "anthropic", "gemini", "ollama")


# --- the streams: the scripted server's own, one chunk's text replaced ------------------------

ROUTES: dict[str, Callable[[ScriptedServer], tuple[str, dict[str, Any]]]] = {
    "chat": lambda s: (
        s.base_url + "/chat/completions",
        {"model": "gpt-test", "messages": [{"role": "user", "content": "a"}], "stream": True},
    ),
    "responses": lambda s: (
        s.base_url + "/responses",
        {"model": "gpt-test", "input": "a", "stream": True},
    ),
    "anthropic": lambda s: (
        s.anthropic_base_url + "/v1/messages",
        {
            "model": "c",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "a"}],
            "stream": True,
        },
    ),
    "gemini": lambda s: (
        s.gemini_base_url + "/v1beta/models/gemini-test:streamGenerateContent?alt=sse",
        {"contents": [{"role": "user", "parts": [{"text": "a"}]}]},
    ),
    "ollama": lambda s: (
        s.ollama_host + "/api/chat",
        {"model": "m", "messages": [{"role": "user", "content": "a"}], "stream": True},
    ),
}


def text_member(provider: str, payload: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
    """The object holding the answer text of `provider`'s chunk `payload`, and the member's
    name; None for a chunk carrying none."""
    if provider == "chat":
        choices = payload.get("choices") or [{}]
        delta = choices[0].get("delta") or {}
        return (delta, "content") if delta.get("content") else None
    if provider == "responses":
        return (payload, "delta") if payload["type"] == "response.output_text.delta" else None
    if provider == "anthropic":
        delta = payload.get("delta") or {}
        return (delta, "text") if delta.get("type") == "text_delta" else None
    if provider == "gemini":
        parts = (payload["candidates"][0].get("content") or {}).get("parts") or []
        return (parts[0], "text") if parts and "text" in parts[0] else None
    message = payload["message"]
    return (message, "content") if message.get("content") else None


@functools.cache
def template(provider: str) -> tuple[tuple[str, ...], str, tuple[str, ...], str]:
    """`provider`'s streamed answer as the scripted server writes it: the frames before the
    first text chunk, that chunk's frame, the frames after the last, and its content type."""
    with ScriptedServer() as server:
        server.extend([ScriptedReply(content=ANSWER, chunk_chars=1)])
        url, body = ROUTES[provider](server)
        response = httpx.post(url, json=body, timeout=10)
    frames = response.text.strip("\n").split("\n" if provider == "ollama" else "\n\n")
    carrying = [i for i, frame in enumerate(frames) if text_member(provider, _payload(frame))]
    first, last = carrying[0], carrying[-1]
    kind = response.headers["content-type"]
    return tuple(frames[:first]), frames[first], tuple(frames[last + 1 :]), kind


def _payload(frame: str) -> dict[str, Any]:
    data = [line[6:] for line in frame.split("\n") if line.startswith("data: ")]
    raw = frame if not data else data[0]
    return {} if raw == "[DONE]" else json.loads(raw)


def _framed(frame: str, payload: dict[str, Any]) -> str:
    """`frame` with its JSON replaced by `payload` (an SSE frame keeps its `event:` line)."""
    if not frame.startswith(("data: ", "event: ")):
        return json.dumps(payload)
    lines = [line for line in frame.split("\n") if not line.startswith("data: ")]
    return "\n".join([*lines, "data: " + json.dumps(payload)])


def stream_body(provider: str, texts: list[Any]) -> ScriptedReply:
    """A raw 200 reply streaming `provider`'s answer in one text chunk per item of `texts`
    (each set as that chunk's text member, whatever its type)."""
    head, chunk, tail, kind = template(provider)
    frames = list(head)
    for text in texts:
        payload = _payload(chunk)
        holder = text_member(provider, payload)
        assert holder is not None
        holder[0][holder[1]] = text
        frames.append(_framed(chunk, payload))
    frames += tail
    end = "\n" if provider == "ollama" else "\n\n"
    return ScriptedReply(body=end.join(frames) + end, content_type=kind)


# --- the wrapped clients ------------------------------------------------------------------------


def served(server: ScriptedServer, provider: str, runner: str, texts: list[Any]) -> Any:
    """The outcome of one streamed call whose text chunks are `texts`; any exception fails."""
    server.extend([stream_body(provider, texts)])
    try:
        return ask(server, provider, runner, True)
    except Exception as exc:  # the promise broken: say which call raised what
        pytest.fail(f"{provider}-{runner} raised {type(exc).__name__}: {exc}")


# --- over HTTP, every provider, sync and async ------------------------------------------------

CELLS = [(provider, runner) for provider in PROVIDERS for runner in ("sync", "async")]
PIECES = ['{"name": "Ann", ', '"age": 31}']


@pytest.mark.parametrize(("provider", "runner"), CELLS)
@pytest.mark.parametrize("where", [0, 1, 2], ids=["first", "middle", "last"])
def test_a_chunk_whose_text_is_a_number_fails_the_call(
    shared_server: ScriptedServer, provider: str, runner: str, where: int
) -> None:
    """A streamed answer one of whose chunks has a number for its text degrades with
    `api_error`, never with the piece lost or read as "5"."""
    texts: list[Any] = list(PIECES)
    texts.insert(where, 5)
    outcome = served(shared_server, provider, runner, texts)

    assert (Degraded, Reason.API_ERROR) == (type(outcome), outcome.reason)


# the formats whose SDK hands the chunk on as sent: healjson's reader names the member
NAMED = {
    "chat": "choices[0].delta.content is int",
    "responses": "delta (of response.output_text.delta) is int",
    "anthropic": "text_delta.text is int",
}


@pytest.mark.parametrize(("provider", "runner"), [c for c in CELLS if c[0] in NAMED])
def test_the_failure_names_the_member_and_its_type(
    shared_server: ScriptedServer, provider: str, runner: str
) -> None:
    """The `api_error` of a chunk whose text is a number says which member had which type."""
    outcome = served(shared_server, provider, runner, [PIECES[0], 5, PIECES[1]])

    assert NAMED[provider] in str(outcome.errors[-1].value)


@pytest.mark.parametrize(("provider", "runner"), CELLS)
def test_the_same_stream_with_string_texts_heals(
    shared_server: ScriptedServer, provider: str, runner: str
) -> None:
    """The same raw stream with every chunk's text a string heals to the answer it spells."""
    outcome = served(shared_server, provider, runner, PIECES)

    assert isinstance(outcome, Healed)
    assert Person(name="Ann", age=31) == outcome.value


non_strings = st.recursive(
    st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=4,
)
"""JSON values that are not strings (nor null: an absent text is no text)."""


@st.composite
def chunked(draw: st.DrawFn) -> list[str]:
    """`ANSWER` cut into 1 to 6 non-empty pieces at drawn places."""
    cuts = draw(st.sets(st.integers(1, len(ANSWER) - 1), max_size=5))
    bounds = [0, *sorted(cuts), len(ANSWER)]
    return [ANSWER[a:b] for a, b in itertools.pairwise(bounds)]


@pinned(max_examples=30)
@given(
    provider=st.sampled_from(PROVIDERS),
    pieces=chunked(),
    bad=st.none() | st.tuples(st.integers(0, 6), non_strings),
)
@example(provider="chat", pieces=[ANSWER], bad=(0, 0))
@example(provider="anthropic", pieces=[ANSWER], bad=(1, False))
@example(provider="responses", pieces=[ANSWER], bad=(0, []))
@example(provider="ollama", pieces=[ANSWER], bad=(1, {}))
@example(provider="gemini", pieces=[ANSWER], bad=(0, 0.5))
def test_a_stream_fails_exactly_when_a_chunks_text_is_no_string(
    shared_server: ScriptedServer,
    provider: str,
    pieces: list[str],
    bad: tuple[int, Any] | None,
) -> None:
    """Any cut of an answer into chunks, with or without one chunk whose text is another JSON
    type: `api_error` exactly when there is one, else the answer healed."""
    # a chat delta's content may be content parts: a list of objects is one when their texts
    # are strings or absent (`test_a_chat_delta_of_content_parts_is_read_as_their_text`)
    assume(not (provider == "chat" and bad is not None and _parts(bad[1])))
    texts: list[Any] = list(pieces)
    if bad is not None:
        texts.insert(min(bad[0], len(texts)), bad[1])
    outcome = served(shared_server, provider, "sync", texts)

    if bad is None:
        assert Person(name="Ann", age=31) == outcome.value
    else:
        assert (Degraded, Reason.API_ERROR) == (type(outcome), outcome.reason)


def _parts(value: Any) -> bool:
    """True for content parts: a list of objects whose `text` is a string or absent."""
    return isinstance(value, list) and all(
        isinstance(part, dict) and isinstance(part.get("text", ""), str) for part in value
    )


@pytest.mark.parametrize("runner", ["sync", "async"])
def test_a_chat_delta_of_content_parts_is_read_as_their_text(
    shared_server: ScriptedServer, runner: str
) -> None:
    """A chat delta whose `content` is content parts (as some OpenAI-compatible servers stream
    it, a reasoning part beside a text part) is read as the parts' texts joined, as a whole
    message's content parts are; a part whose text is a number fails the call."""
    parts: list[Any] = [
        [{"type": "thinking", "thinking": "..."}, {"type": "text", "text": PIECES[0]}],
        [],
        [{"type": "text", "text": PIECES[1]}],
    ]
    healed = served(shared_server, "chat", runner, parts)
    broken = served(shared_server, "chat", runner, [PIECES[0], [{"type": "text", "text": 5}]])

    assert isinstance(healed, Healed)
    assert Person(name="Ann", age=31) == healed.value
    assert (Degraded, Reason.API_ERROR) == (type(broken), broken.reason)
    assert "choices[0].delta.content[].text is int" in str(broken.errors[-1].value)


# --- the readers themselves: dicts, SDK objects built without validation, collectors -----------

DICT_CHUNKS: dict[str, tuple[Callable[[Any], Any], str]] = {
    "chat": (
        lambda v: {
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"content": v}}],
        },
        "choices[0].delta.content",
    ),
    "chat-refusal": (
        lambda v: {
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {"refusal": v}}],
        },
        "choices[0].delta.refusal",
    ),
    "chat-arguments": (
        lambda v: {
            "object": "chat.completion.chunk",
            "choices": [
                {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": v}}]}}
            ],
        },
        "function.arguments",
    ),
    "responses": (
        lambda v: {"type": "response.output_text.delta", "delta": v, "sequence_number": 4},
        "delta (of response.output_text.delta)",
    ),
    "anthropic": (
        lambda v: {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": v},
        },
        "text_delta.text",
    ),
    "anthropic-json": (
        lambda v: {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": v},
        },
        "input_json_delta.partial_json",
    ),
    "gemini": (
        lambda v: {"candidates": [{"content": {"parts": [{"text": "a"}, {"text": v}]}}]},
        "candidates[0].content.parts[1].text",
    ),
    "ollama": (
        lambda v: {"model": "m", "message": {"role": "assistant", "content": v}, "done": False},
        "message.content",
    ),
}


@pytest.mark.parametrize("value", [5, 1.5, True, False, 0, [], ["a"], {"t": "a"}])
@pytest.mark.parametrize("shape", list(DICT_CHUNKS))
def test_a_chunk_reader_refuses_a_text_of_another_type(shape: str, value: Any) -> None:
    """Every format's chunk reader raises `UnreadableReply` for a dict chunk whose text member
    holds another type, naming the member and the type (a chat delta's content parts aside)."""
    if shape == "chat" and _parts(value):
        assert "" == read_chunk(DICT_CHUNKS[shape][0](value)).text
        return
    make, member = DICT_CHUNKS[shape]
    with pytest.raises(UnreadableReply) as raised:
        read_chunk(make(value))

    assert f"{member} is {type(value).__name__}, not a string" in str(raised.value)


@pytest.mark.parametrize("shape", list(DICT_CHUNKS))
def test_a_chunk_reader_reads_a_null_text_as_an_empty_one(shape: str) -> None:
    """A chunk whose text member is null carries no text: read as with an empty text, never
    refused."""
    make, _ = DICT_CHUNKS[shape]

    assert read_chunk(make("")) == read_chunk(make(None))


def _sdk_chunk(content: Any) -> ChatCompletionChunk:
    choice = {"index": 0, "delta": {"content": content}, "finish_reason": None}
    raw = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
    return ChatCompletionChunk.construct(**raw, choices=[choice])  # as the SDK builds it


@pytest.mark.parametrize("value", [5, False, [5], {"t": "a"}])
def test_the_chat_fast_reader_refuses_a_text_of_another_type(value: Any) -> None:
    """The SDK's chunk class read by the fast path (once remembered) refuses a non-string text
    as the generic reader does."""
    read_chunk(_sdk_chunk("x"))  # the class remembered: read by the fast reader from now on
    with pytest.raises(UnreadableReply, match=r"choices\[0\]\.delta\.content is"):
        read_sdk_chunk(_sdk_chunk(value))

    assert "x" == read_sdk_chunk(_sdk_chunk("x")).text


def test_the_responses_stream_hands_a_text_of_another_type_to_its_reader() -> None:
    """The Responses stream's own event reading (commentary set aside) hands an event whose
    `delta` is no string on as it is, and the reader refuses it."""
    events = [{"type": "response.output_text.delta", "delta": 5, "item_id": "m"}]
    (event,) = set_commentary_aside(iter(events))

    with pytest.raises(UnreadableReply, match="delta"):
        read_chunk(event)


COLLECTED: dict[str, tuple[Callable[[], Any], list[Any]]] = {
    "chat": (ChatCollector, [DICT_CHUNKS["chat"][0](5)]),
    "chat-arguments": (ChatCollector, [DICT_CHUNKS["chat-arguments"][0](5)]),
    "responses": (ResponsesCollector, [DICT_CHUNKS["responses"][0](5)]),
    "anthropic": (
        AnthropicCollector,
        [
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
            DICT_CHUNKS["anthropic"][0](5),
        ],
    ),
    "anthropic-json": (
        AnthropicCollector,
        [
            {"type": "content_block_start", "index": 0, "content_block": {"type": "tool_use"}},
            DICT_CHUNKS["anthropic-json"][0](5),
        ],
    ),
    "ollama": (OllamaCollector, [DICT_CHUNKS["ollama"][0](5)]),
}


@pytest.mark.parametrize("shape", list(COLLECTED))
def test_a_tool_call_stream_refuses_a_text_of_another_type(shape: str) -> None:
    """The tool-call stream collectors (`heal_tools=True`) refuse a chunk whose text is a
    number, as the answer readers do."""
    make, chunks = COLLECTED[shape]
    collector = make()
    *before, last = chunks
    for chunk in before:
        collector.feed(chunk)

    with pytest.raises(UnreadableReply, match="is int, not a string"):
        collector.feed(last)
