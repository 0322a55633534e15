"""OpenAI chat completions on the wire: a `chat.completion` or its SSE stream, errors, models."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from ._common import (
    JSON_TYPE,
    WireFormat,
    body_model,
    messages_chars,
    never_unsupported,
)
from ._sse import Event, SseStream, Text, error_message, pieces, rendered

if TYPE_CHECKING:
    from healjson.testing._replies import ScriptedReply

PATH: Final = re.compile(r"(?:/v1)?/chat/completions")
MODELS_PATH: Final = re.compile(r"(?:/v1)?/models")
MODEL_PATH: Final = re.compile(r"(?:/v1)?/models/(?P<model>[^/]+)")
MALFORMED: Final = (
    "We could not parse the JSON body of your request. (HINT: This likely means "
    "you aren't using your HTTP library correctly. The OpenAI API expects a JSON "
    "payload, but what was sent was not valid JSON.)"
)


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
    `completion_tokens_details` and cached prompt tokens under `prompt_tokens_details` (where
    the openai SDK reads them; `prompt_tokens` includes them). OpenAI reports no cache writes:
    `cache_write_tokens` is not sent."""
    payload: dict[str, Any] = dict(usage)
    payload.pop("cache_write_tokens", None)
    if "reasoning_tokens" in payload:
        payload["completion_tokens_details"] = {"reasoning_tokens": payload.pop("reasoning_tokens")}
    if "cached_tokens" in payload:
        cached = payload.pop("cached_tokens")
        payload["prompt_tokens_details"] = {"cached_tokens": cached, "audio_tokens": 0}
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
        message["tool_calls"] = [
            _tool_call(completion_id, index, call) for index, call in enumerate(reply.tool_calls)
        ]
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


def stream(
    number: int,
    model: str,
    reply: ScriptedReply,
    usage: dict[str, int],
    request: Mapping[str, Any],
) -> SseStream:
    """Script item `number` as `chat.completion.chunk` events (`data: {...}`), then
    `data: [DONE]`: the role chunk, the reasoning deltas (in `reply.reasoning_field`), the content
    and refusal deltas, each tool call's head then its argument deltas, the finish_reason chunk,
    and the usage chunk when the request asked for it with `stream_options.include_usage`.
    A scripted stream error is `data: {"error": {"message", "type", "param", "code"}}`, which the
    openai SDK raises as `openai.APIError`."""
    options = request.get("stream_options")
    include_usage = isinstance(options, dict) and options.get("include_usage") is True
    events = _stream_plan(
        f"chatcmpl-scripted-{number}", model, reply, usage if include_usage else None
    )

    def error(stream_error: str, sent_chars: int) -> dict[str, Any]:
        message = error_message(stream_error, sent_chars)
        error = {
            "message": message,
            "type": stream_error,
            "param": reply.error_param,
            "code": reply.error_code,
        }
        return {"error": error}

    return SseStream(events, _encode, error, done=b"data: [DONE]\n\n", opening=1)


def _tool_call(completion_id: str, index: int, call: Mapping[str, Any]) -> dict[str, Any]:
    """A scripted call as sent: its `arguments` text verbatim (broken JSON included), an
    `id` (`call_<completion>_<index>` when the script gives none) and `type` `function`."""
    function = dict(call.get("function") or {})
    arguments = function.get("arguments")
    if not isinstance(arguments, str):
        function["arguments"] = json.dumps(arguments if arguments is not None else {})
    found = {**call, "function": function}
    found.setdefault("type", "function")
    if not found.get("id"):
        found["id"] = f"call_{completion_id.rsplit('-', 1)[-1]}_{index}"
    return found


def _encode(payload: Mapping[str, Any]) -> bytes:
    return f"data: {json.dumps(payload)}\n\n".encode()


def stream_events(
    completion_id: str, model: str, reply: ScriptedReply, usage: dict[str, int] | None
) -> list[dict[str, Any]]:
    """The `chat.completion.chunk` events of a streamed reply, as `stream` sends them when it
    runs to its end (`usage`: the final usage chunk, sent when the request asked for it with
    `stream_options.include_usage`)."""
    return rendered(_stream_plan(completion_id, model, reply, usage))


def _stream_plan(
    completion_id: str, model: str, reply: ScriptedReply, usage: dict[str, int] | None
) -> list[Event]:
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

    def deltas(text: str | None, make: Callable[[str], dict[str, Any]]) -> list[Event]:
        return [Text(piece, make) for piece in pieces(text or "", reply.chunk_chars)]

    def field_delta(field: str) -> Callable[[str], dict[str, Any]]:
        return lambda text: chunk({field: text})

    def arguments_delta(index: int) -> Callable[[str], dict[str, Any]]:
        def make(text: str) -> dict[str, Any]:
            return chunk({"tool_calls": [{"index": index, "function": {"arguments": text}}]})

        return make

    events: list[Event] = [chunk({"role": "assistant", "content": "", "refusal": None})]
    events += deltas(reply.reasoning, field_delta(reply.reasoning_field))
    events += deltas(reply.content, field_delta("content"))
    events += deltas(reply.refusal, field_delta("refusal"))
    for index, scripted in enumerate(reply.tool_calls or []):
        call = _tool_call(completion_id, index, scripted)
        function = call["function"]
        head = {
            "index": index,
            "id": call["id"],
            "type": call["type"],
            "function": {"name": function.get("name"), "arguments": ""},
        }
        events.append(chunk({"tool_calls": [head]}))
        events += deltas(function["arguments"], arguments_delta(index))
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
    """Script item `number` as a `chat.completion` (a `stream: true` request is answered by
    `stream`)."""
    completion_id = f"chatcmpl-scripted-{number}"
    return json.dumps(completion(completion_id, model, reply, usage)).encode(), JSON_TYPE


def streams(request: Mapping[str, Any], match: re.Match[str]) -> bool:
    """A request with `stream: true` is streamed."""
    return request.get("stream") is True


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
    streams=streams,
    stream=stream,
)
