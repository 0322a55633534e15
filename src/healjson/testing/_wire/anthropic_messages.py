"""Anthropic Messages on the wire: a `message` (thinking, text and tool_use blocks), errors."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from ._common import JSON_TYPE, WireFormat, body_model, content_text, messages_chars, tool_arguments

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


def unsupported(body: Mapping[str, Any], match: re.Match[str]) -> str | None:
    """Streaming is refused: only OpenAI's route streams."""
    if body.get("stream") is True:
        return "ScriptedServer does not stream Anthropic messages; send stream=false."
    return None


def prompt_chars(body: Mapping[str, Any]) -> int:
    """Characters of the `messages` and of the top-level `system` prompt."""
    return messages_chars(body) + len(content_text(body.get("system")))


def thinking_signature(thinking: str) -> str:
    """A stand-in for the opaque `signature` of an Anthropic thinking block: base64 like the
    real one, and the same for the same text, so a scripted reply is sent identically twice."""
    digest = hashlib.sha256(thinking.encode()).digest()
    return base64.b64encode(b"healjson-scripted-thinking:" + digest).decode()


def message(
    message_id: str, model: str, reply: ScriptedReply, usage: dict[str, int]
) -> dict[str, Any]:
    """A `message` object; `UnservableReply` when a tool call's arguments are not an object."""
    content: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        signature = thinking_signature(reply.reasoning)
        content.append({"type": "thinking", "thinking": reply.reasoning, "signature": signature})
    if reply.redacted_thinking is not None:
        content.append({"type": "redacted_thinking", "data": reply.redacted_thinking})
    if reply.content is not None:
        content.append({"type": "text", "text": reply.content})
    for number, call in enumerate(reply.tool_calls or [], 1):
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
        "usage": {
            "input_tokens": usage["prompt_tokens"],
            "output_tokens": usage["completion_tokens"],
        },
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


def reply_body(
    number: int,
    model: str,
    reply: ScriptedReply,
    usage: dict[str, int],
    request: Mapping[str, Any],
) -> tuple[bytes, str]:
    """Script item `number` as a `message`."""
    return json.dumps(message(f"msg_scripted_{number}", model, reply, usage)).encode(), JSON_TYPE


FORMAT: Final = WireFormat(
    path=PATH,
    malformed=MALFORMED,
    unsupported=unsupported,
    requested_model=body_model,
    prompt_chars=prompt_chars,
    error_body=error_body,
    reply_body=reply_body,
)
