"""Anthropic messages (`POST /v1/messages`): everything this wire format means to healjson.

- Reading: a `Message` (object or dict: `content` blocks and `stop_reason`) as a `Reply` — text
  blocks joined as the content, `tool_use` blocks as tool calls, `thinking` blocks as the
  reasoning, a `refusal` stop as the refusal; stop reasons mapped onto OpenAI's finish reasons
  (`length` for a token cut); usage with the prompt cache's reads and writes counted in the
  prompt. A stream event (`message_start`, `content_block_delta`, `message_delta`) as a `Delta`.
- Requests: chat messages and parameters as a Messages request (`anthropic_request`: system
  messages to the top-level `system`, `max_tokens` for OpenAI's `max_completion_tokens`), and as
  a Message Batches line (`batch_body`).
- Where the `anthropic` client keeps its credentials, which of its methods an instrumentation
  wraps, and that `anthropic`'s exceptions are the provider's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from healjson._core.reply import Reply, ToolCall, Usage
from healjson._core.stream.chunks import Delta
from healjson._core.wire import WireFormat

from ._fields import _dumps, _get, _int, _opt_str, message_text
from .openai_chat import shape_request  # the prompt tier's instruction is the chat format's

__all__ = [
    "FINISH",
    "FORMAT",
    "anthropic_request",
    "anthropic_usage",
    "batch_body",
    "batch_line",
    "messages_request",
]

# stop reasons as OpenAI's finish reasons (a reason not listed is kept as it is)
FINISH = {"max_tokens": "length", "model_context_window_exceeded": "length",
          "end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls",
          "pause_turn": "stop"}  # fmt: skip


def _anthropic(obj: Any) -> Reply:
    """An Anthropic `Message`: text blocks joined as the content, `tool_use` blocks as tool
    calls, `thinking` blocks as the reasoning; a `refusal` stop's message is
    `stop_details.explanation`, else the text."""
    blocks = _get(obj, "content") or []
    texts = [str(_get(b, "text") or "") for b in blocks if _get(b, "type") == "text"]
    content: str | None = "".join(texts) if texts else None
    thoughts = [str(_get(b, "thinking") or "") for b in blocks if _get(b, "type") == "thinking"]
    calls = tuple(
        ToolCall(str(_get(b, "name") or ""), _dumps(_get(b, "input")))
        for b in blocks
        if _get(b, "type") == "tool_use"
    )
    stop = _opt_str(_get(obj, "stop_reason"))
    refusal = None
    if stop == "refusal":
        explanation = _get(_get(obj, "stop_details") or {}, "explanation")
        refusal = _opt_str(explanation) or content or "refused"
    model = _opt_str(_get(obj, "model"))
    usage = anthropic_usage(_get(obj, "usage"), requests=1, model=model)
    finish = None if stop is None else FINISH.get(stop, stop)
    return Reply(
        None if refusal else content,
        finish,
        refusal,
        usage,
        model,
        "\n\n".join(t for t in thoughts if t) or None,
        calls,
    )


def anthropic_usage(raw: Any, *, requests: int = 0, model: str | None = None) -> Usage | None:
    """Anthropic's usage (a message's, or a stream event's running one), None without counts.
    Its `input_tokens` leave out the cached input, which healjson counts in `prompt_tokens`
    (the cache reads and writes are parts of it)."""
    if raw is None:
        return None
    prompt, completion = _get(raw, "input_tokens"), _get(raw, "output_tokens")
    if not isinstance(prompt, int) and not isinstance(completion, int):
        return None
    read = _int(_get(raw, "cache_read_input_tokens"))
    written = _int(_get(raw, "cache_creation_input_tokens"))
    details = _get(raw, "output_tokens_details")
    thinking = _get(details, "thinking_tokens") if details is not None else None
    return Usage(
        _int(prompt) + read + written,
        _int(completion),
        reasoning_tokens=_int(thinking),
        cache_read_tokens=read,
        cache_write_tokens=written,
        requests=requests,
        model=model,
    )


def _anthropic_event(event: Any) -> Delta:
    kind = _get(event, "type")
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
            finish_reason=None if stop is None else FINISH.get(stop, stop),
            usage=anthropic_usage(_get(event, "usage")),
        )
    return _EMPTY


# --- requests -----------------------------------------------------------------------------


def anthropic_request(
    messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any]
) -> dict[str, Any]:
    """Chat messages and parameters as an Anthropic Messages request: the system messages joined
    into the top-level `system`, OpenAI's `max_completion_tokens` named `max_tokens`."""
    system = [message_text(m.get("content")) for m in messages if m.get("role") == "system"]
    turns = [
        {"role": m.get("role"), "content": m.get("content")}
        for m in messages
        if m.get("role") != "system"
    ]
    body: dict[str, Any] = {**params, "messages": turns}
    if "max_completion_tokens" in body:  # OpenAI's name (the truncation strategy may set it)
        body["max_tokens"] = body.pop("max_completion_tokens")
    if system:
        body["system"] = "\n\n".join(system)
    return body


DEFAULT_MAX_TOKENS: Final = 4096
"""Anthropic requires `max_tokens`: this when a call gives none."""


def messages_request(
    messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any]
) -> dict[str, Any]:
    """A call in the prompt tier as `messages.create` keywords: no `response_format` (Anthropic
    has none), `max_tokens` as given or `DEFAULT_MAX_TOKENS`."""
    body = {key: value for key, value in params.items() if key != "response_format"}
    body.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
    return anthropic_request(messages, body)


# --- Message Batches lines -----------------------------------------------------------------


def batch_body(
    mode: Any, target: Any, messages: Sequence[dict[str, Any]], params: Mapping[str, Any]
) -> dict[str, Any]:
    """A request as a Message Batches line's `params`: the schema in the system prompt whatever
    the `mode` (the prompt tier: Anthropic has no JSON response format), system messages moved
    to `system`."""
    _, shaped, _ = shape_request("prompt", target, messages)
    return anthropic_request(shaped, params)


def batch_line(custom_id: str, body: Mapping[str, Any]) -> dict[str, Any]:
    """One request of a Message Batches `create`."""
    return {"custom_id": custom_id, "params": body}


_EMPTY = Delta()


def _reads_reply(obj: Any) -> bool:
    return hasattr(obj, "stop_reason") and isinstance(getattr(obj, "content", None), list)


def _reads_dict(obj: Mapping[str, Any]) -> bool:
    return "stop_reason" in obj and isinstance(obj.get("content"), list)


def _reads_chunk(chunk: Any) -> bool:
    return isinstance(_get(chunk, "type"), str)


FORMAT = WireFormat(
    "anthropic_messages",
    _reads_reply,
    _anthropic,
    reads_dict=_reads_dict,
    reads_chunk=_reads_chunk,
    read_chunk=_anthropic_event,
    credential_attributes=("api_key", "auth_token", "_custom_headers", "_custom_query"),
    sdk_creates=(("anthropic.resources.messages.messages", ("Messages", "AsyncMessages")),),
    error_packages=frozenset({"anthropic"}),
)
