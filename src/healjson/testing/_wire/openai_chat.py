"""OpenAI chat completions on the wire: a `chat.completion` or its SSE stream, errors, models."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from ._common import (
    JSON_TYPE,
    WireFormat,
    body_model,
    messages_chars,
    never_unsupported,
)

if TYPE_CHECKING:
    from healjson.testing._replies import ScriptedReply

PATH: Final = re.compile(r"(?:/v1)?/chat/completions")
MODELS_PATH: Final = re.compile(r"(?:/v1)?/models")
MODEL_PATH: Final = re.compile(r"(?:/v1)?/models/(?P<model>[^/]+)")
SSE_TYPE: Final = "text/event-stream; charset=utf-8"
MALFORMED: Final = (
    "We could not parse the JSON body of your request. (HINT: This likely means "
    "you aren't using your HTTP library correctly. The OpenAI API expects a JSON "
    "payload, but what was sent was not valid JSON.)"
)
_STREAM_PIECES: Final = 4  # streamed content is split into at most this many deltas


def default_error_type(status: int) -> str:
    """OpenAI's `error.type` for an HTTP status."""
    if status >= 500:
        return "server_error"
    if status == 429:
        return "requests"
    return "invalid_request_error"


def error_body(
    status: int, message: str, type: str | None, param: str | None, code: str | None
) -> bytes:
    """`{"error": {"message", "type", "param", "code"}}`."""
    error = {
        "message": message,
        "type": type or default_error_type(status),
        "param": param,
        "code": code,
    }
    return json.dumps({"error": error}).encode()


def openai_usage(usage: Mapping[str, int]) -> dict[str, Any]:
    """OpenAI's `usage`: the flat names as given, reasoning tokens moved under
    `completion_tokens_details` (where the openai SDK reads them)."""
    payload: dict[str, Any] = dict(usage)
    if "reasoning_tokens" in payload:
        payload["completion_tokens_details"] = {"reasoning_tokens": payload.pop("reasoning_tokens")}
    return payload


def completion(
    completion_id: str, model: str, reply: ScriptedReply, usage: dict[str, int]
) -> dict[str, Any]:
    """A `chat.completion` object."""
    message: dict[str, Any] = {
        "role": "assistant",
        "content": reply.content,
        "refusal": reply.refusal,
    }
    if reply.reasoning is not None:
        message[reply.reasoning_field] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = reply.tool_calls
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": reply.finish_reason}
        ],
        "usage": openai_usage(usage),
    }


def _pieces(text: str) -> list[str]:
    size = max(1, -(-len(text) // _STREAM_PIECES))
    return [text[i : i + size] for i in range(0, len(text), size)]


def stream_events(
    completion_id: str, model: str, reply: ScriptedReply, usage: dict[str, int] | None
) -> list[dict[str, Any]]:
    """The `chat.completion.chunk` events of a streamed reply (`usage`: the final usage chunk,
    sent when the request asked for it with `stream_options.include_usage`)."""
    created = int(time.time())

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
        event: dict[str, Any] = {
            "id": completion_id,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }
        if usage is not None:
            event["usage"] = None
        return event

    events = [chunk({"role": "assistant", "content": "", "refusal": None})]
    field = reply.reasoning_field
    events += [chunk({field: piece}) for piece in _pieces(reply.reasoning or "")]
    events += [chunk({"content": piece}) for piece in _pieces(reply.content or "")]
    events += [chunk({"refusal": piece}) for piece in _pieces(reply.refusal or "")]
    for index, call in enumerate(reply.tool_calls or []):
        function = call.get("function") or {}
        head = {
            "index": index,
            "id": call.get("id"),
            "type": call.get("type", "function"),
            "function": {"name": function.get("name"), "arguments": ""},
        }
        events.append(chunk({"tool_calls": [head]}))
        events += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in _pieces(str(function.get("arguments") or ""))
        ]
    events.append(chunk({}, reply.finish_reason))
    if usage is not None:
        events.append(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [],
                "usage": openai_usage(usage),
            }
        )
    return events


def reply_body(
    number: int,
    model: str,
    reply: ScriptedReply,
    usage: dict[str, int],
    request: Mapping[str, Any],
) -> tuple[bytes, str]:
    """Script item `number` as a `chat.completion`, or as its SSE stream when the request
    says `stream: true`."""
    completion_id = f"chatcmpl-scripted-{number}"
    if request.get("stream") is not True:
        return json.dumps(completion(completion_id, model, reply, usage)).encode(), JSON_TYPE
    options = request.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    events = stream_events(completion_id, model, reply, usage if include_usage else None)
    payload = "".join(f"data: {json.dumps(event)}\n\n" for event in events)
    return (payload + "data: [DONE]\n\n").encode(), SSE_TYPE


def model_object(model: str) -> dict[str, Any]:
    """A `model` object, as `GET /v1/models/{model}` returns it."""
    return {"id": model, "object": "model", "created": 0, "owned_by": "healjson"}


def model_list(model: str) -> dict[str, Any]:
    """`GET /v1/models`: a list holding the server's one model."""
    return {"object": "list", "data": [model_object(model)]}


FORMAT: Final = WireFormat(
    path=PATH,
    malformed=MALFORMED,
    unsupported=never_unsupported,
    requested_model=body_model,
    prompt_chars=messages_chars,
    error_body=error_body,
    reply_body=reply_body,
)
