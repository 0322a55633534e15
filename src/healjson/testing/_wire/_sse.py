"""Streamed replies, whatever the wire format: text split into deltas, and the scripted end.

A wire format describes a streamed reply as an `SseStream`: its events in order, each a JSON
payload or a `Text` delta (a payload carrying a piece of streamed text, built from the text so a
scripted cut can send a shorter piece), how one payload is framed as a server-sent event, the
format's in-stream error event and the sentinel that ends a complete stream (OpenAI's
`data: [DONE]`). `plan` turns it into the frames the server writes, one at a time: all of them,
or, when the reply scripts `cut_after_chars` or `stream_error_after_chars`, the frames up to that
many characters of streamed text, then the error event or a dropped connection.

Pure functions, no sockets: the server's handler does the writing, delays and flushing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from healjson.testing._replies import ScriptedReply

SSE_TYPE: Final = "text/event-stream; charset=utf-8"
KEEPALIVE_COMMENT: Final = b": keep-alive\n\n"  # an SSE comment: clients skip it
DEFAULT_PIECES: Final = 4  # without `chunk_chars`, a text is streamed in at most this many deltas


@dataclass(frozen=True, slots=True)
class Text:
    """A delta event carrying `text`: its payload is `make(text)` (or `make` of a prefix of it,
    when a scripted cut or error falls inside the delta)."""

    text: str
    make: Callable[[str], dict[str, Any]]


Event = dict[str, Any] | Text


@dataclass(frozen=True, slots=True)
class SseStream:
    """A streamed reply in one wire format.

    `events` are its events in order; `encode` frames one payload as a server-sent event;
    `error(stream_error, sent_chars)` is the payload of the format's in-stream error event;
    `done` is written after the last event of a stream that runs to its end (empty: none);
    the first `opening` events come before any text (a stopped stream sends them all);
    `keepalive` is the frame the format sends to keep a quiet connection open (an SSE comment
    by default; empty: the format has none); `content_type` the stream's (a format that streams
    lines of JSON rather than server-sent events says so).
    """

    events: list[Event]
    encode: Callable[[Mapping[str, Any]], bytes]
    error: Callable[[str, int], dict[str, Any]]
    done: bytes = b""
    opening: int = 0
    keepalive: bytes = KEEPALIVE_COMMENT
    content_type: str = SSE_TYPE


@dataclass(frozen=True, slots=True)
class Planned:
    """The frames to write, in order, and how the stream ends: `cut` drops the connection after
    the last frame instead of ending the response body. The first `answer` frames are the
    stream's events (the rest, its end: OpenAI's `[DONE]`); `keepalive` as in `SseStream`."""

    frames: list[bytes]
    cut: bool = False
    answer: int = -1
    keepalive: bytes = b""
    content_type: str = SSE_TYPE

    @property
    def events(self) -> int:
        """How many frames come before the stream's end (all of them unless `answer` says)."""
        return len(self.frames) if self.answer < 0 else self.answer


def pieces(text: str, chunk_chars: int | None) -> list[str]:
    """`text` split into deltas of `chunk_chars` characters (the last may be shorter), or into at
    most `DEFAULT_PIECES` deltas of equal size when `chunk_chars` is None; `[]` for `""`."""
    size = chunk_chars if chunk_chars is not None else -(-len(text) // DEFAULT_PIECES)
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


def rendered(events: list[Event]) -> list[dict[str, Any]]:
    """The payloads of `events`, every delta carrying its whole text."""
    return [event.make(event.text) if isinstance(event, Text) else event for event in events]


def plan(stream: SseStream, reply: ScriptedReply) -> Planned:
    """The frames `reply` streams: every event then `done`; or, with `cut_after_chars` or
    `stream_error_after_chars` = N, the events up to the delta that brings the streamed text to N
    characters (that delta shortened to end there), followed by the error event or the cut.

    A stream stopped at N = 0, or one streaming no text at all, sends only its `opening` events
    (OpenAI's role chunk, Anthropic's `message_start` and `ping`; Gemini has none); one streaming
    fewer than N characters stops after its last delta.
    """
    limit = reply.cut_after_chars
    if limit is None:
        limit = reply.stream_error_after_chars
    if limit is None:
        frames = [stream.encode(payload) for payload in rendered(stream.events)]
        if stream.done:
            return Planned(
                [*frames, stream.done],
                answer=len(frames),
                keepalive=stream.keepalive,
                content_type=stream.content_type,
            )
        return Planned(frames, keepalive=stream.keepalive, content_type=stream.content_type)
    deltas = [index for index, event in enumerate(stream.events) if isinstance(event, Text)]
    frames = [stream.encode(payload) for payload in rendered(stream.events[: stream.opening])]
    sent = 0
    for event in stream.events[stream.opening : deltas[-1] + 1 if deltas and limit else 0]:
        if not isinstance(event, Text):
            frames.append(stream.encode(event))
            continue
        text = event.text[: limit - sent]
        frames.append(stream.encode(event.make(text)))
        sent += len(text)
        if sent >= limit:
            break
    if reply.cut_after_chars is not None:
        return Planned(
            frames, cut=True, keepalive=stream.keepalive, content_type=stream.content_type
        )
    error = stream.encode(stream.error(reply.stream_error, sent))
    return Planned([*frames, error], keepalive=stream.keepalive, content_type=stream.content_type)


def error_message(stream_error: str, sent_chars: int) -> str:
    """The message of a scripted in-stream error."""
    return f"Scripted {stream_error} in the stream after {sent_chars} characters."
