"""OpenAI's tool calls as the core reads them: function calls and custom tools' calls, on chat
and on the Responses API.

A chat message's `tool_calls` hold two kinds of call: a function call, `{"id", "type":
"function", "function": {"name", "arguments"}}` (the arguments a JSON object's text), and a
custom tool's call, `{"id", "type": "custom", "custom": {"name", "input"}}` (the input free
text, which the tool takes as it is). Each is read with its kind (`ToolCall.kind`), a custom
call's input kept exactly as sent: it is never read as JSON, and never taken for a function
call without a name.

A stream's delta (`ChoiceDelta.tool_calls[]`) has no `custom` field in the openai SDK's types:
the SDK keeps one it is sent as an extra field (a dict), read here like any other (`is_custom`).

The Responses API's `output` holds them as items of their own: `{"type": "function_call",
"call_id", "name", "arguments"}` and `{"type": "custom_tool_call", "call_id", "name", "input"}`
(`responses_call`). A stream sends a custom call's input in pieces (the
`response.custom_tool_call_input.delta` events, never a function's arguments) and the whole
item at its `response.output_item.done`, where it is read whole. A repair sends a custom call
back as a `custom_tool_call` item (`responses_item`), answered by a `custom_tool_call_output`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from healjson._core.wire.reply import CUSTOM, ToolCall

from ._fields import as_list, get_field, is_record, json_text, opt_str

__all__ = [
    "CUSTOM_CALL",
    "FUNCTION_CALL",
    "chat_call",
    "chat_calls",
    "custom_ids",
    "input_text",
    "is_custom",
    "responses_call",
    "responses_item",
]

FUNCTION_CALL: Final = "function_call"
"""A Responses `output` item's type: a function call."""
CUSTOM_CALL: Final = "custom_tool_call"
"""A Responses `output` item's type: a custom tool's call (its `input` free text)."""


def chat_calls(raw: Any) -> tuple[ToolCall, ...]:
    """A chat message's `tool_calls` (none when it is no list)."""
    if not isinstance(raw, list | tuple):
        return ()
    return tuple(chat_call(call) for call in raw)


def chat_call(call: Any) -> ToolCall:
    """One call of a chat message, function or custom, with its id."""
    call_id = opt_str(get_field(call, "id"))
    if is_custom(call):
        custom = get_field(call, "custom")
        custom = custom if is_record(custom) else {}
        name = opt_str(get_field(custom, "name")) or ""
        return ToolCall(name, input_text(get_field(custom, "input")), call_id, CUSTOM)
    function = get_field(call, "function") or {}
    name = opt_str(get_field(function, "name")) or ""
    arguments = get_field(function, "arguments")
    if isinstance(arguments, str):
        return ToolCall(name, arguments, call_id)
    return ToolCall(name, json_text(arguments), call_id, as_object=True)


def is_custom(call: Any) -> bool:
    """True for a custom tool's call (or a streamed piece of one): a `custom` field that holds
    fields, or `type` `"custom"` without a `function`."""
    if is_record(get_field(call, "custom")):
        return True
    return get_field(call, "type") == CUSTOM and not is_record(get_field(call, "function"))


def input_text(value: Any) -> str:
    """A custom call's input as text: a string as it is (exactly), none as "", any other value
    its JSON text (never dropped)."""
    if isinstance(value, str):
        return value
    return "" if value is None else json_text(value)


# -- the Responses API -----------------------------------------------------------------------


def responses_call(item: Any, kind: Any) -> ToolCall | None:
    """A Responses `output` item of type `kind` as a call (None: no call): a `function_call`
    (its arguments text, or a value's JSON text), a `custom_tool_call` (its input exactly)."""
    if kind == FUNCTION_CALL:
        arguments = get_field(item, "arguments")
        call_id = opt_str(get_field(item, "call_id"))
        if isinstance(arguments, str):
            return ToolCall(_name(item), arguments, call_id)
        return ToolCall(_name(item), json_text(arguments), call_id, as_object=True)
    if kind == CUSTOM_CALL:
        text = input_text(get_field(item, "input"))
        return ToolCall(_name(item), text, opt_str(get_field(item, "call_id")), CUSTOM)
    return None


def _name(item: Any) -> str:
    return str(get_field(item, "name") or "")


def custom_ids(messages: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """The ids of the custom calls the assistant turns of chat-style `messages` made (the tool
    messages that answer them are `custom_tool_call_output` items)."""
    return frozenset(
        str(get_field(call, "id") or "")
        for message in messages
        if message.get("role") == "assistant"
        for call in as_list(message.get("tool_calls"))
        if is_custom(call)
    )


def responses_item(call: Any) -> dict[str, Any]:
    """A chat-shaped call of an assistant turn (a repair's, `repair.calls`) as the Responses
    input item that sends it back: a `custom_tool_call` with its input exactly, else a
    `function_call`."""
    call_id = str(get_field(call, "id") or "")
    if is_custom(call):
        custom = get_field(call, "custom")
        custom = custom if is_record(custom) else {}
        name = str(get_field(custom, "name") or "")
        text = input_text(get_field(custom, "input"))
        return {"type": CUSTOM_CALL, "call_id": call_id, "name": name, "input": text}
    function = get_field(call, "function") or {}
    arguments = get_field(function, "arguments")
    return {
        "type": FUNCTION_CALL,
        "call_id": call_id,
        "name": str(get_field(function, "name") or ""),
        "arguments": arguments if isinstance(arguments, str) else json_text(arguments),
    }
