"""Anthropic's stop reasons and usage, and a Messages stream's events read as `Delta`s.

A stream event (`message_start`, `content_block_start`, `content_block_delta`, `message_delta`)
is one `Delta`: a block's start is its first piece (a text block's `text`, a thinking block's
`thinking`, a `tool_use` block's name, id and, when not empty, its `input` as JSON text), each
tool piece carrying its call's identity (the block's `index`, and its `id`), so two calls of one
tool stay two calls (`Delta.tool_index`). Usage comes in parts, the input's at the start and the
output's at the end, which states each count it sends, a 0 included (`UsageTally`).
"""

from __future__ import annotations

from typing import Any, Final

from healjson._core.wire.delta import Delta
from healjson._core.wire.reply import Usage, new_usage
from healjson._providers._fields import MAX_COUNT, as_int, counts, get_field, json_text, opt_str
from healjson._providers._unreadable import chunk_text, unreadable_as_failure

__all__ = ["FINISH", "anthropic_event", "anthropic_usage", "start_piece", "stated_counts"]

# stop reasons as OpenAI's finish reasons (a reason not listed is kept as it is)
FINISH = {"max_tokens": "length", "model_context_window_exceeded": "length",
          "end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls",
          "pause_turn": "stop"}  # fmt: skip


def anthropic_usage(
    raw: Any, *, requests: int = 0, model: str | None = None, part: str | None = None
) -> Usage | None:
    """Anthropic's usage (a message's, or a stream event's piece), None without counts. Its
    `input_tokens` leave out the cached input, which healjson counts in `prompt_tokens`. A
    count that is no count is unreported (`_fields.counts`). Stream events are partial pieces
    (`part`: a count left out is 0, which `stated_counts` says is no count); `part="start"`:
    `message_start`'s, whose `output_tokens` is a placeholder (left out: 0)."""
    if raw is None:
        return None
    prompt, completion = get_field(raw, "input_tokens"), get_field(raw, "output_tokens")
    if part is not None:
        prompt = 0 if prompt is None else prompt
        completion = 0 if completion is None or part == "start" else completion
    found = counts(prompt, completion)
    if found is None:
        return None
    prompt, completion, estimated = found
    read = as_int(get_field(raw, "cache_read_input_tokens"))
    written = as_int(get_field(raw, "cache_creation_input_tokens"))
    details = get_field(raw, "output_tokens_details")
    thinking = get_field(details, "thinking_tokens") if details is not None else None
    stated = part is None or _count(get_field(raw, "input_tokens"))
    return new_usage(  # a stream piece without the input's count states no prompt count
        prompt + read + written if stated else 0,
        completion,
        estimated,
        reasoning_tokens=as_int(thinking),
        cache_read_tokens=read,
        cache_write_tokens=written,
        requests=requests,
        model=model,
    )


def stated_counts(raw: Any, part: str) -> tuple[bool, bool, bool, bool, bool]:
    """Which counts a stream event's usage (`anthropic_usage(raw, part=part)`) states, as
    `UsageTally` takes them (prompt, completion, reasoning, cache read, cache write): each one
    the provider sent as a count, a 0 included; never `message_start`'s `output_tokens` (a
    placeholder)."""
    details = get_field(raw, "output_tokens_details")
    return (
        _count(get_field(raw, "input_tokens")),
        part != "start" and _count(get_field(raw, "output_tokens")),
        details is not None and _count(get_field(details, "thinking_tokens")),
        _count(get_field(raw, "cache_read_input_tokens")),
        _count(get_field(raw, "cache_creation_input_tokens")),
    )


def _count(value: Any) -> bool:
    return type(value) is int and 0 <= value <= MAX_COUNT


def _closing_usage(raw: Any) -> dict[str, Any]:
    """`message_delta`'s usage as a `Delta`'s fields: the piece, and the counts it states (the
    opening piece, `message_start`'s, states its nonzero ones: an input count, never 0, and no
    output count, its placeholder)."""
    usage = anthropic_usage(raw, part="end")
    return {"usage": usage, "usage_partial": stated_counts(raw, "end") if usage else True}


_THINKING: Final = "thinking_delta.thinking"
_JSON: Final = "input_json_delta.partial_json"
_EMPTY: Final = Delta()


@unreadable_as_failure
def anthropic_event(event: Any) -> Delta:
    """One stream event as a `Delta` (see the module's docstring)."""
    kind = get_field(event, "type")
    if kind == "content_block_delta":
        delta = get_field(event, "delta") or {}
        piece = get_field(delta, "type")
        # a delta's text of another type is no event of a reply (`chunk_text`)
        if piece == "text_delta":
            return Delta(text=chunk_text(get_field(delta, "text"), "text_delta.text"))
        if piece == "thinking_delta":
            return Delta(reasoning=chunk_text(get_field(delta, "thinking"), _THINKING))
        if piece == "input_json_delta":
            arguments = chunk_text(get_field(delta, "partial_json"), _JSON)
            return Delta(tool_arguments=arguments, tool_index=_index(event))
        return _EMPTY
    if kind == "content_block_start":
        return start_piece(event)
    if kind == "message_start":
        message = get_field(event, "message") or {}
        return Delta(  # the input counts; `message_delta` gives the output's
            usage=anthropic_usage(get_field(message, "usage"), part="start"),
            usage_partial=True,
            model=opt_str(get_field(message, "model")),
        )
    if kind == "message_delta":
        delta = get_field(event, "delta") or {}
        stop = opt_str(get_field(delta, "stop_reason"))
        refusal = ""
        if stop == "refusal":  # the text streamed so far is withdrawn: see `withdrawn`
            details = get_field(delta, "stop_details") or get_field(event, "stop_details") or {}
            refusal = opt_str(get_field(details, "explanation")) or ""
        return Delta(
            refusal=refusal,
            finish_reason=None if stop is None else FINISH.get(stop, stop),
            **_closing_usage(get_field(event, "usage")),
        )
    return _EMPTY


def start_piece(event: Any) -> Delta:
    """A `content_block_start`: the block's first piece (what its start carries, as the SDK's
    own message keeps it); a `tool_use` block's name, id and identity (its index)."""
    block = get_field(event, "content_block") or {}
    kind = get_field(block, "type")
    if kind == "tool_use":
        given = get_field(block, "input")
        return Delta(
            tool_name=opt_str(get_field(block, "name")),
            tool_arguments=json_text(given) if given else "",
            tool_index=_index(event),
            tool_id=opt_str(get_field(block, "id")),
        )
    if kind == "text":
        text = chunk_text(get_field(block, "text"), "content_block.text")
        return Delta(text=text) if text else _EMPTY
    if kind == "thinking":
        thinking = chunk_text(get_field(block, "thinking"), "content_block.thinking")
        return Delta(reasoning=thinking) if thinking else _EMPTY
    return _EMPTY


def _index(event: Any) -> int | None:
    index = get_field(event, "index")
    return index if type(index) is int else None
