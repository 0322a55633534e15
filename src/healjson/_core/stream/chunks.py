"""Stream chunks as the engine's own `Delta`s: what one piece of a streamed answer adds.

Read by shape, without importing any SDK: a text piece (`str` / `bytes`), an OpenAI
`ChatCompletionChunk` (object or dict: `choices[0].delta`, the final usage chunk), an Anthropic
stream event (`message_start`, `content_block_delta`, `message_delta`), a Gemini
`GenerateContentResponse` piece, or a `Delta` itself.

A stream read as its unstreamed reply would be: of interleaved choices (`n` > 1) only choice 0
is the answer (the others' usage still counts); Anthropic's `refusal` stop withdraws the text
streamed before it (`withdrawn`); a Gemini piece carrying only metadata adds nothing, and one
whose prompt was blocked (`promptFeedback.blockReason`) is a content filter.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel

from healjson._core.reply import (
    _ANTHROPIC_FINISH,
    Reply,
    Usage,
    _get,
    _opt_str,
    _usage,
    anthropic_usage,
)
from healjson._core.reply import (
    _gemini as _gemini_reply,
)

__all__ = ["EXTRA_EVENTS", "Delta", "read_chunk", "withdrawn"]


@dataclass(frozen=True, slots=True)
class Delta:
    """One piece of a streamed answer. Every field is optional; `usage` replaces the usage
    known so far (providers send running or final totals), the rest are appended or set."""

    text: str = ""
    reasoning: str = ""
    tool_arguments: str = ""
    tool_name: str | None = None
    refusal: str = ""
    finish_reason: str | None = None
    usage: Usage | None = None
    model: str | None = None


_EMPTY = Delta()


def read_chunk(chunk: Any) -> Delta:
    """The `Delta` of one chunk; raises TypeError for a shape it does not know."""
    if type(chunk) in _SDK_CHUNKS:
        return _sdk_chunk(chunk)
    if isinstance(chunk, Delta):
        return chunk
    if isinstance(chunk, str):
        return Delta(text=chunk)
    if isinstance(chunk, bytes | bytearray):
        return Delta(text=bytes(chunk).decode("utf-8", "replace"))
    if _get(chunk, "choices") is not None or _get(chunk, "object") == "chat.completion.chunk":
        if isinstance(chunk, BaseModel) and len(_SDK_CHUNKS) < 16:
            _SDK_CHUNKS.add(type(chunk))  # read by attribute from now on
            return _sdk_chunk(chunk)
        return _openai(chunk)
    kind = _get(chunk, "type")
    if isinstance(kind, str):
        for read in EXTRA_EVENTS:  # provider boundary: registered
            delta = read(chunk, kind)
            if delta is not None:
                return delta
        return _anthropic(chunk, kind)
    if _get(chunk, "candidates") is not None or any(
        _get(chunk, key) is not None for key in _GEMINI_PIECE
    ):
        return _gemini(chunk)
    raise TypeError(f"cannot read a stream chunk from {type(chunk).__name__}")


# provider boundary: registered — each further wire format's typed-event reader
# (`healjson._providers`): the event's `Delta`, else None (not one of its events)
EXTRA_EVENTS: list[Callable[[Any, str], Delta | None]] = []

# what marks a Gemini stream piece without candidates: its usage, a blocked prompt's feedback,
# or only its metadata (google-genai's object has each as an attribute, the wire in camelCase)
_GEMINI_PIECE = (
    "usage_metadata",
    "usageMetadata",
    "prompt_feedback",
    "promptFeedback",
    "model_version",
    "modelVersion",
    "response_id",
    "responseId",
)

# the SDK's pydantic chunk classes seen so far: read by plain attribute access (every chunk of
# a stream is one; the generic reader's lookups cost more than the SDK's own parsing of it)
_SDK_CHUNKS: set[type] = set()


def _sdk_chunk(chunk: Any) -> Delta:
    """An openai SDK `ChatCompletionChunk`, by attribute; anything unusual: the generic reader."""
    try:
        choices = chunk.choices
        usage = chunk.usage
        if not choices:
            return Delta(usage=None if usage is None else _usage(usage), model=chunk.model)
        choice = choices[0]
        if choice.index != 0 or len(choices) > 1:
            return _openai(chunk)  # interleaved choices (`n` > 1): the full reader
        delta = choice.delta
        text, refusal, calls = delta.content, delta.refusal, delta.tool_calls
        extra = delta.__pydantic_extra__
        finish = choice.finish_reason
    except AttributeError:
        return _openai(chunk)
    if calls or extra or usage is not None:
        return _openai(chunk)  # tool calls, reasoning fields, usage: the full reader
    return Delta(
        text=text if type(text) is str else "",
        refusal=refusal if type(refusal) is str else "",
        finish_reason=None if finish is None else str(finish),
        model=chunk.model,
    )


def _openai(chunk: Any) -> Delta:
    usage = _usage(_get(chunk, "usage"))
    model = _opt_str(_get(chunk, "model"))
    choice = _first_choice(_get(chunk, "choices") or [])
    if choice is None:
        return Delta(usage=usage, model=model)
    delta = _get(choice, "delta") or {}
    extra = getattr(delta, "model_extra", None) or {}
    reasoning = ""
    for source in (delta, extra):
        for field in ("reasoning_content", "reasoning"):
            value = _get(source, field)
            if isinstance(value, str) and value:
                reasoning = value
                break
        if reasoning:
            break
    arguments = ""
    name: str | None = None
    for call in _get(delta, "tool_calls") or []:
        function = _get(call, "function") or {}
        piece = _get(function, "arguments")
        if isinstance(piece, str):
            arguments += piece
        name = name or _opt_str(_get(function, "name"))
    text = _get(delta, "content")
    refusal = _get(delta, "refusal")
    return Delta(
        text=text if isinstance(text, str) else "",
        reasoning=reasoning,
        tool_arguments=arguments,
        tool_name=name,
        refusal=refusal if isinstance(refusal, str) else "",
        finish_reason=_opt_str(_get(choice, "finish_reason")),
        usage=usage,
        model=model,
    )


def _first_choice(choices: Any) -> Any:
    """Choice 0 of a chunk (a choice without an index is choice 0); None when the chunk carries
    only other choices, as with `n` > 1, whose text is not the answer."""
    for choice in choices:
        index = _get(choice, "index")
        if index is None or index == 0:
            return choice
    return None


def _anthropic(event: Any, kind: str) -> Delta:
    if kind == "content_block_delta":
        delta = _get(event, "delta") or {}
        piece = _get(delta, "type")
        if piece == "text_delta":
            return Delta(text=str(_get(delta, "text") or ""))
        if piece == "thinking_delta":
            return Delta(reasoning=str(_get(delta, "thinking") or ""))
        if piece == "input_json_delta":
            return Delta(tool_arguments=str(_get(delta, "partial_json") or ""))
        return _EMPTY
    if kind == "content_block_start":
        block = _get(event, "content_block") or {}
        if _get(block, "type") == "tool_use":
            return Delta(tool_name=_opt_str(_get(block, "name")))
        return _EMPTY
    if kind == "message_start":
        message = _get(event, "message") or {}
        return Delta(
            usage=anthropic_usage(_get(message, "usage")),
            model=_opt_str(_get(message, "model")),
        )
    if kind == "message_delta":
        delta = _get(event, "delta") or {}
        stop = _opt_str(_get(delta, "stop_reason"))
        refusal = ""
        if stop == "refusal":  # the text streamed so far is withdrawn: see `withdrawn`
            details = _get(delta, "stop_details") or _get(event, "stop_details") or {}
            refusal = _opt_str(_get(details, "explanation")) or ""
        return Delta(
            refusal=refusal,
            finish_reason=None if stop is None else _ANTHROPIC_FINISH.get(stop, stop),
            usage=anthropic_usage(_get(event, "usage")),
        )
    return _EMPTY


def withdrawn(reply: Reply) -> Reply:
    """A streamed reply as its unstreamed one reads: a `refusal` stop (Anthropic's) withdraws
    the answer text streamed before it, which becomes the refusal when the stop gave none."""
    if reply.finish_reason != "refusal":
        return reply
    return replace(reply, content=None, refusal=reply.refusal or reply.content or "refused")


def _gemini(chunk: Any) -> Delta:
    reply = _gemini_reply(chunk)  # one piece reads like a whole response
    arguments = "".join(call.arguments for call in reply.tool_calls)
    return Delta(
        text=reply.content or "",
        reasoning=reply.reasoning or "",
        tool_arguments=arguments,
        tool_name=reply.tool_calls[0].name if reply.tool_calls else None,
        finish_reason=reply.finish_reason,
        usage=reply.usage,
        model=reply.model,
    )
