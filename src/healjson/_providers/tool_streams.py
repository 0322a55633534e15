"""A streamed answer read whole, call by call: what a healed tool-call stream needs.

The core's chunk reader (`Delta`) joins the arguments of every tool call of a stream into one
text (a streamed answer has one value); judging each call on its own needs them apart. A
collector takes a stream's chunks (OpenAI chat) or events (the Responses API, Anthropic
Messages) one by one, hands back the answer text each one carries, and at the end gives the
whole answer as a `Reply`, with every call's id, name and arguments text as sent.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from healjson._core.wire.reply import Reply, ToolCall, new_reply

from ._fields import _get, _listed, _opt_str
from ._unreadable import unreadable_as_failure
from .anthropic_messages import FINISH, anthropic_usage
from .openai_chat import _usage as chat_usage
from .openai_responses import ResponseFailed, _error_text, read_response

__all__ = ["AnthropicCollector", "ChatCollector", "ResponsesCollector"]


class ChatCollector:
    """`chat.completion.chunk`s (SDK objects or dicts): content, refusal, reasoning is not
    kept, each call gathered by its `index` (its id and name from its first delta)."""

    __slots__ = ("_calls", "_finish", "_model", "_refusal", "_text", "_usage")

    def __init__(self) -> None:
        self._text: list[str] = []
        self._refusal: list[str] = []
        self._calls: dict[int, list[Any]] = {}  # index -> [id, name, argument pieces]
        self._finish: str | None = None
        self._model: str | None = None
        self._usage: Any = None

    @unreadable_as_failure
    def feed(self, chunk: Any) -> str:
        """Take one chunk; the answer text it carries ("" for none)."""
        self._model = self._model or _opt_str(_get(chunk, "model"))
        usage = _get(chunk, "usage")
        if usage is not None:
            self._usage = usage
        choices = _listed(_get(chunk, "choices"))
        choice = next((c for c in choices if (_get(c, "index") or 0) == 0), None)
        if choice is None:
            return ""
        finish = _get(choice, "finish_reason")
        if finish is not None:
            self._finish = str(finish)
        delta = _get(choice, "delta") or {}
        refusal = _get(delta, "refusal")
        if isinstance(refusal, str):
            self._refusal.append(refusal)
        for call in _listed(_get(delta, "tool_calls")):
            index = _get(call, "index")
            entry = self._calls.setdefault(index if isinstance(index, int) else 0, [None, "", []])
            entry[0] = entry[0] or _opt_str(_get(call, "id"))
            function = _get(call, "function") or {}
            entry[1] = entry[1] or (_opt_str(_get(function, "name")) or "")
            piece = _get(function, "arguments")
            if isinstance(piece, str):
                entry[2].append(piece)
        text = _get(delta, "content")
        if isinstance(text, str) and text:
            self._text.append(text)
            return text
        return ""

    def reply(self) -> Reply:
        """The whole answer read so far."""
        calls = tuple(
            ToolCall(name, "".join(pieces), call_id)
            for _, (call_id, name, pieces) in sorted(self._calls.items())
        )
        return new_reply(
            "".join(self._text) if self._text else None,
            self._finish,
            "".join(self._refusal) or None,
            None if self._usage is None else chat_usage(self._usage, self._model),
            self._model,
            None,
            calls,
        )


class ResponsesCollector:
    """Responses API stream events: the text of `response.output_text.delta` events, and the
    whole answer from the final `response.completed` / `response.incomplete` event (which holds
    the response); `response.failed` and an `error` event raise `ResponseFailed`."""

    __slots__ = ("_final",)

    def __init__(self) -> None:
        self._final: Reply | None = None

    @unreadable_as_failure
    def feed(self, event: Any) -> str:
        """Take one event; the answer text it carries ("" for none)."""
        kind = _get(event, "type")
        if kind == "response.output_text.delta":
            piece = _get(event, "delta")
            return piece if isinstance(piece, str) else ""
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            self._final = read_response(_get(event, "response") or {})  # raises when failed
        elif kind == "error":
            raise ResponseFailed(_error_text(_get(event, "error") or event, "the stream failed"))
        return ""

    def reply(self) -> Reply:
        """The whole answer (a stream that ended without its final event: none, an error)."""
        if self._final is None:
            raise ResponseFailed("the stream ended before the response was complete")
        return self._final


class AnthropicCollector:
    """Messages stream events: text blocks joined, each `tool_use` block a call (its id and
    name from `content_block_start`, its arguments the `input_json_delta` pieces as sent),
    the stop reason and usage from `message_start` / `message_delta`; thinking is not kept."""

    __slots__ = ("_blocks", "_finish", "_model", "_refusal", "_start", "_usage")

    def __init__(self) -> None:
        self._blocks: dict[int, list[Any]] = {}  # index -> [kind, id, name, pieces]
        self._finish: str | None = None
        self._refusal: str | None = None
        self._model: str | None = None
        self._start: Any = None
        self._usage: Any = None

    @unreadable_as_failure
    def feed(self, event: Any) -> str:
        """Take one event; the answer text it carries ("" for none)."""
        kind = _get(event, "type")
        index = _get(event, "index")
        if kind == "content_block_start" and isinstance(index, int):
            block = _get(event, "content_block") or {}
            entry = [_get(block, "type"), _opt_str(_get(block, "id")), _get(block, "name"), []]
            self._blocks[index] = entry
        elif kind == "content_block_delta" and isinstance(index, int) and index in self._blocks:
            delta = _get(event, "delta") or {}
            piece = _get(delta, "type")
            entry = self._blocks[index]
            if piece == "text_delta" and entry[0] == "text":
                text = str(_get(delta, "text") or "")
                entry[3].append(text)
                return text
            if piece == "input_json_delta" and entry[0] == "tool_use":
                entry[3].append(str(_get(delta, "partial_json") or ""))
        elif kind == "message_start":
            message = _get(event, "message") or {}
            self._model = _opt_str(_get(message, "model"))
            self._start = anthropic_usage(_get(message, "usage"), requests=1, model=self._model)
        elif kind == "message_delta":
            delta = _get(event, "delta") or {}
            stop = _opt_str(_get(delta, "stop_reason"))
            self._finish = None if stop is None else FINISH.get(stop, stop)
            if stop == "refusal":
                details = _get(delta, "stop_details") or _get(event, "stop_details") or {}
                self._refusal = _opt_str(_get(details, "explanation")) or "refused"
            self._usage = anthropic_usage(_get(event, "usage"), requests=1, model=self._model)
        return ""

    def reply(self) -> Reply:
        """The whole answer read so far."""
        ordered = [self._blocks[i] for i in sorted(self._blocks)]
        texts = ["".join(pieces) for kind, _, _, pieces in ordered if kind == "text"]
        calls = tuple(
            ToolCall(str(name or ""), "".join(pieces), call_id)
            for kind, call_id, name, pieces in ordered
            if kind == "tool_use"
        )
        usage = self._usage or self._start
        if usage is not None and self._start is not None and not usage.prompt_tokens:
            usage = dataclasses.replace(
                usage,
                prompt_tokens=self._start.prompt_tokens,
                cache_read_tokens=self._start.cache_read_tokens,
                cache_write_tokens=self._start.cache_write_tokens,
            )
        content = "".join(texts) if texts else None
        return new_reply(
            None if self._refusal else content,
            self._finish,
            self._refusal,
            usage,
            self._model,
            None,
            calls,
        )
