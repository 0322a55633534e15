"""What a hostile probe of healed streams found, fixed.

* A stream's `bytes` chunks are one UTF-8 text, a character's bytes split between chunks too
  (one incremental decoder per streamed call); bytes that are not UTF-8 fail the call visibly
  (`api_error`, the error saying where), never become U+FFFD in a healed value.
* A tool-call stream closed from another thread or task stops its reader at the next event
  and closes the connection there, as a JSON stream does (`close()` / `aclose()` raise nothing).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import openai
import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Degraded, Healed, Healer
from healjson._core.run.streams import ToolCallStream
from healjson._core.stream.events import Text
from healjson.testing import ScriptedReply, ScriptedServer
from pinned import pinned

USER = [{"role": "user", "content": "x"}]


class Note(BaseModel):
    summary: str


def healed(chunks: list[Any], target: Any = Note) -> Any:
    """The outcome of a healed stream whose one call streams `chunks`."""
    stream = Healer(target).stream(lambda messages, **params: iter(chunks), USER)
    for _ in stream:
        pass
    return stream.outcome


def as_bytes(summary: str) -> bytes:
    """A `Note` answer as UTF-8 bytes (the text written as is, not escaped)."""
    return json.dumps({"summary": summary}, ensure_ascii=False).encode()


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    """`data` cut at the byte offsets `cuts` (each taken modulo its length + 1)."""
    at = sorted({cut % (len(data) + 1) for cut in cuts})
    edges = [0, *at, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(edges) if b > a]


# -- bytes chunks -----------------------------------------------------------------------------


def test_a_character_split_between_byte_chunks_is_read_whole() -> None:
    """Two- and four-byte characters cut between chunks heal to the text the model sent."""
    chunks = [b'{"summary": "h\xc3', b"\xa9llo \xf0\x9f", b'\x98\x80"}']

    outcome = healed(chunks)

    assert isinstance(outcome, Healed)
    assert "héllo 😀" == outcome.value.summary
    assert "\ufffd" not in outcome.attempts[0].raw_text


@pinned(max_examples=100)
@given(st.text(max_size=60), st.lists(st.integers(min_value=0, max_value=400), max_size=12))
@example("é", [14])
@example("😀😀", [14, 15, 16, 17, 18])
@example("a\u0000\u2028\U0010ffff", [1, 2, 3, 15, 16, 17, 18, 19, 20])
def test_any_split_of_utf8_bytes_heals_as_the_whole_text(summary: str, cuts: list[int]) -> None:
    """Any UTF-8 text cut into byte chunks anywhere heals to the same value as the whole text
    sent as one `str` chunk."""
    data = as_bytes(summary)

    pieces = healed(split(data, cuts))
    whole = healed([data.decode()])

    assert isinstance(pieces, Healed)
    assert isinstance(whole, Healed)
    assert pieces.value == whole.value == Note(summary=summary)
    assert pieces.attempts[0].raw_text == whole.attempts[0].raw_text


def test_an_async_stream_reads_a_split_character_whole() -> None:
    """`astream` over async byte chunks reads a character cut between chunks whole."""

    async def chunks() -> AsyncIterator[bytes]:
        for chunk in (b'{"summary": "\xe2', b"\x82", b'\xac 5"}'):
            yield chunk

    async def run() -> Any:
        stream = Healer(Note).astream(lambda messages, **params: chunks(), USER)
        return await stream.finish()

    outcome = asyncio.run(run())

    assert isinstance(outcome, Healed)
    assert "€ 5" == outcome.value.summary


@pytest.mark.parametrize(
    ("chunks", "words", "at"),
    [
        ([b'{"summary": "ab\xffcd"}'], "invalid start byte (ff)", "at byte 15"),
        ([b'{"summary": "ab', b'\xc3(cd"}'], "invalid continuation byte (c3)", "at byte 15"),
        ([b'{"summary": "ab\xe2\x82'], "ended in the middle of a character", "at byte 15"),
        ([b'{"summary": "ab\xc3', 'cd"}'], "cut by a chunk that is no bytes", "at byte 15"),
    ],
    ids=["invalid-byte", "bad-continuation", "cut-at-the-end", "cut-by-text"],
)
def test_bytes_that_are_not_utf8_fail_the_call_saying_where(
    chunks: list[Any], words: str, at: str
) -> None:
    """Bytes that are not UTF-8 text degrade the run with `api_error`, the error naming the
    fault, the byte and its offset; what was read before it is kept, never a U+FFFD."""
    outcome = healed(chunks)

    assert isinstance(outcome, Degraded)
    assert "api_error" == outcome.reason
    (attempt,) = outcome.attempts
    assert "not UTF-8" in (attempt.error or "")
    assert words in (attempt.error or "")
    assert at in (attempt.error or "")
    assert (attempt.raw_text or "").startswith('{"summary": "ab')
    assert "\ufffd" not in (attempt.raw_text or "")


@pinned(max_examples=75)
@given(
    st.text(max_size=30),
    st.sampled_from([b"\xff", b"\xfe", b"\xc0", b"\xc1", b"\xf5", b"\x80"]),
    st.integers(min_value=0, max_value=200),
    st.lists(st.integers(min_value=0, max_value=400), max_size=8),
)
@example("é", b"\x80", 14, [15])
def test_an_invalid_byte_anywhere_never_heals(
    summary: str, bad: bytes, where: int, cuts: list[int]
) -> None:
    """A byte that is never UTF-8 here (at a character's boundary), in any split, fails the
    call; no attempt's text holds a U+FFFD."""
    data = as_bytes(summary)
    text = data.decode()
    boundary = len(text[: where % (len(text) + 1)].encode())  # between two characters
    corrupt = data[:boundary] + bad + data[boundary:]

    outcome = healed(split(corrupt, cuts))

    assert isinstance(outcome, Degraded)
    assert "api_error" == outcome.reason
    assert all("\ufffd" not in (a.raw_text or "") for a in outcome.attempts)


def test_a_chunk_reader_is_one_streams() -> None:
    """Each `ChunkReader` keeps its own decoder: a character's first bytes in one reader never
    join another's; `read_chunk` reads a lone bytes chunk as whole text or refuses it."""
    from healjson._core.wire.delta import ChunkReader, NotUtf8, read_chunk  # new in this fix

    first, second = ChunkReader(), ChunkReader()

    assert "" == first.read(b"\xc3").text
    assert "a" == second.read(b"a").text
    second.end()
    assert "é" == first.read(b"\xa9").text
    first.end()
    assert "é" == read_chunk("é".encode()).text
    with pytest.raises(NotUtf8, match="middle of a character"):
        read_chunk(b"\xc3")


# -- closing a tool-call stream from elsewhere ---------------------------------------------------

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
CALL = {"id": "c1", "type": "function", "function": {"name": "get_weather",
        "arguments": '{"city": "Paris"}'}}  # fmt: skip
SLOW_TEXT = "Let me look that up for you right now, please wait a moment " * 2


def slow() -> ScriptedReply:
    """A text-and-call answer of many chunks, each after a pause: read for about 3 s."""
    return ScriptedReply(
        content=SLOW_TEXT,
        tool_calls=[CALL],
        finish_reason="tool_calls",
        chunk_chars=3,
        chunk_delay_s=0.05,
    )


def test_a_tool_call_stream_closed_from_another_thread_stops_its_reader() -> None:
    """`close()` while another thread iterates a tool-call stream: no error; the reader stops
    at its next piece, long before the end; the server saw the stream abandoned; `finish()`
    says the stream was closed."""
    with (
        ScriptedServer([slow()]) as server,
        openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk,
    ):
        stream = healjson.wrap(sdk).chat.completions.create(
            model="m", messages=USER, tools=TOOLS, heal_tools=True, stream=True
        )
        read: list[str] = []
        reader = threading.Thread(target=lambda: read.extend(stream))
        reader.start()
        time.sleep(0.4)
        started = time.perf_counter()
        stream.close()
        reader.join(5)
        stopped = time.perf_counter() - started
        server.wait_idle(3)

        assert not reader.is_alive()
        assert stopped < 1.0
        assert len("".join(read)) < len(SLOW_TEXT)
        assert not server.requests[0].stream_completed
        with pytest.raises(RuntimeError, match="closed"):
            stream.finish()


def test_a_tool_call_stream_aclosed_from_another_task_stops_its_reader() -> None:
    """`aclose()` while another task iterates a tool-call stream: no error (no "asynchronous
    generator is already running"); the reader stops at its next piece, before the end."""

    async def run() -> tuple[int, bool, float]:
        with ScriptedServer([slow()]) as server:
            sdk = openai.AsyncOpenAI(base_url=server.base_url, api_key="k", max_retries=0)
            try:
                stream = await healjson.wrap(sdk).chat.completions.create(
                    model="m", messages=USER, tools=TOOLS, heal_tools=True, stream=True
                )

                async def consume() -> int:
                    return len("".join([piece async for piece in stream]))

                task = asyncio.create_task(consume())
                await asyncio.sleep(0.4)
                started = time.perf_counter()
                await stream.aclose()
                read = await asyncio.wait_for(task, 5)
                stopped = time.perf_counter() - started
                await asyncio.to_thread(server.wait_idle, 3)
                with pytest.raises(RuntimeError, match="closed"):
                    await stream.finish()
                return read, bool(server.requests[0].stream_completed), stopped
            finally:
                await sdk.close()

    read, completed, stopped = asyncio.run(run())

    assert read < len(SLOW_TEXT)
    assert not completed
    assert stopped < 1.0


def test_a_tool_call_stream_closed_between_reads_is_closed() -> None:
    """`close()` by the thread that reads it, between two pieces, ends the iteration and
    closes the events (as `HealStream.close` does)."""
    closed: list[bool] = []

    def events() -> Iterator[Any]:
        try:
            for piece in ("a", "b", "c"):
                yield Text(piece)
        finally:
            closed.append(True)

    stream = ToolCallStream(events())
    pieces = iter(stream)
    assert "a" == next(pieces)
    stream.close()

    assert [] == list(pieces)
    assert [True] == closed
