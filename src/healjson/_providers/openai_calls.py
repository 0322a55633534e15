"""OpenAI chat's tool calls as the core reads them: function calls and custom tools' calls.

A chat message's `tool_calls` hold two kinds of call: a function call, `{"id", "type":
"function", "function": {"name", "arguments"}}` (the arguments a JSON object's text), and a
custom tool's call, `{"id", "type": "custom", "custom": {"name", "input"}}` (the input free
text, which the tool takes as it is). Each is read with its kind (`ToolCall.kind`), a custom
call's input kept exactly as sent: it is never read as JSON, and never taken for a function
call without a name.

A stream's delta (`ChoiceDelta.tool_calls[]`) has no `custom` field in the openai SDK's types:
the SDK keeps one it is sent as an extra field (a dict), read here like any other (`is_custom`).
"""

from __future__ import annotations

from typing import Any

from healjson._core.wire.reply import CUSTOM, ToolCall

from ._fields import get_field, is_record, json_text, opt_str

__all__ = ["chat_call", "chat_calls", "input_text", "is_custom"]


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
    text = arguments if isinstance(arguments, str) else json_text(arguments)
    return ToolCall(name, text, call_id)


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
