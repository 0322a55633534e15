"""Stream chunks as the engine's own `Delta`s: what one piece of a streamed answer adds.

Read by shape, without importing any SDK: a text piece (`str` / `bytes`), a `Delta` itself, or
a provider's chunk or stream event (object or dict), read by the wire format that recognises it
(`healjson._core.wire.formats`: the formats of `healjson._providers`, tried in registration order).

A stream's `bytes` chunks are one UTF-8 text cut anywhere, a character's bytes split between
two chunks too: a stream is read by one `ChunkReader` (one incremental decoder, its state
carried from chunk to chunk). Bytes that are not UTF-8 are never read as U+FFFD: a character
made up would be in a healed value as if the model had sent it, so they raise `NotUtf8`, which
says where (the stream's call then fails, what had arrived kept).

A stream reads as its unstreamed reply would: a format's chunk reader keeps only the answer's
pieces (of interleaved choices, choice 0), and a `refusal` stop withdraws the text streamed
before it (`withdrawn`).
"""

from __future__ import annotations

import codecs
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Final

from healjson._core.wire.formats import checked, formats, load_for, pending
from healjson._core.wire.reply import Reply, ToolCall, Usage

__all__ = [
    "SDK_CHUNKS",
    "ChunkReader",
    "Delta",
    "NotUtf8",
    "read_chunk",
    "read_sdk_chunk",
    "withdrawn",
]


@dataclass(frozen=True, slots=True)
class Delta:
    """One piece of a streamed answer. Every field is optional; `usage` is a piece of the call's
    usage (providers send running or final totals: a format's reader marks a running one, which
    the provider may still revise, `estimated`); `usage_partial`: the usage states some of its
    counts only (a provider that sends its counts in parts, the input's first and the output's
    at the end): True, its nonzero ones; five booleans, the ones the provider sent (a stated 0
    is a count). The pieces add up by one rule (`UsageTally`: a final count beats a running
    one, the latest of each kind wins, the usage is exact once final prompt and completion
    counts came). The rest are appended or set."""

    text: str = ""
    reasoning: str = ""
    tool_arguments: str = ""
    tool_name: str | None = None
    refusal: str = ""
    finish_reason: str | None = None
    usage: Usage | None = None
    model: str | None = None
    usage_partial: bool | tuple[bool, bool, bool, bool, bool] = False
    tool_calls: tuple[ToolCall, ...] = ()
    """Whole tool calls (a format that sends each call whole in one chunk), each a call of
    its own. `tool_name` / `tool_arguments` are pieces of one call instead."""
    tool_index: int | None = None
    """The provider's identity of the call `tool_name` / `tool_arguments` are a piece of (its
    `index`: a chat delta's call index, a content block's index), None when the wire
    gives none. One rule (`StreamSession`, as the tool-call collectors): a piece joins the call
    at its identity (`tool_index`, else `tool_id`), a piece at a new identity (or carrying
    another id than that call's) starts a call, whatever its name; a piece with no identity
    joins the call before it unless it names another tool."""
    tool_id: str | None = None
    """The id of the call the piece belongs to, where the piece carries it (its first)."""
    tool_pieces: tuple[Delta, ...] = ()
    """Pieces of further calls the same chunk carries (OpenAI chat may send several calls'
    pieces in one delta), each a `Delta` of `tool_name`, `tool_arguments`, `tool_index`,
    `tool_id`, read after this one's."""


_FORMATS = formats()  # the registry's own list: formats registered later are in it too
_PENDING = pending()  # the providers not imported yet (the registry's own list)
_CHECKED = checked()  # classes already looked up among them


def read_chunk(chunk: Any) -> Delta:
    """The `Delta` of one chunk read alone (a stream's chunks: `ChunkReader`); raises TypeError
    for a shape it does not know, `NotUtf8` for bytes that are not whole UTF-8 text."""
    if type(chunk) in SDK_CHUNKS:
        return read_sdk_chunk(chunk)
    if isinstance(chunk, Delta):
        return chunk
    if isinstance(chunk, str):
        return Delta(text=chunk)
    if isinstance(chunk, bytes | bytearray):
        reader = ChunkReader()
        delta = reader.read(chunk)
        reader.end()
        return delta
    return _by_shape(chunk)


class NotUtf8(ValueError):
    """A stream's bytes that are not UTF-8 text: an invalid byte, or a character's bytes left
    incomplete (by the stream's end, or by a chunk that is no bytes); the message says where
    (the byte's offset in the stream, the characters read before it). `text`: the text of the
    chunk's bytes before the fault (what arrived of it)."""

    text: str = ""


_DECODER: Final = codecs.getincrementaldecoder("utf-8")


class ChunkReader:
    """One stream's chunks, read in order (`read_chunk`), its `bytes` chunks decoded as one
    UTF-8 text by one incremental decoder (a character split between chunks read whole);
    `end()` when the stream ends. Raises `NotUtf8` where the bytes are not UTF-8."""

    __slots__ = ("_bytes", "_chars", "_decoder", "_held")

    def __init__(self) -> None:
        self._decoder: codecs.IncrementalDecoder | None = None
        self._bytes = 0  # bytes taken so far
        self._chars = 0  # characters decoded from them
        self._held = False  # a character's first bytes wait for the rest

    def read(self, chunk: Any) -> Delta:
        """The `Delta` of the stream's next chunk."""
        if isinstance(chunk, bytes | bytearray):
            return Delta(text=self._decode(bytes(chunk), False))
        if self._held:  # a character's bytes cut by a chunk that is no bytes
            self._decode(b"", True, "a character's bytes cut by a chunk that is no bytes")
        return read_chunk(chunk)

    def end(self) -> None:
        """The stream ended: raises `NotUtf8` when a character's bytes were left incomplete."""
        if self._held:
            self._decode(b"", True, "the stream ended in the middle of a character")

    def _decode(self, data: bytes, final: bool, why: str | None = None) -> str:
        decoder = self._decoder
        if decoder is None:
            decoder = self._decoder = _DECODER("strict")
        waiting = len(decoder.getstate()[0])
        try:
            text = decoder.decode(data, final)
        except UnicodeDecodeError as exc:
            at = self._bytes - waiting + exc.start  # the decoder read `waiting` bytes first
            bad = exc.object[exc.start : exc.end].hex(" ")
            text = bytes(exc.object[: exc.start]).decode("utf-8", "replace")  # valid: read
            reason = exc.reason if why is None else why
            error = NotUtf8(
                f"the stream's bytes are not UTF-8 text: {reason} ({bad}) at byte {at} of the "
                f"stream, after {self._chars + len(text)} characters"
            )
            error.text = text
            raise error from None
        self._bytes += len(data)
        self._chars += len(text)
        self._held = bool(decoder.getstate()[0])
        return text


# the SDK's pydantic chunk classes seen so far, read by the registered fast reader (every chunk
# of a stream is one; the generic lookups cost more than the SDK's own parsing of it)
SDK_CHUNKS: set[type] = set()


def _by_shape(chunk: Any) -> Delta:
    if _PENDING and type(chunk) not in _CHECKED:
        load_for(chunk)  # a pending provider's chunk: its module first
    for fmt in _FORMATS:
        if fmt.read_chunk is not None and fmt.reads_chunk(chunk):
            return fmt.read_chunk(chunk)
    raise TypeError(f"cannot read a stream chunk from {type(chunk).__name__}")


# the fast reader of `SDK_CHUNKS`, the one a format names (`registry.register` installs it);
# until then a stand-in that reads by shape
read_sdk_chunk: Callable[[Any], Delta] = _by_shape


def withdrawn(reply: Reply) -> Reply:
    """A streamed reply as its unstreamed one reads: a `refusal` stop (a provider's own) withdraws
    the answer text streamed before it, which becomes the refusal when the stop gave none."""
    if reply.finish_reason != "refusal":
        return reply
    return replace(reply, content=None, refusal=reply.refusal or reply.content or "refused")
