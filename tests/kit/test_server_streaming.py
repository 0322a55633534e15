"""`ScriptedServer`'s streamed replies, driven by the real openai, anthropic and google-genai SDKs
over real HTTP on 127.0.0.1: chunking, reasoning before content, incremental delivery, a dropped
connection, an in-stream error, a client closing early, and the pure stream planning behind them.

What each SDK raises, as observed here: a cut (the server drops the connection in the middle of
the chunked body) raises `httpx2.RemoteProtocolError` from the iteration of all three SDKs
(openai 3.60 raises its `APIConnectionError` from it, 3.0 does not wrap it); a scripted
in-stream error raises `openai.APIError` (not an `APIStatusError`: the HTTP status was 200),
`anthropic.APIStatusError` with `status_code` 200, and google-genai's `errors.ServerError` (code
500, status `INTERNAL`).
"""

# ruff: noqa: F811 (tests take the fixtures imported from test_server as arguments)
from __future__ import annotations

import asyncio
import http.client
import json
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from hypothesis import given
from hypothesis import strategies as st

from healjson.testing import ScriptedReply, ScriptedServer
from healjson.testing._serve import load_replies
from healjson.testing._wire import anthropic_messages, gemini_generate, openai_chat
from healjson.testing._wire import usage as scripted_usage
from healjson.testing._wire._sse import Text, plan
from kit.test_server import USER, claude, client, gemini  # noqa: F401 (fixtures, reused)
from sdk_calls import DROPPED, dropped_cause

CONTENT = '{"total": 42, "currency": "EUR"}'  # 32 chars: 7 deltas of 5
REASONING = "Sum the lines: 42 EUR."  # 22 chars
PROVIDERS = ["openai", "anthropic", "gemini"]

Deltas = Iterator[tuple[str, str]]  # (kind: "reasoning" | "content", text), as the SDK yields


def _openai_deltas(sdk: openai.OpenAI, field: str = "reasoning_content") -> Deltas:
    with sdk.chat.completions.create(model="gpt-test", messages=USER, stream=True) as stream:  # type: ignore[arg-type]
        for chunk in stream:
            for choice in chunk.choices:
                reasoning = (choice.delta.model_extra or {}).get(field)
                if reasoning:
                    yield "reasoning", reasoning
                if choice.delta.content:
                    yield "content", choice.delta.content


def _anthropic_deltas(sdk: anthropic.Anthropic) -> Deltas:
    with sdk.messages.create(
        model="claude-test", max_tokens=64, messages=USER, stream=True
    ) as stream:  # type: ignore[arg-type]
        for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "thinking_delta":
                yield "reasoning", event.delta.thinking
            elif event.type == "content_block_delta" and event.delta.type == "text_delta":
                yield "content", event.delta.text


def _gemini_deltas(sdk: genai.Client) -> Deltas:
    for chunk in sdk.models.generate_content_stream(model="gemini-test", contents="Extract."):
        content = chunk.candidates[0].content if chunk.candidates else None
        for part in (content.parts or []) if content else []:
            if part.text:
                yield ("reasoning" if part.thought else "content"), part.text


@pytest.fixture(params=PROVIDERS)
def provider(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def deltas(provider: str, request: pytest.FixtureRequest) -> Callable[[], Deltas]:
    """A call streaming the next item through `provider`'s real SDK, yielding its deltas."""
    if provider == "openai":
        sdk_openai = request.getfixturevalue("client")
        return lambda: _openai_deltas(sdk_openai)
    if provider == "anthropic":
        sdk_anthropic = request.getfixturevalue("claude")
        return lambda: _anthropic_deltas(sdk_anthropic)
    sdk_gemini = request.getfixturevalue("gemini")
    return lambda: _gemini_deltas(sdk_gemini)


def _fives(text: str) -> list[str]:
    return [text[i : i + 5] for i in range(0, len(text), 5)]


# ---------------------------------------------------------------------------------------------
# chunking and order, every provider
# ---------------------------------------------------------------------------------------------


def test_chunk_chars_sets_the_deltas(
    scripted_server: ScriptedServer, deltas: Callable[[], Deltas]
) -> None:
    """With `chunk_chars=5` the content arrives as ceil(32 / 5) = 7 deltas of 5 characters (the
    last shorter) that join to the content; the stream is recorded as completed."""
    scripted_server.push(ScriptedReply(CONTENT, chunk_chars=5))

    received = list(deltas())

    assert [("content", piece) for piece in _fives(CONTENT)] == received
    scripted_server.wait_idle()
    [request] = scripted_server.requests
    assert (True, True) == (request.streamed, request.stream_completed)
    assert request.events_sent > 7


def test_reasoning_deltas_come_first_and_apart(
    scripted_server: ScriptedServer, deltas: Callable[[], Deltas]
) -> None:
    """Reasoning streams in its own deltas (thinking_delta, thought parts, reasoning_content),
    all of them before the first content delta."""
    scripted_server.push(ScriptedReply(CONTENT, reasoning=REASONING, chunk_chars=5))

    received = list(deltas())

    expected = [("reasoning", p) for p in _fives(REASONING)]
    assert expected + [("content", p) for p in _fives(CONTENT)] == received


def test_default_chunking_is_at_most_four_deltas(
    scripted_server: ScriptedServer, deltas: Callable[[], Deltas]
) -> None:
    """Without `chunk_chars` a text is split into at most 4 deltas, as before."""
    scripted_server.push(ScriptedReply(CONTENT))

    received = list(deltas())

    assert [("content", piece) for piece in [CONTENT[i : i + 8] for i in range(0, 32, 8)]] == (
        received
    )


def _busy(server: ScriptedServer) -> bool:
    """True while the server is still answering a request (writing a stream)."""
    try:
        server.wait_idle(0)
    except TimeoutError:
        return True
    return False


def test_chunk_delay_delivers_the_first_delta_before_the_last_is_written(
    scripted_server: ScriptedServer, deltas: Callable[[], Deltas]
) -> None:
    """10 deltas 0.02 s apart: when the SDK yields the first one the server is still writing the
    stream, and the deltas arrive spread over the ~0.18 s it takes (one body would arrive at
    once; the bound is loose because an SDK's first chunk may cost it some milliseconds)."""
    content = "0123456789" * 5
    scripted_server.push(ScriptedReply(content, chunk_chars=5, chunk_delay_s=0.02))
    stream = deltas()

    first = next(stream)[1]
    arrivals = [(time.monotonic(), first)]
    still_writing = _busy(scripted_server)
    arrivals += [(time.monotonic(), text) for _, text in stream]

    assert still_writing
    assert content == "".join(text for _, text in arrivals)
    assert 10 == len(arrivals)
    assert arrivals[-1][0] - arrivals[0][0] >= 9 * 0.02 * 0.5


# ---------------------------------------------------------------------------------------------
# cuts, in-stream errors, early closes
# ---------------------------------------------------------------------------------------------


def test_cut_raises_remote_protocol_error_after_the_partial_content(
    scripted_server: ScriptedServer, deltas: Callable[[], Deltas]
) -> None:
    """`cut_after_chars=12` sends 12 characters (the third delta shortened to 2), then drops the
    connection: every SDK's iteration raises httpx2's RemoteProtocolError (incomplete chunked
    read), after the partial content was yielded."""
    scripted_server.push(ScriptedReply(CONTENT, chunk_chars=5, cut_after_chars=12))
    received: list[str] = []

    with pytest.raises(DROPPED) as raised:
        received.extend(text for _, text in deltas())
    assert "incomplete chunked read" in str(dropped_cause(raised.value))

    assert [CONTENT[:5], CONTENT[5:10], CONTENT[10:12]] == received
    scripted_server.wait_idle()
    [request] = scripted_server.requests
    assert (True, True) == (request.streamed, request.stream_completed)


def test_cut_inside_the_reasoning(scripted_server: ScriptedServer, client: openai.OpenAI) -> None:
    """The count runs over the reasoning first: a cut at 7 falls inside it, no content is sent."""
    scripted_server.push(ScriptedReply(CONTENT, reasoning=REASONING, cut_after_chars=7))
    received: list[tuple[str, str]] = []

    with pytest.raises(DROPPED) as raised:
        received.extend(_openai_deltas(client))
    dropped_cause(raised.value)

    assert REASONING[:7] == "".join(text for kind, text in received if kind == "reasoning")
    assert [] == [text for kind, text in received if kind == "content"]


STREAM_ERRORS: dict[str, tuple[type[Exception], Callable[[Any], Any], Any]] = {
    "openai": (
        openai.APIError,
        lambda error: (type(error), error.body["type"]),
        (openai.APIError, "server_error"),
    ),
    "anthropic": (
        anthropic.APIStatusError,
        lambda error: (error.status_code, error.body["error"]["type"]),
        (200, "overloaded_error"),
    ),
    "gemini": (
        genai_errors.ServerError,
        lambda error: (error.code, error.status),
        (500, "INTERNAL"),
    ),
}


def test_stream_error_raises_the_sdks_error_after_the_partial_content(
    scripted_server: ScriptedServer, deltas: Callable[[], Deltas], provider: str
) -> None:
    """`stream_error_after_chars=10` sends two deltas then the provider's error event: openai
    raises `APIError` (not an `APIStatusError`), anthropic an `APIStatusError` with the stream's
    status 200 and Anthropic's `overloaded_error`, google-genai a `ServerError` 500 INTERNAL."""
    scripted_server.push(ScriptedReply(CONTENT, chunk_chars=5, stream_error_after_chars=10))
    error_class, facts, expected = STREAM_ERRORS[provider]
    received: list[str] = []

    with pytest.raises(error_class, match="after 10 characters") as caught:
        received.extend(text for _, text in deltas())

    assert [CONTENT[:5], CONTENT[5:10]] == received
    assert expected == facts(caught.value)
    scripted_server.wait_idle()
    [request] = scripted_server.requests
    assert (True, True) == (request.streamed, request.stream_completed)


@pytest.mark.parametrize(
    ("provider", "stream_error", "facts", "expected"),
    [
        ("openai", "rate_limit_exceeded", lambda e: e.body["type"], "rate_limit_exceeded"),
        ("anthropic", "api_error", lambda e: e.body["error"]["type"], "api_error"),
        ("gemini", "UNAVAILABLE", lambda e: (type(e), e.code), (genai_errors.ServerError, 503)),
        (
            "gemini",
            "RESOURCE_EXHAUSTED",
            lambda e: (type(e), e.code),
            (genai_errors.ClientError, 429),
        ),
    ],
    ids=["openai", "anthropic", "gemini-5xx", "gemini-4xx"],
)
def test_stream_error_type_is_sent_as_given(
    scripted_server: ScriptedServer,
    deltas: Callable[[], Deltas],
    stream_error: str,
    facts: Callable[[Any], Any],
    expected: Any,
) -> None:
    """Any other `stream_error` is the error's type (Gemini: its status, with Google's code)."""
    scripted_server.push(
        ScriptedReply(CONTENT, stream_error_after_chars=0, stream_error=stream_error)
    )

    with pytest.raises(Exception) as caught:  # noqa: PT011 (the class differs by provider)
        list(deltas())

    assert expected == facts(caught.value)


def test_openai_stream_error_carries_the_scripted_param_and_code(
    scripted_server: ScriptedServer, client: openai.OpenAI
) -> None:
    """OpenAI's error event has `param` and `code` from `error_param` / `error_code`."""
    scripted_server.push(
        ScriptedReply(CONTENT, stream_error_after_chars=3, error_param="p", error_code="c9")
    )

    with pytest.raises(openai.APIError) as caught:
        list(_openai_deltas(client))

    assert not isinstance(caught.value, openai.APIStatusError)
    assert {"message", "type", "param", "code"} == set(caught.value.body)  # type: ignore[arg-type]
    assert ("p", "c9") == (caught.value.body["param"], caught.value.body["code"])  # type: ignore[index]


def test_client_closing_early_stops_the_writing(
    scripted_server: ScriptedServer, deltas: Callable[[], Deltas]
) -> None:
    """A client that stops iterating after 2 of 20 deltas and closes the stream leaves
    `stream_completed=False`: the server notices at its next event and stops writing (the
    handler is idle long before the 20 x 0.05 s the stream would take)."""
    scripted_server.push(ScriptedReply("x" * 20, chunk_chars=1, chunk_delay_s=0.05))
    stream = deltas()

    first = [next(stream), next(stream)]
    stream.close()
    closed = time.monotonic()
    scripted_server.wait_idle()

    assert [("content", "x")] * 2 == first
    assert time.monotonic() - closed < 0.5
    [request] = scripted_server.requests
    assert (True, False) == (request.streamed, request.stream_completed)
    assert 2 <= request.events_sent < 8


def test_stop_interrupts_a_slow_stream() -> None:
    """`stop()` does not wait for `chunk_delay_s`: the stream ends unfinished, quickly."""
    server = ScriptedServer([ScriptedReply("abc", chunk_chars=1, chunk_delay_s=30)]).start()
    sdk = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    try:
        stream = sdk.chat.completions.create(model="m", messages=USER, stream=True)  # type: ignore[arg-type]
        assert "" == next(iter(stream)).choices[0].delta.content  # the role chunk
        started = time.monotonic()
        server.stop()
        assert time.monotonic() - started < 5.0  # the stream would take 30 s more
        with pytest.raises(DROPPED) as raised:
            list(stream)
        dropped_cause(raised.value)
        [request] = server.requests
        assert (True, 1, False) == (request.streamed, request.events_sent, request.stream_completed)
    finally:
        server.stop()
        sdk.close()


def test_wait_idle_times_out_while_a_reply_is_pending() -> None:
    """`wait_idle` raises TimeoutError while a request is being answered."""
    server = ScriptedServer([ScriptedReply.slow("late", 30.0)]).start()
    connection = socket.create_connection(("127.0.0.1", server.port), timeout=5)
    try:
        body = json.dumps({"messages": USER}).encode()
        head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\n"
        connection.sendall(head.encode() + b"\r\n" + body)
        deadline = time.monotonic() + 5
        while not server.requests and time.monotonic() < deadline:
            time.sleep(0.005)
        with pytest.raises(TimeoutError, match="still answering 1 request"):
            server.wait_idle(0.05)
    finally:
        server.stop()
        connection.close()
    server.wait_idle(1.0)  # stopping ended the delayed answer


# ---------------------------------------------------------------------------------------------
# per-provider details: tool calls, usage, refusal, the SDKs' stream helpers
# ---------------------------------------------------------------------------------------------


def _call(arguments: str) -> dict[str, Any]:
    return {"id": "call_7", "type": "function", "function": {"name": "f", "arguments": arguments}}


def test_openai_tool_arguments_and_usage_chunk(
    scripted_server: ScriptedServer, client: openai.OpenAI
) -> None:
    """Tool-call arguments stream in `chunk_chars` deltas that the stream helper reassembles;
    the usage chunk comes only with `stream_options.include_usage`."""
    arguments = '{"total": 42, "lines": [1, 2]}'
    reply = ScriptedReply(
        tool_calls=[_call(arguments)],
        finish_reason="tool_calls",
        chunk_chars=4,
        usage={"prompt_tokens": 3, "completion_tokens": 7},
    )
    scripted_server.extend([reply] * 2)

    with_usage = list(
        client.chat.completions.create(
            model="m",
            messages=USER,  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    with client.chat.completions.stream(model="m", messages=USER) as stream:  # type: ignore[arg-type]
        pieces = [
            event.arguments_delta
            for event in stream
            if event.type == "tool_calls.function.arguments.delta" and event.arguments_delta
        ]
        final = stream.get_final_completion()

    assert [arguments[i : i + 4] for i in range(0, len(arguments), 4)] == pieces
    [call] = final.choices[0].message.tool_calls or []
    assert ("call_7", "f", arguments) == (call.id, call.function.name, call.function.arguments)
    assert ([], 7) == (with_usage[-1].choices, with_usage[-1].usage.completion_tokens)  # type: ignore[union-attr]
    assert [None] * (len(with_usage) - 1) == [chunk.usage for chunk in with_usage[:-1]]
    assert "tool_calls" == with_usage[-2].choices[0].finish_reason


def test_anthropic_message_stream_accumulates_every_block(
    scripted_server: ScriptedServer, claude: anthropic.Anthropic
) -> None:
    """The anthropic SDK's MessageStream rebuilds thinking (with its signature), redacted
    thinking, text and tool_use (from `input_json_delta`s) blocks, the stop reason and usage."""
    reply = ScriptedReply(
        CONTENT,
        reasoning=REASONING,
        redacted_thinking="opaque",
        tool_calls=[_call('{"total": 42, "lines": [1, 2]}')],
        chunk_chars=3,
    )
    scripted_server.extend([reply, reply])

    with claude.messages.stream(model="claude-test", max_tokens=64, messages=USER) as stream:  # type: ignore[arg-type]
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    whole = claude.messages.create(model="claude-test", max_tokens=64, messages=USER)  # type: ignore[arg-type]

    assert ["message_start", "content_block_start", "content_block_delta", "thinking"] == kinds[:4]
    assert ["message_delta", "message_stop"] == kinds[-2:]
    assert whole.model_dump() == {**final.model_dump(), "id": whole.id}
    assert ["thinking", "redacted_thinking", "text", "tool_use"] == [b.type for b in final.content]
    assert {"total": 42, "lines": [1, 2]} == final.content[3].input  # type: ignore[union-attr]
    assert (
        "tool_use",
        len(REASONING) // 4 + len(CONTENT) // 4,
        len(REASONING) // 4,
    ) == (
        final.stop_reason,
        final.usage.output_tokens,
        final.usage.output_tokens_details.thinking_tokens,  # type: ignore[union-attr]
    )


def test_anthropic_streamed_refusal(
    scripted_server: ScriptedServer, claude: anthropic.Anthropic
) -> None:
    """A refusal streams as `message_delta` with stop_reason refusal and its stop_details."""
    scripted_server.push(ScriptedReply(refusal="I can't help with that."))

    with claude.messages.stream(model="claude-test", max_tokens=64, messages=USER) as stream:  # type: ignore[arg-type]
        final = stream.get_final_message()

    assert ([], "refusal") == (final.content, final.stop_reason)
    assert "I can't help with that." == final.stop_details.explanation  # type: ignore[union-attr]


def test_gemini_stream_ends_with_function_calls_finish_and_usage(
    scripted_server: ScriptedServer, gemini: genai.Client
) -> None:
    """Gemini's last event holds the functionCall parts, the finishReason and usageMetadata;
    the delta events before it carry neither."""
    reply = ScriptedReply(CONTENT, tool_calls=[_call('{"total": 42}')], chunk_chars=8)
    scripted_server.push(reply)

    chunks = list(gemini.models.generate_content_stream(model="gemini-test", contents="x"))

    assert [CONTENT[i : i + 8] for i in range(0, 32, 8)] == [c.text for c in chunks[:-1]]
    assert [None] * 4 == [c.usage_metadata for c in chunks[:-1]]
    assert [None] * 4 == [(c.candidates or [])[0].finish_reason for c in chunks[:-1]]
    last = chunks[-1]
    [call] = last.function_calls or []
    assert ("f", {"total": 42}) == (call.name, call.args)
    assert "STOP" == (last.candidates or [])[0].finish_reason
    assert last.usage_metadata is not None
    assert 8 == last.usage_metadata.candidates_token_count
    assert {"gemini-test"} == {c.model_version for c in chunks}


def test_async_clients_stream_incrementally(scripted_server: ScriptedServer) -> None:
    """The async openai client sees the deltas spread in time too."""
    scripted_server.push(ScriptedReply("abcdef", chunk_chars=2, chunk_delay_s=0.03))

    async def main() -> list[tuple[float, str]]:
        async with openai.AsyncOpenAI(
            base_url=scripted_server.base_url, api_key="test", max_retries=0
        ) as sdk:
            stream = await sdk.chat.completions.create(model="m", messages=USER, stream=True)  # type: ignore[arg-type]
            return [
                (time.monotonic(), chunk.choices[0].delta.content)
                async for chunk in stream
                if chunk.choices and chunk.choices[0].delta.content
            ]

    arrivals = asyncio.run(main())

    assert ["ab", "cd", "ef"] == [text for _, text in arrivals]
    assert arrivals[-1][0] - arrivals[0][0] >= 2 * 0.03 * 0.75


# ---------------------------------------------------------------------------------------------
# the wire: chunked framing, keep-alive, non-stream replies unchanged
# ---------------------------------------------------------------------------------------------


def _raw_chunks(port: int, path: str, body: dict[str, Any]) -> tuple[bytes, list[bytes]]:
    """The response head and the chunks of its chunked body, read off the socket."""
    payload = json.dumps(body).encode()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
        head = (
            f"POST {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n"
        )
        connection.sendall(head.encode() + payload)
        raw = b""
        while data := connection.recv(65536):
            raw += data
    head_bytes, rest = raw.split(b"\r\n\r\n", 1)
    chunks = []
    while True:
        size_line, rest = rest.split(b"\r\n", 1)
        size = int(size_line, 16)
        if size == 0:
            return head_bytes, chunks
        chunks.append(rest[:size])
        rest = rest[size + 2 :]


@pytest.mark.parametrize(
    ("path", "body", "first", "last"),
    [
        (
            "/v1/chat/completions",
            {"messages": USER, "stream": True},
            b"data: {",
            b"data: [DONE]\n\n",
        ),
        (
            "/v1/messages",
            {"messages": USER, "stream": True},
            b"event: message_start\n",
            b"event: message_stop\n",
        ),
        ("/v1beta/models/g:streamGenerateContent", {"contents": []}, b"data: {", b"}\r\n\r\n"),
    ],
    ids=PROVIDERS,
)
def test_each_event_is_one_chunk(
    scripted_server: ScriptedServer, path: str, body: dict[str, Any], first: bytes, last: bytes
) -> None:
    """A stream is a chunked body (no Content-Length), one complete server-sent event a chunk."""
    scripted_server.push(ScriptedReply(CONTENT, chunk_chars=10))

    head, chunks = _raw_chunks(scripted_server.port, path, body)

    lowered = head.lower()
    assert b"transfer-encoding: chunked" in lowered
    assert b"content-length" not in lowered
    assert b"content-type: text/event-stream" in lowered
    assert all(chunk.endswith((b"\n\n", b"\r\n\r\n")) for chunk in chunks)
    assert all(chunk.count(b"data: ") == 1 for chunk in chunks)
    assert chunks[0].startswith(first)
    assert last in chunks[-1]
    scripted_server.wait_idle()
    assert len(chunks) == scripted_server.requests[0].events_sent


def test_an_http_1_0_client_gets_the_stream_until_the_connection_closes(
    scripted_server: ScriptedServer,
) -> None:
    """HTTP/1.0 has no chunked bodies: the events are written as they are, then the server
    closes the connection."""
    scripted_server.push(ScriptedReply("ok"))
    payload = json.dumps({"messages": USER, "stream": True}).encode()
    with socket.create_connection(("127.0.0.1", scripted_server.port), timeout=5) as connection:
        head = f"POST /v1/chat/completions HTTP/1.0\r\nContent-Length: {len(payload)}\r\n\r\n"
        connection.sendall(head.encode() + payload)
        raw = b""
        while data := connection.recv(65536):
            raw += data

    head_bytes, body = raw.split(b"\r\n\r\n", 1)
    assert b"connection: close" in head_bytes.lower()
    assert b"transfer-encoding" not in head_bytes.lower()
    assert body.startswith(b"data: {")
    assert body.endswith(b"data: [DONE]\n\n")


def test_keep_alive_survives_a_complete_stream_and_plain_replies_keep_content_length(
    scripted_server: ScriptedServer,
) -> None:
    """After a stream that ran to its end the connection serves the next request; a reply that
    is not streamed still has a Content-Length and is recorded as not streamed."""
    scripted_server.extend(["streamed", "plain"])
    connection = http.client.HTTPConnection("127.0.0.1", scripted_server.port, timeout=5)
    try:
        body = {"messages": USER, "stream": True}
        connection.request("POST", "/v1/chat/completions", body=json.dumps(body))
        response = connection.getresponse()
        streamed = response.read()
        chunked = response.getheader("Transfer-Encoding")
        sock = connection.sock
        connection.request("POST", "/v1/chat/completions", body=json.dumps({"messages": USER}))
        response = connection.getresponse()
        plain = json.loads(response.read())
        length = response.getheader("Content-Length")
        assert sock is connection.sock
    finally:
        connection.close()

    assert "chunked" == chunked
    assert streamed.endswith(b"data: [DONE]\n\n")
    assert "plain" == plain["choices"][0]["message"]["content"]
    assert length is not None
    assert int(length) > 0
    scripted_server.wait_idle()
    streamed_request, plain_request = scripted_server.requests
    assert (True, 7, True) == (  # role chunk, 4 deltas, finish chunk, [DONE]
        streamed_request.streamed,
        streamed_request.events_sent,
        streamed_request.stream_completed,
    )
    assert (False, 0, False) == (
        plain_request.streamed,
        plain_request.events_sent,
        plain_request.stream_completed,
    )


def test_errors_are_not_streamed(scripted_server: ScriptedServer, client: openai.OpenAI) -> None:
    """An error reply to a stream request is the usual JSON error (the SDK raises on it)."""
    scripted_server.push(ScriptedReply.error(503, "busy"))

    with pytest.raises(openai.InternalServerError, match="busy"):
        list(_openai_deltas(client))

    assert not scripted_server.requests[0].streamed


def test_streaming_fields_are_validated_and_load_from_a_reply_file(tmp_path: Path) -> None:
    """Bad chunking, delays or limits are rejected; a reply file may carry the fields."""
    bad: list[dict[str, Any]] = [
        {"chunk_chars": 0},
        {"chunk_chars": True},
        {"chunk_chars": 2.5},
        {"chunk_delay_s": -1.0},
        {"chunk_delay_s": float("inf")},
        {"cut_after_chars": -1},
        {"stream_error_after_chars": "3"},
        {"stream_error": ""},
        {"cut_after_chars": 1, "stream_error_after_chars": 1},
    ]
    for fields in bad:
        with pytest.raises(ValueError, match=r"chunk_|cut_after|stream_error"):
            ScriptedReply("x", **fields)
    entry = {"content": "x", "chunk_chars": 2, "chunk_delay_s": 0.01, "cut_after_chars": 1}
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([entry]))

    assert [ScriptedReply(**entry)] == load_replies(str(replies))


# ---------------------------------------------------------------------------------------------
# properties of the pure stream planning
# ---------------------------------------------------------------------------------------------


@given(content=st.text(max_size=120), chunk_chars=st.integers(min_value=1, max_value=50))
def test_openai_deltas_join_to_the_content_in_chunk_chars_pieces(
    content: str, chunk_chars: int
) -> None:
    """For any content and chunk_chars 1..50, the content deltas join to the content, each at
    most chunk_chars long and all but the last exactly that long."""
    reply = ScriptedReply(content, chunk_chars=chunk_chars)

    events = openai_chat.stream_events("c", "m", reply, None)

    pieces = [e["choices"][0]["delta"]["content"] for e in events[1:] if e["choices"][0]["delta"]]
    assert content == "".join(pieces)
    assert all(len(piece) == chunk_chars for piece in pieces[:-1])
    assert all(0 < len(piece) <= chunk_chars for piece in pieces)
    assert -(-len(content) // chunk_chars) == len(pieces)


def _payload(frame: bytes) -> Any:
    """A frame's JSON payload (the last line, `data: ...`), None for OpenAI's `[DONE]`."""
    data = frame.decode().strip().split("\n")[-1].removeprefix("data: ")
    return None if data == "[DONE]" else json.loads(data)


def _texts(name: str, payload: dict[str, Any]) -> list[str]:
    """The streamed texts one payload carries (reasoning, content, refusal, tool arguments)."""
    if name == "openai":
        delta = payload["choices"][0]["delta"] if payload.get("choices") else {}
        texts = [delta.get(key) for key in ("reasoning_content", "content", "refusal")]
        texts += [call["function"].get("arguments") for call in delta.get("tool_calls", [])]
        return [text for text in texts if text]
    if name == "anthropic":
        delta = payload["delta"] if payload["type"] == "content_block_delta" else {}
        return [delta[key] for key in ("thinking", "text", "partial_json") if key in delta]
    candidates = payload.get("candidates", [])
    parts = candidates[0].get("content", {}).get("parts", []) if candidates else []
    return [part["text"] for part in parts if "text" in part]


def _is_error(name: str, payload: dict[str, Any]) -> bool:
    return payload.get("type") == "error" if name == "anthropic" else "error" in payload


def _finishes(name: str, payload: dict[str, Any]) -> bool:
    """True for the events of a stream's end: finish_reason, message_delta/stop, finishReason."""
    if name == "openai":
        return any(choice["finish_reason"] for choice in payload.get("choices", []))
    if name == "anthropic":
        return payload["type"] in ("message_delta", "message_stop")
    return any("finishReason" in candidate for candidate in payload.get("candidates", []))


FORMATS = {
    "openai": openai_chat.FORMAT,
    "anthropic": anthropic_messages.FORMAT,
    "gemini": gemini_generate.FORMAT,
}


@given(
    content=st.none() | st.text(max_size=60),
    reasoning=st.none() | st.text(max_size=40),
    chunk_chars=st.none() | st.integers(min_value=1, max_value=20),
    limit=st.integers(min_value=0, max_value=110),
    cut=st.booleans(),
    name=st.sampled_from(PROVIDERS),
)
def test_a_cut_or_error_sends_exactly_the_first_n_characters(
    content: str | None,
    reasoning: str | None,
    chunk_chars: int | None,
    limit: int,
    cut: bool,
    name: str,
) -> None:
    """In every format, a stream stopped at N characters carries exactly the first N characters
    of reasoning + content, in deltas of at most chunk_chars, then the cut or one error event,
    and none of the events that end a stream (finish, usage, `[DONE]`)."""
    stop = {"cut_after_chars": limit} if cut else {"stream_error_after_chars": limit}
    reply = ScriptedReply(content, reasoning=reasoning, chunk_chars=chunk_chars, **stop)
    wire = FORMATS[name]
    stream = wire.stream(1, "m", reply, scripted_usage(reply, 0), {"stream": True})

    planned = plan(stream, reply)

    payloads = [_payload(frame) for frame in planned.frames]
    assert None not in payloads
    texts = [text for payload in payloads for text in _texts(name, payload)]
    assert ((reasoning or "") + (content or ""))[:limit] == "".join(texts)
    assert chunk_chars is None or all(len(text) <= chunk_chars for text in texts)
    assert cut == planned.cut
    errors = [_is_error(name, payload) for payload in payloads]
    assert ([False] * len(errors) if cut else [False] * (len(errors) - 1) + [True]) == errors
    assert not any(_finishes(name, payload) for payload in payloads)


@given(
    content=st.none() | st.text(max_size=60),
    reasoning=st.none() | st.text(max_size=40),
    chunk_chars=st.none() | st.integers(min_value=1, max_value=20),
    name=st.sampled_from(PROVIDERS),
)
def test_an_uncut_stream_sends_every_text_and_ends(
    content: str | None, reasoning: str | None, chunk_chars: int | None, name: str
) -> None:
    """Without a cut or error, every format streams all of reasoning + content (reasoning
    first), then its ending events (OpenAI's `[DONE]` last)."""
    reply = ScriptedReply(content, reasoning=reasoning, chunk_chars=chunk_chars)
    stream = FORMATS[name].stream(1, "m", reply, scripted_usage(reply, 0), {"stream": True})

    planned = plan(stream, reply)

    payloads = [_payload(frame) for frame in planned.frames]
    if name == "openai":
        assert None is payloads.pop()
    texts = [text for payload in payloads for text in _texts(name, payload)]
    assert (reasoning or "") + (content or "") == "".join(texts)
    assert not planned.cut
    assert _finishes(name, payloads[-1])


THINKING_START = ["message_start", "ping", "content_block_start", "thinking_delta:abc"]


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        (0, ["message_start", "ping"]),
        (3, THINKING_START),
        (4, [*THINKING_START, "thinking_delta:d"]),
        (
            7,
            [
                *THINKING_START,
                "thinking_delta:def",
                "signature_delta",
                "content_block_stop",
                "content_block_start",
                "text_delta:x",
            ],
        ),
    ],
)
def test_a_stop_falls_right_after_the_delta_reaching_n(limit: int, expected: list[str]) -> None:
    """The stream stops right after the delta that reaches N (shortened to end there), with the
    events between deltas sent as they come; N = 0 sends only the opening events."""
    reply = ScriptedReply("xyz", reasoning="abcdef", chunk_chars=3, stream_error_after_chars=limit)
    stream = anthropic_messages.stream(1, "m", reply, scripted_usage(reply, 0), {})

    *payloads, error = [_payload(frame) for frame in plan(stream, reply).frames]

    def name(payload: dict[str, Any]) -> str:
        delta = payload.get("delta", {})
        texts = [delta[key] for key in ("thinking", "text") if key in delta]
        kind = delta.get("type") if payload["type"] == "content_block_delta" else payload["type"]
        return ":".join([kind, *texts])

    assert expected == [name(payload) for payload in payloads]
    assert "error" == error["type"]


@given(
    arguments=st.dictionaries(
        st.text(max_size=5),
        st.none() | st.booleans() | st.integers() | st.text(max_size=10),
        max_size=4,
    ),
    chunk_chars=st.integers(min_value=1, max_value=7),
)
def test_anthropic_input_json_deltas_rebuild_the_arguments(
    arguments: dict[str, Any], chunk_chars: int
) -> None:
    """The `input_json_delta` pieces join to the tool call's arguments text, whatever it is."""
    text = json.dumps(arguments)
    reply = ScriptedReply(tool_calls=[_call(text)], chunk_chars=chunk_chars)
    stream = anthropic_messages.stream(1, "m", reply, scripted_usage(reply, 0), {})

    payloads = [
        event.make(event.text) if isinstance(event, Text) else event for event in stream.events
    ]

    partial = [
        p["delta"]["partial_json"]
        for p in payloads
        if p["type"] == "content_block_delta" and p["delta"]["type"] == "input_json_delta"
    ]
    assert text == "".join(partial)
    assert arguments == json.loads("".join(partial))
    [start] = [p for p in payloads if p["type"] == "content_block_start"]
    assert {"type": "tool_use", "id": "call_7", "name": "f", "input": {}} == start["content_block"]


def test_gemini_error_codes_follow_the_status_name() -> None:
    """Gemini's in-stream error code is Google's for the status name (500 when unknown)."""
    reply = ScriptedReply("x")
    stream = gemini_generate.stream(1, "m", reply, scripted_usage(reply, 0), {})

    assert [500, 503, 429, 500] == [
        stream.error(kind, 0)["error"]["code"]
        for kind in ("server_error", "UNAVAILABLE", "RESOURCE_EXHAUSTED", "WHATEVER")
    ]
