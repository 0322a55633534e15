"""The provider boundary: one module per wire format, each owning everything that format means
(request shaping, reading replies and stream chunks, finish reasons, refusals and filters,
reasoning, usage buckets, batch lines, where credentials sit). The core knows none of them: it
asks the registry (`healjson._core.wire.formats`), which this package fills
(`registry.register`) when `healjson` is imported. No provider SDK is imported here.

A new wire format is one module here and one line in `FORMATS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from healjson._core.wire.formats import WireFormat
from healjson._core.wire.registry import register

from . import anthropic_messages, gemini_generate, openai_chat, openai_responses
from ._batch_results import Result

__all__ = ["BATCH", "FORMATS", "BatchLines", "batch_lines"]

# dispatch order: the first format whose test matches an object reads it (a chat message dict,
# which any `content` makes, comes last)
FORMATS: tuple[WireFormat, ...] = (
    openai_chat.FORMAT,
    openai_responses.FORMAT,  # before Anthropic's: its events have a string `type` too
    anthropic_messages.FORMAT,
    gemini_generate.FORMAT,
    openai_chat.MESSAGE,
)

for _format in FORMATS:
    register(_format)


@dataclass(frozen=True, slots=True)
class BatchLines:
    """A provider's batch lines: a request's body (JSON asked for in a tier, which a provider
    without tiers may ignore), the input line that carries it, and a result line (a JSON
    object) read as the request's `Result` (None: no result, the request runs again)."""

    body: Callable[[Any, Any, Sequence[dict[str, Any]], Mapping[str, Any]], dict[str, Any]]
    line: Callable[[str, Mapping[str, Any]], dict[str, Any]]
    result: Callable[[Mapping[str, Any]], Result | None]


# the batch APIs, by the provider name `healjson batch --batch-api` uses
BATCH: Mapping[str, BatchLines] = {
    "openai": BatchLines(openai_chat.batch_body, openai_chat.batch_line, openai_chat.batch_result),
    "anthropic": BatchLines(
        anthropic_messages.batch_body,
        anthropic_messages.batch_line,
        anthropic_messages.batch_result,
    ),
    # the same output and error file lines as chat's: a `response` (a Response as its body)
    "openai_responses": BatchLines(
        openai_responses.batch_body, openai_responses.batch_line, openai_chat.batch_result
    ),
}


def batch_lines(provider: str, endpoint: str | None = None) -> BatchLines:
    """The batch lines of `provider` (a name of `BATCH`); OpenAI's `/v1/responses` endpoint has
    its own."""
    if endpoint == openai_responses.BATCH_ENDPOINT:
        return BATCH["openai_responses"]
    return BATCH[provider]
