"""The Responses API's requests: `Conversation` turns a call's `instructions` and `input` into the
chat-style messages the healer works on, and each request the engine makes back into a Responses
request, keeping the caller's `instructions` and `input` as written (see `Conversation.request`);
`text_format` is a chat `response_format` as the Responses API's `text.format`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic import BaseModel

from ._fields import get_field, json_text
from .openai_calls import custom_ids, responses_item

__all__ = ["Conversation", "text_format"]


# -- the request -----------------------------------------------------------------------------

# id(response_format) -> (it, its `text.format`, `{"format": <that>}`): `strict_format` hands
# out one cached format per target, so the common request translates nothing
_FORMATS: dict[int, tuple[Any, dict[str, Any], dict[str, Any]]] = {}


def text_format(response_format: Any) -> dict[str, Any]:
    """A chat `response_format` as the Responses API's `text.format` (`json_schema` with its
    `name`, `schema`, `strict` at the top; `json_object`; `text`)."""
    return _formats(response_format)[1]


def _formats(response_format: Any) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    cached = _FORMATS.get(id(response_format))
    if cached is not None and cached[0] is response_format:
        return cached
    kind = get_field(response_format, "type")
    if kind == "json_schema":
        found = {"type": "json_schema", **dict(get_field(response_format, "json_schema") or {})}
    else:
        found = {"type": str(kind or "text")}
    if len(_FORMATS) >= 256:
        _FORMATS.clear()
    entry = (response_format, found, {"format": found})
    _FORMATS[id(response_format)] = entry
    return entry


def _item_message(item: Any) -> dict[str, Any]:
    """An input item as the chat-style message the healer sees (for its sizes and traces)."""
    kind = get_field(item, "type") or "message"
    if kind == "message":
        return {
            "role": str(get_field(item, "role") or "user"),
            "content": get_field(item, "content"),
        }
    role = "tool" if str(kind).endswith("_output") else "assistant"
    fields = item.model_dump(exclude_none=True) if isinstance(item, BaseModel) else item
    return {"role": role, "content": json_text(fields)}


_CHAT_LIMITS: Final = ("max_completion_tokens", "max_tokens")


class Conversation:
    """One healed Responses call: the caller's `instructions` and `input` as written, the
    chat-style `messages` the healer works on, and the requests it makes as Responses ones.

    `previous`: repair through `previous_response_id` (the call must store its responses): a
    repair request then sends only the messages after the previous answer, chained to the
    response that gave it; otherwise (the default) every request is stateless, the caller's
    input followed by the previous answer and the repair message, as on chat.
    """

    __slots__ = ("input", "instructions", "last_id", "messages", "previous", "text")

    def __init__(
        self, instructions: Any, input: Any, text: Any = None, *, previous: bool = False
    ) -> None:
        self.instructions = instructions
        self.input = input
        self.text = text
        self.previous = previous
        self.last_id: str | None = None
        found: list[dict[str, Any]] = []
        if isinstance(instructions, str) and instructions:
            found.append({"role": "system", "content": instructions})
        if isinstance(input, str):
            found.append({"role": "user", "content": input})
        elif input is not None:
            found += (_item_message(item) for item in input)
        self.messages = found

    def seen(self, response_id: str) -> None:
        """The id of the response the last request got (for `previous_response_id`)."""
        self.last_id = response_id

    def request(self, chat: dict[str, Any]) -> dict[str, Any]:
        """The Responses request for the chat-shaped `chat` (the engine's messages and
        parameters, `response_format` from the JSON tier; taken apart). The caller's messages
        are sent as the caller wrote them; messages before them (the JSON tier's instruction)
        and after them (a repair's previous answer and message) become input messages around
        them; `max_completion_tokens` / `max_tokens` (the truncation strategy raises one)
        become `max_output_tokens`."""
        sent: list[dict[str, Any]] = chat.pop("messages")
        response_format = chat.pop("response_format", None)
        for name in _CHAT_LIMITS:
            if name in chat:
                limit = chat.pop(name)
                chat.setdefault("max_output_tokens", limit)
        if response_format is not None:
            _, found, alone = _formats(response_format)
            chat["text"] = {**self.text, "format": found} if self.text else alone
        elif self.text is not None:
            chat["text"] = self.text
        if self.instructions is not None:
            chat["instructions"] = self.instructions
        own = self.messages
        at = _find(sent, own)
        if at is None:  # the messages were rewritten: all of them, as messages
            chat.pop("instructions", None)
            chat["input"] = _all_items(sent, sent)
            return chat
        if at == 0 and len(sent) == len(own):  # the common request: the caller's input alone
            chat["input"] = self.input
            return chat
        before, after = sent[:at], sent[at + len(own) :]
        if self.previous and self.last_id is not None:
            answered = [i for i, m in enumerate(after) if m.get("role") == "assistant"]
            if answered:
                chat["previous_response_id"] = self.last_id
                chat["input"] = _all_items(after[answered[-1] + 1 :], after)
                return chat
        given = self.input
        items = (
            [{"role": "user", "content": given}] if isinstance(given, str) else list(given or ())
        )
        later = _all_items(after, after)
        chat["input"] = [*map(_message, before), *items, *later]
        return chat


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    role = message.get("role")
    return {"role": role if role in ("user", "assistant", "system", "developer") else "user",
            "content": message.get("content") or ""}  # fmt: skip


def _all_items(
    messages: Sequence[Mapping[str, Any]], turns: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """`messages` as Responses input items (`_items`), a tool message answering a custom call
    of one of the assistant `turns` as that call's output."""
    custom = custom_ids(turns)
    return [item for message in messages for item in _items(message, custom)]


def _items(message: Mapping[str, Any], custom: frozenset[str]) -> list[dict[str, Any]]:
    """A chat-style message of the engine's as Responses input items: an assistant turn with
    `tool_calls` as its text (if any) and an item per call (`function_call`, or
    `custom_tool_call` for a custom tool's, its input exactly: `openai_calls.responses_item`), a
    `tool` message as a `function_call_output` item (`custom_tool_call_output` when it answers
    a call whose id is in `custom`), any other as a message."""
    calls = message.get("tool_calls")
    role = message.get("role")
    if role == "tool" and message.get("tool_call_id") is not None:
        output, call_id = message.get("content"), message["tool_call_id"]
        kind = "custom_tool_call_output" if call_id in custom else "function_call_output"
        return [{"type": kind, "call_id": call_id,
                 "output": output if isinstance(output, str) else json_text(output)}]  # fmt: skip
    if role != "assistant" or not calls:
        return [_message(message)]
    found = [_message(message)] if message.get("content") else []
    found += (responses_item(call) for call in calls)
    return found


def _find(sent: Sequence[Mapping[str, Any]], own: Sequence[Mapping[str, Any]]) -> int | None:
    """Where `own` stands in `sent`, as a run of equal messages (None: it does not)."""
    width = len(own)
    if len(sent) == width:  # the common request: the caller's messages alone
        return 0 if list(sent) == list(own) else None
    for at in range(len(sent) - width + 1):
        if all(sent[at + i] == own[i] for i in range(width)):
            return at
    return None


# -- the format, as the core's registry sees it -----------------------------------------------
