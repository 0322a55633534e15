"""Anthropic Messages on the wire: a `message` (thinking, text and tool_use blocks) or its event
stream, errors."""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Final

from ._common import (
    JSON_TYPE,
    WireFormat,
    body_model,
    content_text,
    messages_chars,
    never_unsupported,
    tool_arguments,
)
from ._sse import Event, SseStream, Text, error_message, pieces

if TYPE_CHECKING:
    from healjson.testing._replies import ScriptedReply

PATH: Final = re.compile(r"(?:/v1)?/messages")
MALFORMED: Final = "The request body is not a valid JSON object."
_ERROR_TYPES: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_STOP_REASONS: Final = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}


def error_type(status: int) -> str:
    """Anthropic's `error.type` for an HTTP status (`api_error` for other 5xx)."""
    default = "api_error" if status >= 500 else "invalid_request_error"
    return _ERROR_TYPES.get(status, default)


def error_body(
    status: int, message: str, type: str | None, param: str | None, code: str | None
) -> bytes:
    """`{"type": "error", "error": {"type", "message"}}` (`param` and `code` are OpenAI's)."""
    error = {"type": type or error_type(status), "message": message}
    return json.dumps({"type": "error", "error": error}).encode()


def prompt_chars(body: Mapping[str, Any]) -> int:
    """Characters of the `messages` and of the top-level `system` prompt."""
    return messages_chars(body) + len(content_text(body.get("system")))


def thinking_signature(thinking: str) -> str:
    """A stand-in for the opaque `signature` of an Anthropic thinking block: base64 like the
    real one, and the same for the same text, so a scripted reply is sent identically twice."""
    digest = hashlib.sha256(thinking.encode()).digest()
    return base64.b64encode(b"healjson-scripted-thinking:" + digest).decode()


def input_usage(usage: Mapping[str, int]) -> dict[str, int]:
    """The input side of Anthropic's `usage`: `input_tokens` counts only the uncached prompt
    tokens, the cache reads and writes are `cache_read_input_tokens` and
    `cache_creation_input_tokens` (both sent when the usage names either)."""
    cached, written = usage.get("cached_tokens"), usage.get("cache_write_tokens")
    if cached is None and written is None:
        return {"input_tokens": usage["prompt_tokens"]}
    cached, written = cached or 0, written or 0
    return {
        "input_tokens": usage["prompt_tokens"] - cached - written,
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": cached,
    }


def message(
    message_id: str,
    model: str,
    reply: ScriptedReply,
    usage: dict[str, int],
    *,
    streamed: bool = False,
) -> dict[str, Any]:
    """A `message` object; `UnservableReply` when a tool call's arguments are not an object
    (`streamed`: the message a stream describes, whose `tool_use` blocks' arguments are sent as
    `input_json_delta` text as written, whatever it holds: their `input` is then `{}`)."""
    content: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        signature = thinking_signature(reply.reasoning)
        content.append({"type": "thinking", "thinking": reply.reasoning, "signature": signature})
    if reply.redacted_thinking is not None:
        content.append({"type": "redacted_thinking", "data": reply.redacted_thinking})
    if reply.content is not None:
        content.append({"type": "text", "text": reply.content})
    for number, call in enumerate(reply.tool_calls or [], 1):
        if streamed:
            name = str((call.get("function") or {}).get("name") or "tool")
            arguments = _object_or_empty((call.get("function") or {}).get("arguments"))
        else:
            name, arguments = tool_arguments(call)
        call_id = call.get("id") or f"toolu_scripted_{number}"
        content.append({"type": "tool_use", "id": call_id, "name": name, "input": arguments})
    payload: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {**input_usage(usage), "output_tokens": usage["completion_tokens"]},
    }
    if "reasoning_tokens" in usage:
        payload["usage"]["output_tokens_details"] = {"thinking_tokens": usage["reasoning_tokens"]}
    if reply.refusal is not None:
        payload["stop_reason"] = "refusal"
        payload["stop_details"] = {
            "type": "refusal",
            "category": None,
            "explanation": reply.refusal,
        }
    elif reply.tool_calls and reply.finish_reason == "stop":
        payload["stop_reason"] = "tool_use"
    else:
        payload["stop_reason"] = _STOP_REASONS.get(reply.finish_reason, reply.finish_reason)
    return payload


def forced_tool(reply: ScriptedReply, request: Mapping[str, Any]) -> ScriptedReply:
    """`reply` as the model answers a request that forces a tool (`tool_choice` of type `tool`):
    scripted content that is a JSON object becomes that tool's `tool_use` input (as Anthropic's
    constrained decoding would send it); any other reply is sent as scripted."""
    choice = request.get("tool_choice")
    if not isinstance(choice, Mapping) or choice.get("type") != "tool":
        return reply
    if reply.tool_calls or reply.refusal is not None or reply.content is None:
        return reply
    try:
        value = json.loads(reply.content)
    except ValueError:
        return reply
    if not isinstance(value, dict):
        return reply
    name = str(choice.get("name") or "tool")
    call = {"id": "toolu_scripted_1", "type": "function",
            "function": {"name": name, "arguments": reply.content}}  # fmt: skip
    return dataclasses.replace(reply, content=None, tool_calls=[call])


def reply_body(
    number: int,
    model: str,
    reply: ScriptedReply,
    usage: dict[str, int],
    request: Mapping[str, Any],
) -> tuple[bytes, str]:
    """Script item `number` as a `message` (as a forced tool's `tool_use`: `forced_tool`)."""
    reply = forced_tool(reply, request)
    return json.dumps(message(f"msg_scripted_{number}", model, reply, usage)).encode(), JSON_TYPE


def streams(request: Mapping[str, Any], match: re.Match[str]) -> bool:
    """A request with `stream: true` is streamed."""
    return request.get("stream") is True


# the in-stream error Anthropic sends for a server-side failure (`stream_error`'s default)
_STREAM_ERRORS: Final = {"server_error": "overloaded_error"}


def stream(
    number: int,
    model: str,
    reply: ScriptedReply,
    usage: dict[str, int],
    request: Mapping[str, Any],
) -> SseStream:
    """Script item `number` as Messages stream events (`event: TYPE` + `data: {...}`):
    `message_start` (no content yet), a `ping`, then per block of `message` its
    `content_block_start`, its deltas (`thinking_delta` then a `signature_delta`, `text_delta`,
    `input_json_delta` with the tool call's arguments text) and `content_block_stop`, then
    `message_delta` (stop_reason, stop_details, the whole usage: the output tokens and, as
    cumulative counts, the input and cache ones) and `message_stop`. `message_start` carries
    the input and cache counts, `output_tokens` 0. A scripted stream error is `event: error` with
    `{"type": "error", "error": {"type", "message"}}` (`stream_error` `server_error` is sent as
    `overloaded_error`, others as given), which the anthropic SDK raises as an `APIStatusError`
    (status 200, the stream's)."""
    reply = forced_tool(reply, request)
    whole = message(f"msg_scripted_{number}", model, reply, usage, streamed=True)
    opening = {key: value for key, value in whole.items() if key != "stop_details"}
    opening |= {"content": [], "stop_reason": None, "stop_sequence": None}
    opening["usage"] = {**input_usage(usage), "output_tokens": 0}
    events: list[Event] = [{"type": "message_start", "message": opening}, {"type": "ping"}]
    arguments = iter(reply.tool_calls or [])
    for index, block in enumerate(whole["content"]):
        events += _block_events(index, block, reply.chunk_chars, arguments)
    delta: dict[str, Any] = {"stop_reason": whole["stop_reason"], "stop_sequence": None}
    if "stop_details" in whole:
        delta["stop_details"] = whole["stop_details"]
    events.append({"type": "message_delta", "delta": delta, "usage": whole["usage"]})
    events.append({"type": "message_stop"})

    def error(stream_error: str, sent_chars: int) -> dict[str, Any]:
        error = {
            "type": _STREAM_ERRORS.get(stream_error, stream_error),
            "message": error_message(stream_error, sent_chars),
        }
        return {"type": "error", "error": error}

    return SseStream(events, _encode, error, opening=2, keepalive=_encode({"type": "ping"}))


def _object_or_empty(arguments: Any) -> dict[str, Any]:
    """A tool call's arguments as an object when they are one (a dict, or JSON text of one),
    else `{}`."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return {}
    return arguments if isinstance(arguments, dict) else {}


def _encode(payload: Mapping[str, Any]) -> bytes:
    return f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode()


def _block_events(
    index: int,
    block: dict[str, Any],
    chunk_chars: int | None,
    tool_calls: Iterator[dict[str, Any]],
) -> list[Event]:
    """One content block of a `message` as its start, delta and stop events."""

    def deltas(text: str, kind: str, field: str) -> list[Event]:
        def make(piece: str) -> dict[str, Any]:
            delta = {"type": kind, field: piece}
            return {"type": "content_block_delta", "index": index, "delta": delta}

        return [Text(piece, make) for piece in pieces(text, chunk_chars)]

    start: dict[str, Any] = {"type": "content_block_start", "index": index}
    body: list[Event] = []
    if block["type"] == "thinking":
        start["content_block"] = {"type": "thinking", "thinking": "", "signature": ""}
        body = deltas(block["thinking"], "thinking_delta", "thinking")
        signature = {"type": "signature_delta", "signature": block["signature"]}
        body.append({"type": "content_block_delta", "index": index, "delta": signature})
    elif block["type"] == "text":
        start["content_block"] = {"type": "text", "text": ""}
        body = deltas(block["text"], "text_delta", "text")
    elif block["type"] == "tool_use":
        start["content_block"] = {**block, "input": {}}
        raw = (next(tool_calls).get("function") or {}).get("arguments")
        text = raw if isinstance(raw, str) else json.dumps(block["input"])
        body = deltas(text, "input_json_delta", "partial_json")
    else:  # redacted_thinking: sent whole in its start event
        start["content_block"] = block
    return [start, *body, {"type": "content_block_stop", "index": index}]


FORMAT: Final = WireFormat(
    path=PATH,
    malformed=MALFORMED,
    unsupported=never_unsupported,
    requested_model=body_model,
    prompt_chars=prompt_chars,
    error_body=error_body,
    reply_body=reply_body,
    streams=streams,
    stream=stream,
)
