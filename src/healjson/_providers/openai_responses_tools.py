"""The Responses API's tool dialect (`create(..., heal_tools=True)`): function tools written
flat (`{"type": "function", "name", ...}`), custom tools (`{"type": "custom", "name", ...}`),
what a `tool_choice` forces, and a tool-call stream read event by event (`ResponsesCollector`).

A stream that fails part-way (a dropped connection, `response.failed`, an `error` event) keeps
what had arrived, as chat's and Anthropic's collectors do: the text the caller was shown, each
call as far as it came (its id, name and kind, its arguments' pieces, a custom call's whole
item once done), the usage a failed final event reported.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from pydantic import BaseModel

from healjson._core.wire.reply import CUSTOM, FUNCTION, Reply, ToolCall, Usage, new_reply

from ._fields import get_field, opt_str
from ._unreadable import UnreadableReply, chunk_text, unreadable_as_failure
from .openai_calls import CUSTOM_CALL, FUNCTION_CALL, responses_call
from .openai_responses import ResponseFailed, error_text, read_response, usage
from .openai_tools import forced, read_function_tool, strict_function
from .provider import ToolDialect

__all__ = ["RESPONSES", "ResponsesCollector", "read_custom_tool"]

_ENDS: Final = frozenset({"response.completed", "response.incomplete", "response.failed"})


class ResponsesCollector:
    """Responses API stream events, kept as they arrive: the answer text (`output_text`
    deltas; a `commentary` item's set aside as reasoning, as `read_response` sets it), refusal
    and reasoning pieces, the model, and each call by its item: its id, name and kind from
    `response.output_item.added`, its arguments' pieces (`function_call_arguments.delta`, made
    whole by `.done`; a custom call's input pieces), the whole item at `output_item.done`.
    `reply()` is the final `response.completed` / `response.incomplete` event's response (every
    call whole); a stream that ended without it, or failed (`response.failed`, an `error`
    event: `ResponseFailed`), has no reply, but `received()` is what had arrived."""

    __slots__ = ("_at", "_calls", "_final", "_model", "_phases", "_said", "_text", "_usage")

    def __init__(self) -> None:
        self._final: Reply | None = None
        self._text: list[tuple[str | None, str]] = []  # (its item's id, a piece)
        self._said: dict[str, list[str]] = {"refusal": [], "reasoning": []}
        self._phases: dict[str, Any] = {}  # item id -> its phase
        # [item id, call id, name, argument (or custom input) pieces, kind, the call whole]
        self._calls: list[list[Any]] = []
        self._at: dict[str | int, list[Any]] = {}  # item id, output index -> its call
        self._model: str | None = None
        self._usage: Usage | None = None

    @unreadable_as_failure
    def feed(self, event: Any) -> str:
        """Take one event; the answer text it carries ("" for none)."""
        kind = get_field(event, "type")
        said = _SAID.get(kind) if type(kind) is str else None
        if said is not None:
            piece = chunk_text(get_field(event, "delta"), f"delta (of {kind})")
            if said == "text":
                ident = _text_id(event, "item_id")
                self._text.append((ident, piece))
                phase = self._phases.get(ident) if ident is not None else None
                # a commentary item's text is set aside as the reply's reasoning: not shown
                return piece if phase in (None, "final_answer") else ""
            if said in self._said:
                self._said[said].append(piece)
            else:  # a function's arguments, a custom call's input
                self._call(event, None, said)[3].append(piece)
        elif kind in ("response.output_item.added", "response.output_item.done"):
            self._item(event, get_field(event, "item"), kind == "response.output_item.done")
        elif kind == "response.function_call_arguments.done":
            if isinstance(arguments := get_field(event, "arguments"), str):
                self._call(event, None, FUNCTION)[3][:] = [arguments]
        elif kind in _ENDS:
            response = get_field(event, "response") or {}
            if kind == "response.failed":  # what the failed response says it cost
                self._usage = usage(get_field(response, "usage"), self._model)
            try:
                self._final = read_response(response)  # raises when failed
            except UnreadableReply as exc:
                self._usage = exc.reported_usage or self._usage
                raise
        elif kind == "response.created":
            self._model = opt_str(get_field(get_field(event, "response"), "model")) or self._model
        elif kind == "error":
            raise ResponseFailed(
                error_text(get_field(event, "error") or event, "the stream failed")
            )
        return ""

    def _item(self, event: Any, item: Any, done: bool) -> None:
        """An output item added (its id, name, kind, phase) or done (a call whole)."""
        kind = get_field(item, "type")
        phase, ident = get_field(item, "phase"), _text_id(item, "id")
        if phase is not None and ident is not None:
            self._phases[ident] = phase
        if kind not in (FUNCTION_CALL, CUSTOM_CALL):
            return
        entry = self._call(event, item, FUNCTION if kind == FUNCTION_CALL else CUSTOM)
        entry[1] = entry[1] or opt_str(get_field(item, "call_id"))
        entry[2] = entry[2] or opt_str(get_field(item, "name")) or ""
        entry[4] = FUNCTION if kind == FUNCTION_CALL else CUSTOM
        if done:
            entry[5] = responses_call(item, kind)

    def _call(self, event: Any, item: Any, kind: str) -> list[Any]:
        """The call an event is about (by its item's id, else its output index): a new one
        when none is (an index in use by an item of another id starts one too)."""
        ident = _text_id(item, "id") if item is not None else _text_id(event, "item_id")
        index = get_field(event, "output_index")
        at = index if type(index) is int else None
        entry = self._at.get(ident) if ident is not None else None
        if entry is None and at is not None:
            entry = self._at.get(at)
            if entry is not None and ident is not None and entry[0] not in (None, ident):
                entry = None
        if entry is None:
            entry = [ident, None, "", [], kind, None]
            self._calls.append(entry)
        entry[0] = entry[0] or ident
        for key in (ident, at):
            if key is not None:
                self._at[key] = entry
        return entry

    def reply(self) -> Reply:
        """The whole answer (a stream that ended without its final event: none, an error)."""
        if self._final is None:
            raise ResponseFailed("the stream ended before the response was complete")
        return self._final

    def received(self) -> Reply:
        """What had arrived: the whole answer once the final event came, else the pieces as
        `read_response` reads a response (no finish reason; the usage a failed or unreadable
        final event reported)."""
        if self._final is not None:
            return self._final
        phased = bool(self._phases)
        texts: list[str] = []
        aside: list[str] = []
        for ident, piece in self._text:
            final = not phased or self._phases.get(ident or "") == "final_answer"
            (texts if final else aside).append(piece)
        thoughts = ("".join(self._said["reasoning"]), "".join(aside))
        calls = tuple(
            whole or ToolCall(name, "".join(pieces), call_id, kind)
            for _, call_id, name, pieces, kind, whole in self._calls
        )
        return new_reply(
            "".join(texts) if texts else None,
            None,
            "".join(self._said["refusal"]) or None,
            self._usage,
            self._model,
            "\n\n".join(t for t in thoughts if t) or None,
            calls,
        )


_SAID: Final = {
    "response.output_text.delta": "text",
    "response.refusal.delta": "refusal",
    "response.reasoning_summary_text.delta": "reasoning",
    "response.reasoning_text.delta": "reasoning",
    "response.function_call_arguments.delta": FUNCTION,
    "response.custom_tool_call_input.delta": CUSTOM,
}
"""What each delta event of a stream adds to its answer (`ResponsesCollector`)."""


def _read_tool(tool: Any) -> tuple[str, Any, Any] | None:
    return read_function_tool(tool, flat=True)


def _wire_tool(model: type[BaseModel]) -> dict[str, Any]:
    return {"type": "function", **strict_function(model)}


def read_custom_tool(tool: Any) -> str | None:
    """A Responses custom tool's name (flat: `{"type": "custom", "name", "description",
    "format"}`), None for any other tool. Its calls' input is free text, accepted as sent
    (`judge.free_text`): a grammar `format` is the provider's to enforce, not checked here."""
    if not isinstance(tool, Mapping) or tool.get("type") != CUSTOM:
        return None
    name = tool.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(
            f"tools: a custom tool needs a name (the Responses API's are flat: "
            f'{{"type": "custom", "name": ...}}), got {tool!r}'
        )
    return name


def _forced(choice: Any) -> bool | str | None:
    """What a Responses `tool_choice` forces (`openai_tools.forced`), a named custom tool too
    (`{"type": "custom", "name"}`)."""
    if isinstance(choice, Mapping) and choice.get("type") == CUSTOM:
        name = choice.get("name")
        return name if isinstance(name, str) and name else False
    return forced(choice)


RESPONSES: Final = ToolDialect(
    "responses", _read_tool, _wire_tool, _forced, ResponsesCollector, custom=read_custom_tool
)
"""The Responses API's tools (flat: `{"type": "function", "name", ...}`, and custom tools,
`{"type": "custom", "name", ...}`)."""


def _text_id(obj: Any, name: str) -> str | None:
    """An item's id (a string; any other type is no id)."""
    identity = get_field(obj, name) if obj is not None else None
    return identity if isinstance(identity, str) else None
