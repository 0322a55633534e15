"""The wire formats the scripted server speaks, one module each; pure functions, no sockets.

`WIRE_FORMATS` is what the server's handler routes model requests on: OpenAI chat completions,
OpenAI's Responses API, Anthropic Messages, Gemini `generateContent` and Ollama's chat, each a
`WireFormat`.
Each format also describes its streamed replies as an `_sse.SseStream`, which `_sse.plan` turns
into the frames to write (chunking, scripted cuts and in-stream errors).
"""

from __future__ import annotations

from typing import Final

from . import anthropic_messages, gemini_generate, ollama_chat, openai_chat, openai_responses
from ._common import JSON_TYPE, UnservableReply, WireFormat, content_text, usage

__all__ = [
    "JSON_TYPE",
    "WIRE_FORMATS",
    "UnservableReply",
    "WireFormat",
    "anthropic_messages",
    "content_text",
    "gemini_generate",
    "ollama_chat",
    "openai_chat",
    "openai_responses",
    "usage",
]

WIRE_FORMATS: Final = (
    openai_chat.FORMAT,
    openai_responses.FORMAT,
    anthropic_messages.FORMAT,
    gemini_generate.FORMAT,
    ollama_chat.FORMAT,
)
