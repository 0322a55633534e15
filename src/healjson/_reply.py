"""What a model call gives back, normalised: `Reply`, `Usage`, and exception classification.

`call` may return a string, an OpenAI `ChatCompletion` (or a dict or object shaped like one), or a
`Reply`. Nothing here imports openai: completions are read by shape.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

__all__ = ["Reply", "Usage", "exception_kind", "to_reply"]


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts; `estimated` is True when any part was estimated as characters / 4."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.estimated or other.estimated,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready counts."""
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "estimated": self.estimated,
        }


@dataclass(frozen=True, slots=True)
class Reply:
    """One model answer, provider-neutral."""

    content: str | None
    finish_reason: str | None = None
    refusal: str | None = None
    usage: Usage | None = None
    model: str | None = None


def to_reply(obj: Any) -> Reply:
    """Read a call's return value; raises TypeError for a shape it does not know."""
    if isinstance(obj, Reply):
        return obj
    if obj is None or isinstance(obj, str):
        return Reply(obj)
    if isinstance(obj, BaseModel) and hasattr(obj, "choices"):
        return _completion(obj)  # the SDK's ChatCompletion: the hot path
    if isinstance(obj, bytes | bytearray):
        return Reply(bytes(obj).decode("utf-8", "replace"))
    if isinstance(obj, Mapping):
        if "choices" in obj:
            return _completion(obj)
        if "content" in obj or "refusal" in obj:
            return Reply(
                _text(obj.get("content")),
                _opt_str(obj.get("finish_reason")),
                _opt_str(obj.get("refusal")),
                _usage(obj.get("usage")),
                _opt_str(obj.get("model")),
            )
    if hasattr(obj, "choices"):
        return _completion(obj)
    raise TypeError(
        f"call returned {type(obj).__name__}; return a str, a ChatCompletion or a healjson.Reply"
    )


def _get(obj: Any, name: str) -> Any:
    # cheap checks first: the Mapping ABC check is slow for the SDK's pydantic objects
    if type(obj) is dict:
        return obj.get(name)
    if isinstance(obj, BaseModel) or not isinstance(obj, Mapping):
        return getattr(obj, name, None)
    return obj.get(name)


def _completion(obj: Any) -> Reply:
    choices = _get(obj, "choices") or []
    usage = _usage(_get(obj, "usage"))
    model = _opt_str(_get(obj, "model"))
    if not choices:
        return Reply(None, None, None, usage, model)
    choice = choices[0]
    message = _get(choice, "message") or {}
    content = _text(_get(message, "content"))
    if not content:
        calls = _get(message, "tool_calls") or []
        if calls:
            content = _text(_get(_get(calls[0], "function") or {}, "arguments"))
    return Reply(
        content,
        _opt_str(_get(choice, "finish_reason")),
        _opt_str(_get(message, "refusal")),
        usage,
        model,
    )


def _text(content: Any) -> str | None:
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
        return "".join(str(_get(part, "text") or "") for part in content)
    return str(content)


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)


def _usage(raw: Any) -> Usage | None:
    if raw is None:
        return None
    prompt = _get(raw, "prompt_tokens")
    completion = _get(raw, "completion_tokens")
    if not isinstance(prompt, int) and not isinstance(completion, int):
        return None
    return Usage(
        prompt if isinstance(prompt, int) else 0,
        completion if isinstance(completion, int) else 0,
    )


def exception_kind(exc: BaseException) -> str:
    """Classify a call's exception by class name, without importing any SDK:
    `timeout`, `content_filter`, `token_truncated` or `api_error`."""
    names = [cls.__name__ for cls in type(exc).__mro__]
    if isinstance(exc, TimeoutError) or any("Timeout" in name for name in names):
        return "timeout"
    if any("ContentFilter" in name for name in names):
        return "content_filter"
    if any(name in ("LengthFinishReasonError", "IncompleteOutputException") for name in names):
        return "token_truncated"
    return "api_error"
