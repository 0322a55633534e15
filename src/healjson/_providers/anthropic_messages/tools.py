"""Anthropic's tool dialect: client tools as the Messages API writes them (what
`messages.create(..., heal_tools=True)` reads), and a stream's events read call by call.

A client tool is `{"name", "input_schema", ...}` (type absent or `custom`); a server tool
(`web_search_...`) is passed on, its calls not the caller's to check. A pydantic model class is
sent as a tool named after the class. `tool_choice` `{"type": "any"}` forces some call,
`{"type": "tool", "name"}` that one.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from healjson._core.wire.reply import Reply, ToolCall, new_reply
from healjson._core.wire.tally import UsageTally
from healjson._providers._fields import get_field, opt_str
from healjson._providers._unreadable import chunk_text, unreadable_as_failure
from healjson._providers.provider import ToolDialect

from .events import FINISH, anthropic_usage, start_piece, stated_counts

__all__ = ["ANTHROPIC", "AnthropicCollector", "forces_call"]


class AnthropicCollector:
    """Messages stream events: text blocks joined, each `tool_use` block a call (its id and
    name from `content_block_start`, its arguments the `input_json_delta` pieces as sent),
    the stop reason and usage from `message_start` / `message_delta`; each `thinking` block's
    pieces joined, the blocks apart by a blank line, as the reasoning (as the whole message's
    reader keeps them)."""

    __slots__ = ("_blocks", "_finish", "_model", "_refusal", "_usage")

    def __init__(self) -> None:
        self._blocks: dict[int, list[Any]] = {}  # index -> [kind, id, name, pieces]
        self._finish: str | None = None
        self._refusal: str | None = None
        self._model: str | None = None
        self._usage = UsageTally()  # `message_start`'s and `message_delta`'s counts

    @unreadable_as_failure
    def feed(self, event: Any) -> str:
        """Take one event; the answer text it carries ("" for none)."""
        kind = get_field(event, "type")
        index = get_field(event, "index")
        if kind == "content_block_start" and isinstance(index, int):
            block = get_field(event, "content_block") or {}
            entry = [
                get_field(block, "type"),
                opt_str(get_field(block, "id")),
                get_field(block, "name"),
                [],
            ]
            first = start_piece(event)  # what the start carries is the block's first piece
            piece = first.text or first.reasoning or first.tool_arguments
            if piece and entry[0] in ("text", "thinking", "tool_use"):
                entry[3].append(piece)
            self._blocks[index] = entry
            return first.text
        if kind == "content_block_delta" and isinstance(index, int) and index in self._blocks:
            delta = get_field(event, "delta") or {}
            piece = get_field(delta, "type")
            entry = self._blocks[index]
            if piece == "text_delta" and entry[0] == "text":
                text = chunk_text(get_field(delta, "text"), "text_delta.text")
                entry[3].append(text)
                return text
            if piece == "input_json_delta" and entry[0] == "tool_use":
                json_piece = get_field(delta, "partial_json")
                entry[3].append(chunk_text(json_piece, "input_json_delta.partial_json"))
            if piece == "thinking_delta" and entry[0] == "thinking":
                entry[3].append(chunk_text(get_field(delta, "thinking"), "thinking_delta.thinking"))
        elif kind == "message_start":
            message = get_field(event, "message") or {}
            self._model = opt_str(get_field(message, "model"))
            opening = anthropic_usage(  # the input counts: `message_delta` has the output's
                get_field(message, "usage"), requests=1, model=self._model, part="start"
            )
            if opening is not None:
                self._usage.add(opening, partial=True)
        elif kind == "message_delta":
            delta = get_field(event, "delta") or {}
            stop = opt_str(get_field(delta, "stop_reason"))
            self._finish = None if stop is None else FINISH.get(stop, stop)
            if stop == "refusal":
                details = get_field(delta, "stop_details") or get_field(event, "stop_details") or {}
                self._refusal = opt_str(get_field(details, "explanation")) or "refused"
            totals = anthropic_usage(
                get_field(event, "usage"), requests=1, model=self._model, part="end"
            )
            if totals is not None:
                self._usage.add(totals, stated_counts(get_field(event, "usage"), "end"))
        return ""

    def reply(self) -> Reply:
        """The whole answer read so far."""
        ordered = [self._blocks[i] for i in sorted(self._blocks)]
        texts = ["".join(pieces) for kind, _, _, pieces in ordered if kind == "text"]
        thoughts = ["".join(pieces) for kind, _, _, pieces in ordered if kind == "thinking"]
        calls = tuple(
            ToolCall(str(name or ""), "".join(pieces), call_id)
            for kind, call_id, name, pieces in ordered
            if kind == "tool_use"
        )
        usage = self._usage.usage
        content = "".join(texts) if texts else None
        return new_reply(
            None if self._refusal else content,
            self._finish,
            self._refusal,
            usage,
            self._model,
            "\n\n".join(t for t in thoughts if t) or None,
            calls,
        )


def _read(tool: Any) -> tuple[str, Any, Any] | None:
    """A client tool's name, input schema and the tool as sent; None for a server tool."""
    if not isinstance(tool, Mapping) or tool.get("type", "custom") != "custom":
        return None
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"tools: a tool needs a name, got {tool!r}")
    return name, tool.get("input_schema"), tool


def _wire(model: type[BaseModel]) -> dict[str, Any]:
    found: dict[str, Any] = {"name": model.__name__, "input_schema": model.model_json_schema()}
    doc = (model.__doc__ or "").strip()
    return {**found, "description": doc} if doc else found


def _forced(choice: Any) -> bool | str | None:
    """What a `tool_choice` forces: `any` some call, `tool` the named one; `none` allows no
    call (None)."""
    if isinstance(choice, Mapping) and choice.get("type") == "none":
        return None
    if isinstance(choice, Mapping) and choice.get("type") == "any":
        return True
    if isinstance(choice, Mapping) and choice.get("type") == "tool":
        name = choice.get("name")
        return name if isinstance(name, str) and name else False
    return False


def forces_call(choice: Any) -> bool:
    """True when a `tool_choice` forces a tool call (`{"type": "any"}`, or `{"type": "tool",
    "name": ...}`, named or not); `auto` and `none` leave the model free to answer in text."""
    return get_field(choice, "type") in ("any", "tool")


ANTHROPIC = ToolDialect("anthropic", _read, _wire, _forced, AnthropicCollector)
"""The Messages API's client tools."""
