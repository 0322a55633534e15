"""OpenAI's tool dialects: function tools as chat completions and the Responses API write them
(what `create(..., heal_tools=True)` reads), and their streams read call by call.

A tool is read in the shapes the OpenAI SDK takes: chat's `{"type": "function", "function":
{"name", "parameters", ...}}`, the Responses API's flat `{"type": "function", "name",
"parameters", ...}`, the result of `openai.pydantic_function_tool(Model)` (its model is kept:
the calls' arguments are validated as that model); a pydantic model class is sent as a strict
function tool named after the class. Chat's custom tools (`{"type": "custom", "custom": {"name",
...}}`) are declared too: their calls' input is free text, read and accepted as sent (the
Responses API's flat ones: `openai_responses_tools.read_custom_tool`). Other tools (built-in ones)
are passed on.

The core's chunk reader (`Delta`) joins the arguments of every tool call of a stream into one
text (a streamed answer has one value); judging each call on its own needs them apart. A
collector takes a stream's chunks one by one, hands back
the answer text each one carries, and at the end gives the whole answer as a `Reply`, with
every call's id, name and arguments text as sent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from healjson._core.wire.reply import CUSTOM, FUNCTION, Reply, ToolCall, new_reply

from ._fields import as_list, get_field, is_record, opt_str
from ._unreadable import chunk_text, unreadable_as_failure
from .openai_calls import is_custom
from .openai_chat import chat_usage, reasoning_field
from .provider import ToolDialect

__all__ = [
    "CHAT",
    "ChatCollector",
    "forced",
    "forced_chat",
    "read_custom_tool",
    "read_function_tool",
    "strict_function",
]


class ChatCollector:
    """`chat.completion.chunk`s (SDK objects or dicts): content, refusal, the OpenAI-compatible
    reasoning pieces (`reasoning_content` / `reasoning`, as the whole reply's reader keeps
    them), each call gathered by its `index` (its id and name from its first delta; a delta
    with another id at an index in use starts a call of its own: a server that numbers every
    call 0). A custom tool's call (`custom` pieces: `openai_calls.is_custom`) is gathered as
    one, its input pieces joined exactly, never as a function call's arguments."""

    __slots__ = ("_at", "_calls", "_finish", "_model", "_reasoning", "_refusal", "_text", "_usage")

    def __init__(self) -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._refusal: list[str] = []
        # [index, id, name, argument (or custom input) pieces, kind], as they came
        self._calls: list[list[Any]] = []
        self._at: dict[int, list[Any]] = {}  # index -> its call now
        self._finish: str | None = None
        self._model: str | None = None
        self._usage: Any = None

    @unreadable_as_failure
    def feed(self, chunk: Any) -> str:
        """Take one chunk; the answer text it carries ("" for none)."""
        self._model = self._model or opt_str(get_field(chunk, "model"))
        usage = get_field(chunk, "usage")
        if usage is not None:
            self._usage = usage
        choices = as_list(get_field(chunk, "choices"))
        choice = next((c for c in choices if (get_field(c, "index") or 0) == 0), None)
        if choice is None:
            return ""
        finish = get_field(choice, "finish_reason")
        if finish is not None:
            self._finish = str(finish)
        delta = get_field(choice, "delta") or {}
        refusal = chunk_text(get_field(delta, "refusal"), "choices[0].delta.refusal")
        if refusal:
            self._refusal.append(refusal)
        reasoning = reasoning_field(delta)
        if reasoning:
            self._reasoning.append(reasoning)
        for call in as_list(get_field(delta, "tool_calls")):
            index = get_field(call, "index")
            at = index if isinstance(index, int) else 0
            own = opt_str(get_field(call, "id"))
            entry = self._at.get(at)
            if entry is None or (own and entry[1] and own != entry[1]):
                entry = self._at[at] = [at, None, "", [], FUNCTION]
                self._calls.append(entry)
            entry[1] = entry[1] or own
            if is_custom(call):  # a custom tool's input: free text, never a function's
                entry[4] = CUSTOM
                custom = get_field(call, "custom")
                custom = custom if is_record(custom) else {}
                entry[2] = entry[2] or (opt_str(get_field(custom, "name")) or "")
                piece = get_field(custom, "input")
                entry[3].append(chunk_text(piece, "choices[0].delta.tool_calls[].custom.input"))
                continue
            function = get_field(call, "function") or {}
            entry[2] = entry[2] or (opt_str(get_field(function, "name")) or "")
            piece = get_field(function, "arguments")
            entry[3].append(chunk_text(piece, "choices[0].delta.tool_calls[].function.arguments"))
        text = chunk_text(get_field(delta, "content"), "choices[0].delta.content", parts=True)
        if text:
            self._text.append(text)
            return text
        return ""

    def reply(self) -> Reply:
        """The whole answer read so far."""
        ordered = sorted(self._calls, key=lambda entry: entry[0])  # stable: as they came
        calls = tuple(
            ToolCall(name, "".join(pieces), call_id, kind)
            for _, call_id, name, pieces, kind in ordered
        )
        return new_reply(
            "".join(self._text) if self._text else None,
            self._finish,
            "".join(self._refusal) or None,
            None if self._usage is None else chat_usage(self._usage, self._model),
            self._model,
            "".join(self._reasoning) or None,
            calls,
        )


def _read_chat(tool: Any) -> tuple[str, Any, Any] | None:
    return read_function_tool(tool, flat=False)


def read_function_tool(tool: Any, *, flat: bool) -> tuple[str, Any, Any] | None:
    """A function tool's name, its arguments' model or schema, and the tool as sent (chat's
    shape on the Responses API is sent flat, as that API takes it and as the SDK's own
    `responses.parse` sends `openai.pydantic_function_tool(M)`)."""
    if not isinstance(tool, Mapping) or tool.get("type", "function") != "function":
        return None
    function = tool.get("function")
    holder: Any = function if isinstance(function, Mapping) else tool
    name = holder.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError(f"tools: a function tool needs a name, got {tool!r}")
    model = getattr(holder, "model", None) or getattr(tool, "model", None)
    wire = {"type": "function", **holder} if flat and holder is not tool else tool
    if isinstance(model, type) and issubclass(model, BaseModel):
        return name, model, wire
    return name, holder.get("parameters"), wire


def strict_function(model: type[BaseModel]) -> dict[str, Any]:
    """A model class as a function: strict when strict mode can express its schema."""
    from .openai_strict_schema import StrictSchemaUnsupported, strict_json_schema

    try:
        parameters, strict = strict_json_schema(model).schema, True
    except StrictSchemaUnsupported:
        parameters, strict = model.model_json_schema(), False
    function: dict[str, Any] = {"name": model.__name__, "parameters": parameters, "strict": strict}
    doc = (model.__doc__ or "").strip()
    if doc:
        function["description"] = doc
    return function


def _wire_chat(model: type[BaseModel]) -> dict[str, Any]:
    return {"type": "function", "function": strict_function(model)}


def forced(choice: Any) -> bool | str | None:
    """What `tool_choice` forces: `"required"` some call, a named function that one (chat's
    `{"type": "function", "function": {"name"}}`, the Responses API's flat form); `"none"`
    allows no call (None)."""
    if choice == "required":
        return True
    if choice == "none":
        return None
    if isinstance(choice, Mapping) and choice.get("type") == "function":
        function = choice.get("function")
        name = function.get("name") if isinstance(function, Mapping) else choice.get("name")
        if isinstance(name, str) and name:
            return name
    return False


def read_custom_tool(tool: Any) -> str | None:
    """A chat custom tool's name (`{"type": "custom", "custom": {"name", "description",
    "format"}}`), None for any other tool. Its calls' input is free text, accepted as sent
    (`judge.free_text`): a `format` of type `grammar` (Lark or regex) is the provider's to
    enforce, not checked here."""
    if not isinstance(tool, Mapping) or tool.get("type") != CUSTOM:
        return None
    custom = tool.get(CUSTOM)
    name = custom.get("name") if isinstance(custom, Mapping) else None
    if not isinstance(name, str) or not name:
        raise ValueError(f"tools: a custom tool needs a name, got {tool!r}")
    return name


def forced_chat(choice: Any) -> bool | str | None:
    """What chat's `tool_choice` forces (`forced`), a named custom tool too (`{"type":
    "custom", "custom": {"name"}}`)."""
    if isinstance(choice, Mapping) and choice.get("type") == CUSTOM:
        custom = choice.get(CUSTOM)
        name = custom.get("name") if isinstance(custom, Mapping) else None
        return name if isinstance(name, str) and name else False
    return forced(choice)


CHAT = ToolDialect(
    "chat", _read_chat, _wire_chat, forced_chat, ChatCollector, custom=read_custom_tool
)
"""Chat completions' function tools (the Responses API's are `openai_responses_tools.RESPONSES`)."""
