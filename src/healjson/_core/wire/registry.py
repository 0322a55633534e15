"""Registering a wire format: `register(fmt)` adds it to the core's registry (`wire`) and makes
its fast readers the core's own (`reply.read_completion`, `stream.chunks.read_sdk_chunk`), so the
drivers call them directly for every object of a class already read. Only the first format naming
a `fast_reply` gets that slot; another format's generic reader hands its fast reader to
`reply.remember_reader` for the SDK classes it reads (`to_reply` reads those by one lookup)."""

from __future__ import annotations

import math

from . import delta as chunks
from . import formats as wire
from . import reply

__all__ = ["register"]


def register(fmt: wire.WireFormat, rank: float = math.inf) -> None:
    """Add `fmt` at `rank` in the dispatch order (by default after the formats registered);
    registering a format twice is a no-op. A format naming the core's fast readers registers
    before any reply is read (`healjson` registers its default format on import: the drivers
    bind the fast reader when they are imported); the others may come any time."""
    if any(known is fmt for known in wire.formats()):
        return
    first_fast = not any(known.fast_reply is not None for known in wire.formats())
    wire.add(fmt, rank)
    if fmt.fast_reply is not None and first_fast:
        reply.read_completion = fmt.fast_reply  # the first format's: `SDK_COMPLETIONS`' reader
    if fmt.fast_chunk is not None:
        chunks.read_sdk_chunk = fmt.fast_chunk
