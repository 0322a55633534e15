"""What the three wire formats share: the `WireFormat` record, usage estimation, request text."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from healjson.testing._replies import ScriptedReply

    from ._sse import SseStream

JSON_TYPE: Final = "application/json"


class UnservableReply(ValueError):
    """A scripted reply the route's format cannot carry (served as a script error)."""


@dataclass(frozen=True, slots=True)
class WireFormat:
    """One provider's wire format, as much of it as the server's handler needs.

    `path` is the model route (matched in full against a POST's path, trailing `/` stripped).
    `malformed` is the HTTP 400 message for a body that is not a JSON object; `unsupported`
    says why a well-formed request is refused with HTTP 400 (`None`: it is not).
    `requested_model` is the model the request names (not necessarily a string).
    `prompt_chars` counts the prompt text of a request, system prompt included.
    `error_body(status, message, type, param, code)` is an error body in the format's shape.
    `reply_body(number, model, reply, usage, request)` is a reply's body and content type;
    it raises `UnservableReply` for a reply the format cannot carry. `streams` says whether a
    request asks for a streamed reply, which `stream(number, model, reply, usage, request)`
    describes (raising `UnservableReply` likewise).
    """

    path: re.Pattern[str]
    malformed: str
    unsupported: Callable[[Mapping[str, Any], re.Match[str]], str | None]
    requested_model: Callable[[Mapping[str, Any], re.Match[str]], object]
    prompt_chars: Callable[[Mapping[str, Any]], int]
    error_body: Callable[[int, str, str | None, str | None, str | None], bytes]
    reply_body: Callable[
        [int, str, ScriptedReply, dict[str, int], Mapping[str, Any]], tuple[bytes, str]
    ]
    streams: Callable[[Mapping[str, Any], re.Match[str]], bool]
    stream: Callable[[int, str, ScriptedReply, dict[str, int], Mapping[str, Any]], SseStream]


def reply_error_message(reply: ScriptedReply) -> str:
    """The message of a scripted HTTP error: its `content`, or a stand-in naming the status."""
    return reply.content or f"Scripted HTTP {reply.status} error."


def body_model(body: Mapping[str, Any], match: re.Match[str]) -> object:
    """The `model` field of a request body (OpenAI's and Anthropic's requests)."""
    return body.get("model")


def never_unsupported(body: Mapping[str, Any], match: re.Match[str]) -> str | None:
    """Every well-formed request is answered."""
    return None


def content_text(content: object) -> str:
    """A message's text: the string itself, or its text parts joined when it is a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text") or "")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def messages_chars(body: Mapping[str, Any]) -> int:
    """Characters of text in a request's `messages` (OpenAI's and Anthropic's shape)."""
    messages = body.get("messages")
    messages = messages if isinstance(messages, list) else []
    return sum(len(content_text(m.get("content"))) for m in messages if isinstance(m, dict))


def unservable(exc: Exception) -> str:
    """Why a scripted reply was not served, for the HTTP 500 the client gets instead of a
    traceback on the server's stderr: an `UnservableReply`'s message, or what rendering the
    reply raised (a field of the wrong type, in a reply no type checker saw)."""
    if isinstance(exc, UnservableReply):
        return str(exc)
    return (
        f"this reply cannot be rendered ({type(exc).__name__}: {exc}): check the types of its "
        "fields (texts are strings, tool_calls a list of OpenAI-shaped calls)"
    )


_TEXTS: Final = ("content", "refusal", "reasoning", "redacted_thinking", "finish_reason")


def check_texts(reply: ScriptedReply) -> None:
    """`UnservableReply` for a text field of the reply that is not a string (or None): a reply
    built from a file, or without a type checker, can hold anything."""
    for name in _TEXTS:
        value = getattr(reply, name)
        if value is not None and not isinstance(value, str):
            raise UnservableReply(
                f"{name} must be a string or None, got {type(value).__name__} {value!r:.80}"
            )


def usage(reply: ScriptedReply, prompt_chars: int) -> dict[str, int]:
    """The reply's usage in OpenAI's flat names, `reasoning_tokens` only when the reply has
    `reasoning` or its explicit `usage` names them, `cached_tokens` / `cache_write_tokens` only
    when its explicit `usage` names them (an estimate has no cache); each payload builder maps
    it onto its route's fields, so a reply without reasoning or cache is sent exactly as
    before. `UnservableReply` for a reply whose texts are not strings (`check_texts`)."""
    check_texts(reply)
    if reply.usage is not None:
        counts = dict(reply.usage)
        counts.setdefault("prompt_tokens", 0)
        counts.setdefault("completion_tokens", counts.get("reasoning_tokens", 0))
        counts.setdefault("total_tokens", counts["prompt_tokens"] + counts["completion_tokens"])
        return counts
    prompt = prompt_chars // 4
    completion = len(reply.content or "") // 4
    if reply.reasoning is None:
        return {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
    reasoning = len(reply.reasoning) // 4
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion + reasoning,
        "total_tokens": prompt + completion + reasoning,
        "reasoning_tokens": reasoning,
    }


def tool_arguments(call: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """An OpenAI-shaped tool call's function name and its `arguments` parsed as a JSON object
    (Anthropic's `tool_use.input` and Gemini's `functionCall.args` cannot carry anything else)."""
    function = call.get("function") or {}
    name = str(function.get("name") or "tool")
    arguments = function.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            arguments = None
    if not isinstance(arguments, dict):
        raise UnservableReply(
            f"tool call {name!r}: arguments must be a JSON object to be served as Anthropic's "
            f"tool_use input or Gemini's functionCall args, got {function.get('arguments')!r} "
            "(Anthropic's stream sends any arguments text: request it with stream=True)"
        )
    return name, arguments
