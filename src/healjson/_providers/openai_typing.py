"""OpenAI's row of the typed face of `healjson.wrap`: what a type checker sees of
`wrap(OpenAI())` / `wrap(AsyncOpenAI())` (data for `healjson._typing.generate`; nothing reads it
at run time)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from .provider import TypingRow

__all__ = ["OPENAI"]

_MESSAGES: Final = (("messages", "Iterable[Any]"),)
_MODE: Final = (("json_mode", "JsonMode | None"),)
_RESPONSES: Final = (*_MODE, ("repair_via", 'Literal["input", "previous_response_id"]'))
_COMPLETION: Final = "openai.types.chat.ChatCompletion"
_CHUNK: Final = "openai.types.chat.ChatCompletionChunk"
_RESPONSE: Final = "openai.types.responses.Response"
_EVENT: Final = "openai.types.responses.ResponseStreamEvent"
_CHAT_STREAM: Final = "openai.lib.streaming.chat"
_RESPONSE_STREAM: Final = "openai.lib.streaming.responses"

OPENAI: Final[TypingRow] = {
    "name": "OpenAI",
    "sync": "openai.OpenAI",
    "async_": "openai.AsyncOpenAI",
    "contexts": {"sync": ("with",), "async_": ("async with",)},
    "imports": (
        "openai",
        "openai.types.chat",
        "openai.types.responses",
        _CHAT_STREAM,
        _RESPONSE_STREAM,
    ),
    "completion": _COMPLETION,
    "summary": (
        "`openai.OpenAI` / `openai.AsyncOpenAI` (and any OpenAI-compatible client): "
        "`chat.completions.create(response_model=M)` is `Outcome[M]` (awaitable for an async "
        "client; with `stream=True` a healed stream of `Partial[M]` snapshots; with "
        "`heal_tools=True` the caller's tool calls healed), and `responses.create` heals the "
        "Responses API alike; the SDK's own `chat.completions.parse` / `.stream("
        "response_format=M)` and `responses.parse` / `.stream(text_format=M)` return the SDK's "
        "own types, the parsed value healed (`healjson.outcome_of`). `json_mode`: "
        "`json_schema` (strict structured outputs, the default), `structured_outputs` (vLLM), "
        "`constrained` (the full schema, non-strict), `json_object`, `prompt`."
    ),
    "methods": (
        {
            "path": "chat.completions.create",
            "needs": _MESSAGES,
            "tools": True,
            "options": _MODE,
            "returns": (_COMPLETION, _COMPLETION),
            "stream_returns": (f"openai.Stream[{_CHUNK}]", f"openai.AsyncStream[{_CHUNK}]"),
        },
        {
            "path": "chat.completions.parse",
            "kind": "sdk_parse",
            "target": "response_format",
            "needs": _MESSAGES,
            "options": _MODE,
            "parsed": ("openai.types.chat.ParsedChatCompletion[T]",) * 2,
        },
        {
            "path": "chat.completions.stream",
            "kind": "sdk_parse",
            "target": "response_format",
            "needs": _MESSAGES,
            "options": _MODE,
            "awaits": False,
            "parsed": (
                f"{_CHAT_STREAM}.ChatCompletionStreamManager[T]",
                f"{_CHAT_STREAM}.AsyncChatCompletionStreamManager[T]",
            ),
        },
        {
            "path": "responses.create",
            "tools": True,
            "options": _RESPONSES,
            "returns": (_RESPONSE, _RESPONSE),
            "stream_returns": (f"openai.Stream[{_EVENT}]", f"openai.AsyncStream[{_EVENT}]"),
        },
        {
            "path": "responses.parse",
            "kind": "sdk_parse",
            "target": "text_format",
            "options": _RESPONSES,
            "parsed": ("openai.types.responses.ParsedResponse[T]",) * 2,
        },
        {
            "path": "responses.stream",
            "kind": "sdk_parse",
            "target": "text_format",
            "options": _MODE,
            "awaits": False,
            "parsed": (
                f"{_RESPONSE_STREAM}.ResponseStreamManager[T]",
                f"{_RESPONSE_STREAM}.AsyncResponseStreamManager[T]",
            ),
        },
    ),
}
"""`chat.completions` and `responses` of an OpenAI client."""
