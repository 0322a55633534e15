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

OPENAI: Final[TypingRow] = {
    "name": "OpenAI",
    "sync": "openai.OpenAI",
    "async_": "openai.AsyncOpenAI",
    "imports": ("openai", "openai.types.chat", "openai.types.responses"),
    "completion": _COMPLETION,
    "summary": (
        "`openai.OpenAI` / `openai.AsyncOpenAI` (and any OpenAI-compatible client): "
        "`chat.completions.create(response_model=M)` is `Outcome[M]` (awaitable for an async "
        "client; with `stream=True` a healed stream of `Partial[M]` snapshots; with "
        "`heal_tools=True` the caller's tool calls healed), `chat.completions.parse("
        "response_format=M)` likewise, and `responses` heals the Responses API alike "
        "(`create`, `parse(text_format=M)`, `stream(text_format=M)`). `json_mode`: "
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
            "kind": "parse",
            "target": "response_format",
            "needs": _MESSAGES,
            "options": _MODE,
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
            "kind": "parse",
            "target": "text_format",
            "options": _RESPONSES,
        },
        {
            "path": "responses.stream",
            "kind": "stream",
            "target": "text_format",
            "schema": False,
            "options": _RESPONSES,
            "awaits": False,
        },
    ),
}
"""`chat.completions` and `responses` of an OpenAI client."""
