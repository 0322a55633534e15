"""Gemini `generateContent` on the wire: a response with one candidate (or its SSE stream from
`streamGenerateContent`), errors, request text."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import unquote

from ._common import JSON_TYPE, WireFormat, never_unsupported, tool_arguments
from ._sse import Event, SseStream, Text, error_message, pieces

if TYPE_CHECKING:
    from healjson.testing._replies import ScriptedReply

PATH: Final = re.compile(
    r"(?:/v1(?:alpha|beta)?)?/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)"
)
MALFORMED: Final = "Invalid JSON payload received. The request body is not a JSON object."
_STATUS_NAMES: Final = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
_STATUS_CODES: Final = {name: status for status, name in _STATUS_NAMES.items()}
_FINISH_REASONS: Final = {
    "stop": "STOP",
    "tool_calls": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
}


def status_name(status: int) -> str:
    """Google's canonical `status` name for an HTTP status."""
    default = "INTERNAL" if status >= 500 else "FAILED_PRECONDITION"
    return _STATUS_NAMES.get(status, default)


def error_body(
    status: int, message: str, type: str | None, param: str | None, code: str | None
) -> bytes:
    """`{"error": {"code", "message", "status"}}`, `status` = `type` or Google's name for the
    HTTP status (`param` and `code` are OpenAI's)."""
    error = {"code": status, "message": message, "status": type or status_name(status)}
    return json.dumps({"error": error}).encode()


def requested_model(body: Mapping[str, Any], match: re.Match[str]) -> object:
    """The model named in the path (`models/` prefix dropped)."""
    return unquote(match["model"]).removeprefix("models/")


def content_text(content: Mapping[str, Any]) -> str:
    """The text parts of a Gemini `Content` (`{"role", "parts": [{"text": ...}, ...]}`)."""
    parts = content.get("parts")
    if not isinstance(parts, list):
        return ""
    return "".join(
        part["text"]
        for part in parts
        if isinstance(part, dict) and isinstance(part.get("text"), str)
    )


def system_text(body: Mapping[str, Any]) -> str | None:
    """The text of a request's `systemInstruction` (`None` when it has none)."""
    instruction = body.get("systemInstruction", body.get("system_instruction"))
    return content_text(instruction) if isinstance(instruction, dict) else None


def messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A request's `contents` as `{"role": "user" | "assistant", "content": text}` messages."""
    contents = body.get("contents")
    if not isinstance(contents, list):
        return []
    return [
        {
            "role": "assistant" if content.get("role") == "model" else content.get("role"),
            "content": content_text(content),
        }
        for content in contents
        if isinstance(content, dict)
    ]


def prompt_chars(body: Mapping[str, Any]) -> int:
    """Characters of the `contents` and of the `systemInstruction`."""
    contents = body.get("contents")
    contents = contents if isinstance(contents, list) else []
    chars = len(system_text(body) or "")
    return chars + sum(len(content_text(c)) for c in contents if isinstance(c, dict))


def response(
    response_id: str, model: str, reply: ScriptedReply, usage: dict[str, int]
) -> dict[str, Any]:
    """A `GenerateContentResponse`; `UnservableReply` when a tool call's arguments are not an
    object."""
    candidate: dict[str, Any] = {"index": 0}
    if reply.refusal is not None:  # Gemini has no refusal: a safety stop without any content
        candidate["finishReason"] = "SAFETY"
        candidate["safetyRatings"] = [
            {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}
        ]
    else:
        parts: list[dict[str, Any]] = []
        if reply.reasoning is not None:
            parts.append({"text": reply.reasoning, "thought": True})
        if reply.content is not None:
            parts.append({"text": reply.content})
        for call in reply.tool_calls or []:
            name, arguments = tool_arguments(call)
            parts.append({"functionCall": {"name": name, "args": arguments}})
        if parts:
            candidate["content"] = {"role": "model", "parts": parts}
        finish = reply.finish_reason
        candidate["finishReason"] = _FINISH_REASONS.get(finish) or finish.upper()
    reasoning = usage.get("reasoning_tokens")
    metadata = {
        "promptTokenCount": usage["prompt_tokens"],
        "candidatesTokenCount": usage["completion_tokens"] - (reasoning or 0),
        "totalTokenCount": usage["total_tokens"],
    }
    if reasoning is not None:  # Gemini counts thoughts apart from the candidates
        metadata["thoughtsTokenCount"] = reasoning
    if "cached_tokens" in usage:  # part of promptTokenCount; Gemini reports no cache writes
        metadata["cachedContentTokenCount"] = usage["cached_tokens"]
    return {
        "candidates": [candidate],
        "usageMetadata": metadata,
        "modelVersion": model,
        "responseId": response_id,
    }


def reply_body(
    number: int,
    model: str,
    reply: ScriptedReply,
    usage: dict[str, int],
    request: Mapping[str, Any],
) -> tuple[bytes, str]:
    """Script item `number` as a `GenerateContentResponse`."""
    return json.dumps(response(f"scripted-{number}", model, reply, usage)).encode(), JSON_TYPE


def streams(request: Mapping[str, Any], match: re.Match[str]) -> bool:
    """`streamGenerateContent` is streamed (as SSE whatever `alt` says: google-genai always asks
    for `alt=sse`)."""
    return match["method"] == "streamGenerateContent"


def stream(
    number: int,
    model: str,
    reply: ScriptedReply,
    usage: dict[str, int],
    request: Mapping[str, Any],
) -> SseStream:
    """Script item `number` as `data: {GenerateContentResponse}` events: one per delta, its
    candidate holding a thought part (`thought: true`) for the reasoning deltas, then a text
    part for the content deltas; the last event holds the `functionCall` parts (sent whole, as
    Gemini does), the finishReason and the usageMetadata. A refusal is that one last event, a
    `SAFETY` stop without content. A scripted stream error is
    `data: {"error": {"code", "message", "status"}}`, which google-genai raises as
    `errors.ServerError` (or `ClientError` for a 4xx `code`): `stream_error` `server_error` is
    code 500 `INTERNAL`, any other value is the `status`, its code Google's for that name
    (500 when unknown)."""
    response_id = f"scripted-{number}"
    whole = response(response_id, model, reply, usage)
    [candidate] = whole["candidates"]
    head = {"modelVersion": model, "responseId": response_id}

    def delta(thought: bool) -> Callable[[str], dict[str, Any]]:
        def make(piece: str) -> dict[str, Any]:
            part: dict[str, Any] = {"text": piece, "thought": True} if thought else {"text": piece}
            content = {"role": "model", "parts": [part]}
            return {"candidates": [{"content": content, "index": 0}], **head}

        return make

    events: list[Event] = []
    parts = candidate.get("content", {}).get("parts", [])
    for part in parts:
        if "text" in part:
            make = delta(part.get("thought") is True)
            events += [Text(piece, make) for piece in pieces(part["text"], reply.chunk_chars)]
    last = dict(candidate)
    calls = [part for part in parts if "text" not in part]
    if calls:
        last["content"] = {"role": "model", "parts": calls}
    else:
        last.pop("content", None)
    events.append({"candidates": [last], "usageMetadata": whole["usageMetadata"], **head})

    def error(stream_error: str, sent_chars: int) -> dict[str, Any]:
        status = "INTERNAL" if stream_error == "server_error" else stream_error
        code = _STATUS_CODES.get(status, 500)
        message = error_message(stream_error, sent_chars)
        return {"error": {"code": code, "message": message, "status": status}}

    return SseStream(events, _encode, error, keepalive=b"")  # Gemini sends no keep-alive


def _encode(payload: Mapping[str, Any]) -> bytes:
    return f"data: {json.dumps(payload)}\r\n\r\n".encode()


FORMAT: Final = WireFormat(
    path=PATH,
    malformed=MALFORMED,
    unsupported=never_unsupported,
    requested_model=requested_model,
    prompt_chars=prompt_chars,
    error_body=error_body,
    reply_body=reply_body,
    streams=streams,
    stream=stream,
)
