"""Ollama's chat API on the wire: a `ChatResponse` (`POST /api/chat`, `stream: false`) or its
stream, one JSON object per line (`application/x-ndjson`), errors as `{"error": message}`."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final

from ._common import JSON_TYPE, WireFormat, body_model, messages_chars, tool_arguments
from ._sse import Event, SseStream, Text, error_message, pieces

if TYPE_CHECKING:
    from healjson.testing._replies import ScriptedReply

PATH: Final = re.compile(r"/api/chat")
MALFORMED: Final = "invalid character in request body"
NDJSON_TYPE: Final = "application/x-ndjson"
CREATED_AT: Final = "2026-01-01T00:00:00.000000000Z"
_DONE_REASONS: Final = {"stop": "stop", "tool_calls": "stop", "length": "length"}


def error_body(
    status: int, message: str, type: str | None, param: str | None, code: str | None
) -> bytes:
    """`{"error": message}` (Ollama's errors carry a message only)."""
    return json.dumps({"error": message}).encode()


def unsupported(body: Mapping[str, Any], match: re.Match[str]) -> str | None:
    """Ollama refuses a request without a model."""
    return None if body.get("model") else "model is required"


def _message(reply: ScriptedReply) -> dict[str, Any]:
    """The assistant message: `thinking` for the reasoning, the content (a refusal is text:
    Ollama has no refusal), each call with its arguments as an object."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content or reply.refusal or ""}
    if reply.reasoning is not None:
        message["thinking"] = reply.reasoning
    calls = []
    for call in reply.tool_calls or []:
        name, arguments = tool_arguments(call)
        calls.append({"function": {"name": name, "arguments": arguments}})
    if calls:
        message["tool_calls"] = calls
    return message


def _done(model: str, reply: ScriptedReply, usage: dict[str, int]) -> dict[str, Any]:
    """The fields of the last object: the finish and the counts (Ollama counts the thinking in
    `eval_count`; it has no cache counts)."""
    finish = reply.finish_reason
    return {
        "model": model,
        "created_at": CREATED_AT,
        "done": True,
        "done_reason": _DONE_REASONS.get(finish, finish),
        "total_duration": 1_000_000,
        "load_duration": 1_000,
        "prompt_eval_count": usage["prompt_tokens"],
        "prompt_eval_duration": 1_000,
        "eval_count": usage["completion_tokens"],
        "eval_duration": 1_000,
    }


def response(model: str, reply: ScriptedReply, usage: dict[str, int]) -> dict[str, Any]:
    """A `ChatResponse`; `UnservableReply` when a tool call's arguments are not an object."""
    return {**_done(model, reply, usage), "message": _message(reply)}


def reply_body(
    number: int,
    model: str,
    reply: ScriptedReply,
    usage: dict[str, int],
    request: Mapping[str, Any],
) -> tuple[bytes, str]:
    """Script item `number` as a `ChatResponse`."""
    return json.dumps(response(model, reply, usage)).encode(), JSON_TYPE


def streams(request: Mapping[str, Any], match: re.Match[str]) -> bool:
    """A chat request streams unless it says `stream: false` (Ollama's default is to stream)."""
    return request.get("stream", True) is not False


def stream(
    number: int,
    model: str,
    reply: ScriptedReply,
    usage: dict[str, int],
    request: Mapping[str, Any],
) -> SseStream:
    """Script item `number` as chat chunks, one JSON object per line: a chunk per delta of the
    thinking, then of the content (`done: false`), the tool calls whole in one chunk, then the
    last chunk (`done: true`, an empty message, the finish and the counts). A scripted stream
    error is `{"error": message}`, which the SDK raises as `ResponseError`."""
    whole = response(model, reply, usage)
    message = whole["message"]
    head = {"model": model, "created_at": CREATED_AT, "done": False}

    def delta(field: str) -> Any:
        def make(piece: str) -> dict[str, Any]:
            return {**head, "message": {"role": "assistant", "content": "", field: piece}}

        return make

    events: list[Event] = []
    for field in ("thinking", "content"):
        text = message.get(field)
        if isinstance(text, str) and text:
            events += [Text(piece, delta(field)) for piece in pieces(text, reply.chunk_chars)]
    if "tool_calls" in message:
        calls = {"role": "assistant", "content": "", "tool_calls": message["tool_calls"]}
        events.append({**head, "message": calls})
    events.append({**_done(model, reply, usage), "message": {"role": "assistant", "content": ""}})

    def error(stream_error: str, sent_chars: int) -> dict[str, Any]:
        return {"error": error_message(stream_error, sent_chars)}

    return SseStream(events, _encode, error, keepalive=b"", content_type=NDJSON_TYPE)


def _encode(payload: Mapping[str, Any]) -> bytes:
    return (json.dumps(payload) + "\n").encode()


FORMAT: Final = WireFormat(
    path=PATH,
    malformed=MALFORMED,
    unsupported=unsupported,
    requested_model=body_model,
    prompt_chars=messages_chars,
    error_body=error_body,
    reply_body=reply_body,
    streams=streams,
    stream=stream,
)
