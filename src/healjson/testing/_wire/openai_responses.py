"""OpenAI's Responses API on the wire: a `response` object or its typed SSE stream, errors.

A reply is a `response` whose `output` holds, in order: a `reasoning` item (its `summary_text`
= `reasoning`), one `message` item per `commentary` text (`phase: "commentary"`), the message
(an `output_text` part for `content`, a `refusal` part for `refusal`; `phase: "final_answer"`
when the reply scripts commentary), and a `function_call` item per tool call. Its `status` is
`completed` for a `stop` or `tool_calls` finish, `failed` (with `error`) when the reply sets
`response_error`, else `incomplete` with `incomplete_details.reason` = `max_output_tokens` for
`length`, `content_filter` for `content_filter` (any other finish reason as given).

Streamed (`stream: true`), the same response is sent as the typed events of the API, each
`event: TYPE` + `data: {...}` with its `sequence_number`: `response.created`,
`response.in_progress`, then per item `response.output_item.added`, its parts and deltas and
`response.output_item.done`, and last `response.completed`, `response.incomplete` or
`response.failed`. There is no `[DONE]`.
"""

from __future__ import annotations

import itertools
import json
import re
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from ._common import JSON_TYPE, WireFormat, body_model, never_unsupported
from ._sse import Event, SseStream, Text, error_message, pieces
from .openai_chat import MALFORMED as CHAT_MALFORMED
from .openai_chat import error_body as chat_error_body

if TYPE_CHECKING:
    from healjson.testing._replies import ScriptedReply

PATH: Final = re.compile(r"(?:/v1)?/responses")
MALFORMED: Final = CHAT_MALFORMED
_DONE_STATUSES: Final = frozenset({"stop", "tool_calls"})
_INCOMPLETE_REASONS: Final = {"length": "max_output_tokens", "content_filter": "content_filter"}
_FINAL_EVENTS: Final = {
    "completed": "response.completed",
    "incomplete": "response.incomplete",
    "failed": "response.failed",
}
_TEXT_PARTS: Final = frozenset({"input_text", "output_text", "text"})

error_body = chat_error_body


# -- the request -----------------------------------------------------------------------------


def item_text(content: object) -> str:
    """An input item's text: the string itself, or its text parts (`input_text`,
    `output_text`) joined when it is a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text") or "")
            for part in content
            if isinstance(part, dict) and part.get("type") in _TEXT_PARTS
        )
    return ""


def messages(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A Responses request as chat-style messages: `instructions` as a system message, then
    `input` (a string: one user message; a list: each message item as `{"role", "content":
    text}`, a `function_call` as an assistant message with `tool_calls`, a
    `function_call_output` as a `tool` message; other items are left out)."""
    found: list[dict[str, Any]] = []
    instructions = body.get("instructions")
    if isinstance(instructions, str) and instructions:
        found.append({"role": "system", "content": instructions})
    items = body.get("input")
    if isinstance(items, str):
        return [*found, {"role": "user", "content": items}]
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type", "message")
        if kind == "message":
            found.append({"role": item.get("role"), "content": item_text(item.get("content"))})
        elif kind == "function_call":
            function = {"name": item.get("name"), "arguments": item.get("arguments")}
            call = {"id": item.get("call_id"), "type": "function", "function": function}
            found.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            output = item_text(item.get("output"))
            found.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": output})
    return found


def prompt_chars(body: Mapping[str, Any]) -> int:
    """Characters of the instructions and of the input messages' text."""
    return sum(len(message["content"] or "") for message in messages(body))


def text_format(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The request's `text.format` (`{"type": "json_schema", "name", "schema", "strict"}`,
    `{"type": "json_object"}` or `{"type": "text"}`), None when it names none."""
    text = body.get("text")
    found = text.get("format") if isinstance(text, dict) else None
    return found if isinstance(found, dict) else None


# -- the reply -------------------------------------------------------------------------------


def outcome(reply: ScriptedReply) -> tuple[str, dict[str, Any] | None, dict[str, Any] | None]:
    """The response's `status`, `incomplete_details` and `error` for `reply`."""
    if reply.response_error is not None:
        error = {"code": reply.error_code or "server_error", "message": reply.response_error}
        return "failed", None, error
    if reply.finish_reason in _DONE_STATUSES:
        return "completed", None, None
    reason = _INCOMPLETE_REASONS.get(reply.finish_reason, reply.finish_reason)
    return "incomplete", {"reason": reason}, None


def responses_usage(usage: Mapping[str, int]) -> dict[str, Any]:
    """The Responses API's `usage` from the flat OpenAI names: `input_tokens` (cached and
    cache-written tokens included, detailed in `input_tokens_details`), `output_tokens`
    (reasoning tokens included, detailed in `output_tokens_details`), `total_tokens`."""
    return {
        "input_tokens": usage["prompt_tokens"],
        "input_tokens_details": {
            "cached_tokens": usage.get("cached_tokens", 0),
            "cache_write_tokens": usage.get("cache_write_tokens", 0),
        },
        "output_tokens": usage["completion_tokens"],
        "output_tokens_details": {"reasoning_tokens": usage.get("reasoning_tokens", 0)},
        "total_tokens": usage["total_tokens"],
    }


def output_items(number: int, reply: ScriptedReply, status: str) -> list[dict[str, Any]]:
    """The `output` of script item `number`, each item whole (`status`: the items' own,
    `completed` or `incomplete`)."""
    items: list[dict[str, Any]] = []
    if reply.reasoning is not None:
        summary = [{"type": "summary_text", "text": reply.reasoning}]
        items.append({"id": f"rs_scripted_{number}", "type": "reasoning", "summary": summary})
    phased = reply.commentary is not None
    for index, text in enumerate(reply.commentary or []):
        part = _part("output_text", text)
        items.append(_message(f"msg_scripted_{number}_c{index}", [part], status, "commentary"))
    parts = []
    if reply.content is not None:
        parts.append(_part("output_text", reply.content))
    if reply.refusal is not None:
        parts.append(_part("refusal", reply.refusal))
    if parts:
        phase = "final_answer" if phased else None
        items.append(_message(f"msg_scripted_{number}", parts, status, phase))
    for index, call in enumerate(reply.tool_calls or []):
        function = call.get("function") or {}
        arguments = function.get("arguments")
        items.append(
            {
                "id": f"fc_scripted_{number}_{index}",
                "type": "function_call",
                "status": status,
                "call_id": call.get("id") or f"call_scripted_{number}_{index}",
                "name": str(function.get("name") or "tool"),
                "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
            }
        )
    return items


def _part(kind: str, text: str) -> dict[str, Any]:
    if kind == "refusal":
        return {"type": "refusal", "refusal": text}
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


def _message(
    item_id: str, content: list[dict[str, Any]], status: str, phase: str | None
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": content,
    }
    if phase is not None:
        item["phase"] = phase
    return item


def response(
    number: int,
    model: str,
    reply: ScriptedReply,
    usage: dict[str, int] | None,
    request: Mapping[str, Any],
    *,
    created_at: int,
    final: bool = True,
) -> dict[str, Any]:
    """A `response` object: the finished one (`final`), or the one the stream opens with
    (`in_progress`, no output, no usage). Request settings are echoed as the API does."""
    status, incomplete, error = outcome(reply) if final else ("in_progress", None, None)
    item_status = "completed" if status == "completed" else "incomplete"
    tool_choice = request.get("tool_choice", "auto")
    return {
        "id": f"resp_scripted_{number}",
        "object": "response",
        "created_at": created_at,
        "status": status,
        "completed_at": int(time.time()) if status == "completed" else None,
        "error": error,
        "incomplete_details": incomplete,
        "instructions": request.get("instructions"),
        "max_output_tokens": request.get("max_output_tokens"),
        "model": model,
        "output": output_items(number, reply, item_status) if final else [],
        "parallel_tool_calls": request.get("parallel_tool_calls", True),
        "previous_response_id": request.get("previous_response_id"),
        "reasoning": request.get("reasoning") or {"effort": None, "summary": None},
        "store": request.get("store", True),
        "temperature": request.get("temperature", 1.0),
        "text": {"format": text_format(request) or {"type": "text"}},
        "tool_choice": tool_choice,
        "tools": request.get("tools") or [],
        "top_p": request.get("top_p", 1.0),
        "truncation": request.get("truncation", "disabled"),
        "usage": responses_usage(usage) if final and usage is not None else None,
        "user": request.get("user"),
        "metadata": request.get("metadata") or {},
    }


def reply_body(
    number: int,
    model: str,
    reply: ScriptedReply,
    usage: dict[str, int],
    request: Mapping[str, Any],
) -> tuple[bytes, str]:
    """Script item `number` as a `response` (a `stream: true` request is answered by
    `stream`)."""
    payload = response(number, model, reply, usage, request, created_at=int(time.time()))
    return json.dumps(payload).encode(), JSON_TYPE


# -- the stream ------------------------------------------------------------------------------


def stream(
    number: int,
    model: str,
    reply: ScriptedReply,
    usage: dict[str, int],
    request: Mapping[str, Any],
) -> SseStream:
    """Script item `number` as the API's typed events (see the module's docstring), the texts
    split by `chunk_chars`. A scripted stream error is an `error` event carrying its fields
    both flat (`code`, `message`, `param`, as the API reference documents) and under `error`
    (with `type`, as the API sends them), which the openai SDK raises as `openai.APIError`.

    Each event's `sequence_number` is set when it is framed: the events are framed once each,
    in the order they are sent, so the numbers run 0, 1, 2... in every planned stream, a
    shortened one and its error event included."""
    created_at = int(time.time())
    opening = response(number, model, reply, None, request, created_at=created_at, final=False)
    final = response(number, model, reply, usage, request, created_at=created_at)
    events: list[Event] = [
        {"type": "response.created", "response": opening},
        {"type": "response.in_progress", "response": opening},
    ]
    for index, item in enumerate(final["output"]):
        events += _item_events(index, item, reply.chunk_chars)
    events.append({"type": _FINAL_EVENTS[final["status"]], "response": final})

    def error(stream_error: str, sent_chars: int) -> dict[str, Any]:
        message = error_message(stream_error, sent_chars)
        fields = {"code": reply.error_code, "message": message, "param": reply.error_param}
        return {"type": "error", **fields, "error": {"type": stream_error, **fields}}

    return SseStream(events, _encoder(), error, opening=2)


def _encoder() -> Callable[[Mapping[str, Any]], bytes]:
    """Frames one stream's events, numbering them in the order they are framed."""
    numbers = itertools.count()

    def encode(payload: Mapping[str, Any]) -> bytes:
        event = {**payload, "sequence_number": next(numbers)}
        return f"event: {payload['type']}\ndata: {json.dumps(event)}\n\n".encode()

    return encode


def _item_events(index: int, item: dict[str, Any], chunk_chars: int | None) -> list[Event]:
    """The events streaming output item `index`: added (empty), its parts, done (whole)."""
    where = {"item_id": item["id"], "output_index": index}

    def deltas(text: str, make: Callable[[str], dict[str, Any]]) -> list[Event]:
        return [Text(piece, make) for piece in pieces(text, chunk_chars)]

    def delta(kind: str, **more: Any) -> Callable[[str], dict[str, Any]]:
        return lambda text: {"type": kind, **where, **more, "delta": text}

    kind = item["type"]
    events: list[Event]
    if kind == "reasoning":
        empty = {**item, "summary": []}
        text = item["summary"][0]["text"]
        summary = {**where, "summary_index": 0}
        part = {"type": "summary_text", "text": text}
        events = [
            {"type": "response.output_item.added", "output_index": index, "item": empty},
            {
                "type": "response.reasoning_summary_part.added",
                **summary,
                "part": {**part, "text": ""},
            },
            *deltas(text, delta("response.reasoning_summary_text.delta", summary_index=0)),
            {"type": "response.reasoning_summary_text.done", **summary, "text": text},
            {"type": "response.reasoning_summary_part.done", **summary, "part": part},
        ]
    elif kind == "message":
        empty = {**item, "status": "in_progress", "content": []}
        events = [{"type": "response.output_item.added", "output_index": index, "item": empty}]
        for number, part in enumerate(item["content"]):
            events += _part_events(where, number, part, deltas, delta)
    else:  # function_call
        empty = {**item, "status": "in_progress", "arguments": ""}
        arguments = item["arguments"]
        events = [
            {"type": "response.output_item.added", "output_index": index, "item": empty},
            *deltas(arguments, delta("response.function_call_arguments.delta")),
            {
                "type": "response.function_call_arguments.done",
                **where,
                "name": item["name"],
                "arguments": arguments,
            },
        ]
    events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    return events


def _part_events(
    where: dict[str, Any],
    number: int,
    part: dict[str, Any],
    deltas: Callable[[str, Callable[[str], dict[str, Any]]], list[Event]],
    delta: Callable[..., Callable[[str], dict[str, Any]]],
) -> list[Event]:
    """The events streaming content part `number` of a message: added (empty), its deltas,
    its text's done event, done (whole)."""
    at = {**where, "content_index": number}
    if part["type"] == "refusal":
        text, empty = part["refusal"], {**part, "refusal": ""}
        streamed = deltas(text, delta("response.refusal.delta", content_index=number))
        finished = {"type": "response.refusal.done", **at, "refusal": text}
    else:
        text, empty = part["text"], {**part, "text": ""}
        make = delta("response.output_text.delta", content_index=number, logprobs=[])
        streamed = deltas(text, make)
        finished = {"type": "response.output_text.done", **at, "text": text, "logprobs": []}
    return [
        {"type": "response.content_part.added", **at, "part": empty},
        *streamed,
        finished,
        {"type": "response.content_part.done", **at, "part": part},
    ]


def streams(request: Mapping[str, Any], match: re.Match[str]) -> bool:
    """A request with `stream: true` is streamed."""
    return request.get("stream") is True


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
