"""The provider boundary: one module per wire format, each owning everything that format means
(request shaping, reading replies and stream chunks, finish reasons, refusals and filters,
reasoning, usage buckets, batch lines, where credentials sit). The core knows none of them: it
asks the registry (`healjson._core.wire`), which this package fills (`registry.register`) when
`healjson` is imported. No provider SDK is imported here.

A new wire format is one module here and one line in `FORMATS`.
"""

from __future__ import annotations

from healjson._core.registry import register
from healjson._core.wire import WireFormat

from . import anthropic_messages, gemini_generate, openai_chat

__all__ = ["FORMATS"]

# dispatch order: the first format whose test matches an object reads it (a chat message dict,
# which any `content` makes, comes last)
FORMATS: tuple[WireFormat, ...] = (
    openai_chat.FORMAT,
    anthropic_messages.FORMAT,
    gemini_generate.FORMAT,
    openai_chat.MESSAGE,
)

for _format in FORMATS:
    register(_format)
