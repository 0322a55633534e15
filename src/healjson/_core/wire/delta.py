"""Stream chunks as the engine's own `Delta`s: what one piece of a streamed answer adds.

Read by shape, without importing any SDK: a text piece (`str` / `bytes`), a `Delta` itself, or
a provider's chunk or stream event (object or dict), read by the wire format that recognises it
(`healjson._core.wire.formats`: the formats of `healjson._providers`, tried in registration order).

A stream reads as its unstreamed reply would: a format's chunk reader keeps only the answer's
pieces (of interleaved choices, choice 0), and a `refusal` stop withdraws the text streamed
before it (`withdrawn`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from healjson._core.wire.formats import checked, formats, load_for, pending
from healjson._core.wire.reply import Reply, ToolCall, Usage

__all__ = ["SDK_CHUNKS", "Delta", "read_chunk", "read_sdk_chunk", "withdrawn"]


@dataclass(frozen=True, slots=True)
class Delta:
    """One piece of a streamed answer. Every field is optional; `usage` is a piece of the call's
    usage (providers send running or final totals: a format's reader marks a running one, which
    the provider may still revise, `estimated`); `usage_partial`: the usage states its nonzero
    counts only (a provider that sends its counts in parts, the input's first and the output's
    at the end). The pieces add up by one rule (`UsageTally`: a final count beats a running
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
    usage_partial: bool = False
    tool_calls: tuple[ToolCall, ...] = ()
    """Whole tool calls (a format that sends each call whole in one chunk), each a call of
    its own. `tool_name` / `tool_arguments` are pieces of one call instead: a delta naming
    another tool than the call before it starts a call of its own."""


_FORMATS = formats()  # the registry's own list: formats registered later are in it too
_PENDING = pending()  # the providers not imported yet (the registry's own list)
_CHECKED = checked()  # classes already looked up among them


def read_chunk(chunk: Any) -> Delta:
    """The `Delta` of one chunk; raises TypeError for a shape it does not know."""
    if type(chunk) in SDK_CHUNKS:
        return read_sdk_chunk(chunk)
    if isinstance(chunk, Delta):
        return chunk
    if isinstance(chunk, str):
        return Delta(text=chunk)
    if isinstance(chunk, bytes | bytearray):
        return Delta(text=bytes(chunk).decode("utf-8", "replace"))
    return _by_shape(chunk)


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
