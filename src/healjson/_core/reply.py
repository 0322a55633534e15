"""What a model call gives back, normalised: `Reply`, `Usage`, and exception classification.

`call` may return a string, a `Reply`, or a provider response read by its shape (object or dict):
an OpenAI `ChatCompletion` (`choices[0].message`), an Anthropic `Message` (`content` blocks and
`stop_reason`) or a Gemini `GenerateContentResponse` (`candidates[0].content.parts`). Finish
reasons are mapped onto OpenAI's: `length` for a token cut, `content_filter` for a safety stop.
Gemini fields are read in the SDK's snake_case or the REST API's camelCase (`finishReason`,
`usageMetadata`, ...). Nothing here imports a provider SDK.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

__all__ = [
    "EXTRA_READERS",
    "SDK_COMPLETIONS",
    "Reply",
    "ToolCall",
    "Usage",
    "anthropic_usage",
    "is_response",
    "read_completion",
    "to_reply",
]


@dataclass(frozen=True, slots=True)
class Usage:
    """What calls spent: tokens by bucket, requests, and the cost in USD when it can be known.

    - `prompt_tokens`: every input token, cached ones included (as OpenAI and Gemini count them;
      Anthropic's uncached `input_tokens` plus its cache reads and writes);
      `cache_read_tokens` / `cache_write_tokens`: the parts read from / written to the
      provider's prompt cache (OpenAI `prompt_tokens_details.cached_tokens`, Anthropic
      `cache_read_input_tokens` / `cache_creation_input_tokens`, Gemini
      `cachedContentTokenCount`).
    - `completion_tokens`: every output token; `reasoning_tokens` the part spent reasoning
      (OpenAI `completion_tokens_details.reasoning_tokens`, Gemini `thoughtsTokenCount`,
      Anthropic `output_tokens_details.thinking_tokens`).
    - `requests`: model calls counted; `estimated`: True when any count was estimated as
      characters / 4 (the provider reported none).
    - `model`: the model the tokens were spent on (None: unknown, or several: then `parts`
      holds one `Usage` per model).
    - `cost` (a property): USD through `genai-prices` (extra `prices`), computed when read;
      None when it cannot be known (the package is missing, the model is unknown to it, or
      any count was estimated).
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False
    reasoning_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    requests: int = 0
    model: str | None = None
    parts: tuple[Usage, ...] = ()

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    @property
    def cost(self) -> float | None:
        """USD spent, or None when it cannot be known (see the class docstring)."""
        from .cost import cost_of

        return cost_of(self)

    def __add__(self, other: Usage) -> Usage:
        if not other.requests and not other.total_tokens:
            return self
        if not self.requests and not self.total_tokens:
            return other
        same = self.model == other.model and not self.parts and not other.parts
        parts = () if same else (*(self.parts or (self,)), *(other.parts or (other,)))
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.estimated or other.estimated,
            self.reasoning_tokens + other.reasoning_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.requests + other.requests,
            self.model if same else None,
            parts,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready counts (and the cost, when known)."""
        data: dict[str, Any] = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "requests": self.requests,
            "estimated": self.estimated,
            "model": self.model,
            "cost": self.cost,
        }
        if self.parts:
            data["parts"] = [part.to_dict() for part in self.parts]
        return data


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A function (tool) call in a reply: its name and its arguments as JSON text."""

    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class Reply:
    """One model answer, provider-neutral."""

    content: str | None
    finish_reason: str | None = None
    refusal: str | None = None
    usage: Usage | None = None
    model: str | None = None
    reasoning: str | None = None
    """The model's reasoning, when the provider returns it beside the answer (OpenAI-compatible
    `reasoning_content` / `reasoning`, Anthropic thinking blocks, Gemini thought parts)."""
    tool_calls: tuple[ToolCall, ...] = ()


# a Gemini response without `candidates` (a blocked prompt); not `usage_metadata`, which
# LangChain's message dicts have too
_GEMINI_KEYS = ("candidates", "promptFeedback", "prompt_feedback", "usageMetadata")


def to_reply(obj: Any) -> Reply:
    """Read a call's return value; raises TypeError for a shape it does not know."""
    kind = type(obj)
    if kind in SDK_COMPLETIONS:
        return read_completion(obj)  # the SDK's ChatCompletion: the hot path
    if isinstance(obj, Reply):
        return obj
    if isinstance(obj, str):
        return Reply(obj)
    if obj is None:  # a model call that returns nothing is a bug (a missing `return`), not a reply
        raise TypeError(
            "call returned None (a missing `return`?); return a str, a ChatCompletion or a "
            "healjson.Reply"
        )
    if isinstance(obj, BaseModel) and hasattr(obj, "choices"):
        if len(SDK_COMPLETIONS) < 64:  # pydantic classes with `choices`: few, but bounded
            SDK_COMPLETIONS.add(kind)
        return read_completion(obj)
    if isinstance(obj, bytes | bytearray):
        return Reply(bytes(obj).decode("utf-8", "replace"))
    if isinstance(obj, Mapping):
        if "choices" in obj:
            return _completion(obj)
        if any(key in obj for key in _GEMINI_KEYS):
            return _gemini(obj)
        if "stop_reason" in obj and isinstance(obj.get("content"), list):
            return _anthropic(obj)
        if "content" in obj or "refusal" in obj:
            return Reply(
                _text(obj.get("content")),
                _opt_str(obj.get("finish_reason")),
                _opt_str(obj.get("refusal")),
                _usage(obj.get("usage"), _opt_str(obj.get("model"))),
                _opt_str(obj.get("model")),
                _reasoning_field(obj),
                _tool_calls(obj.get("tool_calls")),
            )
    reader = _reader(obj)
    if reader is not None:
        return reader(obj)
    raise TypeError(
        f"call returned {type(obj).__name__}; return a str, a ChatCompletion or a healjson.Reply"
    )


# classes already seen to be an SDK's pydantic completion (`isinstance(obj, BaseModel)` costs
# a Python-level ABC check per call; a set lookup by the exact class does not)
SDK_COMPLETIONS: set[type] = set()


# provider boundary: registered — each further wire format's reader finder (`healjson._providers`),
# asked after the formats above: the reader for a response of its format, else None
EXTRA_READERS: list[Callable[[Any], Callable[[Any], Reply] | None]] = []


def _reader(obj: Any) -> Callable[[Any], Reply] | None:
    """The reader for a provider response object, chosen by its shape (None: not one)."""
    if hasattr(obj, "choices"):
        return _completion
    if hasattr(obj, "candidates"):
        return _gemini
    if hasattr(obj, "stop_reason") and isinstance(getattr(obj, "content", None), list):
        return _anthropic
    for find in EXTRA_READERS:
        reader = find(obj)
        if reader is not None:
            return reader
    return None


def is_response(obj: Any) -> bool:
    """True for a provider response object `to_reply` can read (OpenAI, Anthropic, Gemini)."""
    return not isinstance(obj, str | bytes) and _reader(obj) is not None


def _get(obj: Any, name: str) -> Any:
    # cheap checks first: the Mapping ABC check is slow for the SDK's pydantic objects
    if type(obj) is dict:
        return obj.get(name)
    if isinstance(obj, BaseModel) or not isinstance(obj, Mapping):
        return getattr(obj, name, None)
    return obj.get(name)


def _get_either(obj: Any, name: str, camel: str) -> Any:
    """A field by its snake_case name (SDK objects, `model_dump()`) or its camelCase wire name."""
    value = _get(obj, name)
    return _get(obj, camel) if value is None else value


def _first(items: Any) -> Any:
    """The first element of a non-empty list or tuple, else None."""
    return items[0] if isinstance(items, list | tuple) and items else None


def read_completion(obj: Any) -> Reply:
    """The openai SDK's `ChatCompletion`, read by plain attribute access (the happy path runs
    once per call, right after the SDK's own work); anything unusual goes to `_completion`."""
    try:
        choices = obj.choices
        if type(choices) is not list or not choices:
            return _completion(obj)
        choice = choices[0]
        message = choice.message
        content = message.content
        if type(content) is not str or not content or message.tool_calls:
            return _completion(obj)
        usage = obj.usage
        prompt, completion = usage.prompt_tokens, usage.completion_tokens
        if type(prompt) is not int or type(completion) is not int:
            return _completion(obj)
        details = usage.completion_tokens_details
        reasoning = getattr(details, "reasoning_tokens", None) if details else None
        cached = getattr(usage.prompt_tokens_details, "cached_tokens", None)
        finish, refusal, model = choice.finish_reason, message.refusal, obj.model
        extra = message.__pydantic_extra__
    except AttributeError:
        return _completion(obj)
    name = None if model is None else str(model)
    return Reply(
        content,
        None if finish is None else str(finish),
        None if refusal is None else str(refusal),
        Usage(
            prompt,
            completion,
            False,
            reasoning if type(reasoning) is int else 0,
            cached if type(cached) is int else 0,
            0,
            1,
            name,
        ),
        name,
        _reasoning_field(extra) if extra else None,
    )


def _completion(obj: Any) -> Reply:
    choice = _first(_get(obj, "choices"))
    model = _opt_str(_get(obj, "model"))
    usage = _usage(_get(obj, "usage"), model)
    if choice is None:
        return Reply(None, None, None, usage, model)
    message = _get(choice, "message") or {}
    return Reply(
        _text(_get(message, "content")),
        _opt_str(_get(choice, "finish_reason")),
        _opt_str(_get(message, "refusal")),
        usage,
        model,
        _reasoning_field(message),
        _tool_calls(_get(message, "tool_calls")),
    )


def _reasoning_field(message: Any) -> str | None:
    """OpenAI-compatible reasoning beside the content: `reasoning_content` (DeepSeek, vLLM,
    Qwen) or `reasoning` (OpenRouter, Ollama, newer vLLM). The SDK keeps unknown fields in
    `model_extra`."""
    extra = _get(message, "model_extra") if isinstance(message, BaseModel) else None
    for source in (message, extra):
        if source is None:
            continue
        for name in ("reasoning_content", "reasoning"):
            value = _get(source, name)
            if isinstance(value, str) and value:
                return value
    return None


def _tool_calls(raw: Any) -> tuple[ToolCall, ...]:
    if not isinstance(raw, list | tuple):
        return ()
    calls: list[ToolCall] = []
    for call in raw:
        function = _get(call, "function") or {}
        name = _opt_str(_get(function, "name")) or ""
        arguments = _get(function, "arguments")
        calls.append(ToolCall(name, arguments if isinstance(arguments, str) else _dumps(arguments)))
    return tuple(calls)


_ANTHROPIC_FINISH = {"max_tokens": "length", "model_context_window_exceeded": "length",
                     "end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_calls",
                     "pause_turn": "stop"}  # fmt: skip
_GEMINI_FILTERED = frozenset(
    {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY"}
)


def _anthropic(obj: Any) -> Reply:
    """An Anthropic `Message`: text blocks joined as the content, `tool_use` blocks as tool
    calls, `thinking` blocks as the reasoning; a `refusal` stop's message is
    `stop_details.explanation`, else the text."""
    blocks = _get(obj, "content") or []
    texts = [str(_get(b, "text") or "") for b in blocks if _get(b, "type") == "text"]
    content: str | None = "".join(texts) if texts else None
    thoughts = [str(_get(b, "thinking") or "") for b in blocks if _get(b, "type") == "thinking"]
    calls = tuple(
        ToolCall(str(_get(b, "name") or ""), _dumps(_get(b, "input")))
        for b in blocks
        if _get(b, "type") == "tool_use"
    )
    stop = _opt_str(_get(obj, "stop_reason"))
    refusal = None
    if stop == "refusal":
        explanation = _get(_get(obj, "stop_details") or {}, "explanation")
        refusal = _opt_str(explanation) or content or "refused"
    model = _opt_str(_get(obj, "model"))
    usage = anthropic_usage(_get(obj, "usage"), requests=1, model=model)
    finish = None if stop is None else _ANTHROPIC_FINISH.get(stop, stop)
    return Reply(
        None if refusal else content,
        finish,
        refusal,
        usage,
        model,
        "\n\n".join(t for t in thoughts if t) or None,
        calls,
    )


def anthropic_usage(raw: Any, *, requests: int = 0, model: str | None = None) -> Usage | None:
    """Anthropic's usage (a message's, or a stream event's running one), None without counts.
    Its `input_tokens` leave out the cached input, which healjson counts in `prompt_tokens`
    (the cache reads and writes are parts of it)."""
    if raw is None:
        return None
    prompt, completion = _get(raw, "input_tokens"), _get(raw, "output_tokens")
    if not isinstance(prompt, int) and not isinstance(completion, int):
        return None
    read = _int(_get(raw, "cache_read_input_tokens"))
    written = _int(_get(raw, "cache_creation_input_tokens"))
    details = _get(raw, "output_tokens_details")
    thinking = _get(details, "thinking_tokens") if details is not None else None
    return Usage(
        _int(prompt) + read + written,
        _int(completion),
        reasoning_tokens=_int(thinking),
        cache_read_tokens=read,
        cache_write_tokens=written,
        requests=requests,
        model=model,
    )


def _gemini(obj: Any) -> Reply:
    """A Gemini `GenerateContentResponse`: the first candidate's text parts as the content, its
    function calls as tool calls, its thought parts as the reasoning; a blocked prompt or a
    safety stop is a content filter."""
    meta = _get_either(obj, "usage_metadata", "usageMetadata")
    model = _opt_str(_get_either(obj, "model_version", "modelVersion"))
    usage = None
    if meta is not None:
        prompt = _get_either(meta, "prompt_token_count", "promptTokenCount")
        completion = _get_either(meta, "candidates_token_count", "candidatesTokenCount")
        thinking = _int(_get_either(meta, "thoughts_token_count", "thoughtsTokenCount"))
        cached = _int(_get_either(meta, "cached_content_token_count", "cachedContentTokenCount"))
        if isinstance(prompt, int) or isinstance(completion, int):
            # Gemini counts thoughts apart from the candidates; both are output tokens
            usage = Usage(
                _int(prompt),
                _int(completion) + thinking,
                reasoning_tokens=thinking,
                cache_read_tokens=cached,
                requests=1,
                model=model,
            )
    candidate = _first(_get(obj, "candidates"))
    if candidate is None:
        feedback = _get_either(obj, "prompt_feedback", "promptFeedback") or {}
        blocked = _get_either(feedback, "block_reason", "blockReason")
        return Reply(None, "content_filter" if blocked else None, None, usage, model)
    parts = _get(_get(candidate, "content") or {}, "parts")
    parts = parts if isinstance(parts, list | tuple) else []
    texts = [str(_get(p, "text")) for p in parts if _get(p, "text") and not _get(p, "thought")]
    thoughts = [str(_get(p, "text")) for p in parts if _get(p, "text") and _get(p, "thought")]
    content: str | None = "".join(texts) if texts else None
    functions = (_get_either(p, "function_call", "functionCall") for p in parts)
    calls = tuple(
        ToolCall(str(_get(f, "name") or ""), _dumps(_get(f, "args"))) for f in functions if f
    )
    raw_finish = _get_either(candidate, "finish_reason", "finishReason")
    name = getattr(raw_finish, "name", None)
    if not isinstance(name, str) or not name:
        name = None if raw_finish is None else str(raw_finish)
    finish = None
    if name is not None:
        name = name.rsplit(".", 1)[-1].upper()
        if name == "MAX_TOKENS":
            finish = "length"
        elif name in _GEMINI_FILTERED:
            finish = "content_filter"
        else:
            finish = "stop" if name == "STOP" else name.lower()
    reasoning = "\n\n".join(thoughts) or None
    return Reply(content, finish, None, usage, model, reasoning, calls)


def _dumps(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def _int(value: Any) -> int:
    return value if isinstance(value, int) else 0


def _text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
        return "".join(str(_get(part, "text") or "") for part in content)
    return str(content)


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _usage(raw: Any, model: str | None = None) -> Usage | None:
    """OpenAI-style usage (also OpenAI-compatible servers): cached prompt tokens included."""
    if raw is None:
        return None
    prompt = _get(raw, "prompt_tokens")
    completion = _get(raw, "completion_tokens")
    if not isinstance(prompt, int) and not isinstance(completion, int):
        return None
    details = _get(raw, "completion_tokens_details")
    reasoning = _get(details, "reasoning_tokens") if details is not None else None
    prompt_details = _get(raw, "prompt_tokens_details")
    cached = _get(prompt_details, "cached_tokens") if prompt_details is not None else None
    return Usage(
        prompt if isinstance(prompt, int) else 0,
        completion if isinstance(completion, int) else 0,
        reasoning_tokens=_int(reasoning),
        cache_read_tokens=_int(cached),
        requests=1,
        model=model,
    )
