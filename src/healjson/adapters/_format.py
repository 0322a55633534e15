"""L1 on the request side: ask for JSON in the strongest mode the endpoint supports.

Tiers, strongest first:

- `json_schema`: `response_format={"type": "json_schema", "strict": true, ...}` (the provider
  constrains decoding to the schema);
- `json_object`: `response_format={"type": "json_object"}` plus the schema in a system message;
- `prompt`: the schema in a system message only (any chat endpoint).

An endpoint that rejects a tier (HTTP 400 naming `response_format`) is stepped down once, and the
wrapper remembers the tier that worked for the rest of its life.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ._strict_schema import StrictSchemaUnsupported, strict_json_schema

__all__ = [
    "MODES",
    "FormatState",
    "JsonMode",
    "Shapeable",
    "anthropic_request",
    "check_mode",
    "is_format_rejection",
    "message_text",
    "shape_request",
    "strict_format",
]

JsonMode = Literal["json_schema", "json_object", "prompt"]
MODES: tuple[JsonMode, ...] = ("json_schema", "json_object", "prompt")


class Shapeable(Protocol):
    """What `shape_request` reads of a healer's target (`healjson._core.target.Target`)."""

    @property
    def type_(self) -> Any: ...

    @property
    def json_schema(self) -> Any: ...


@dataclass
class FormatState:
    """The tier a wrapped client currently uses (shared by its calls, thread-safe)."""

    mode: JsonMode = "json_schema"
    _lock: threading.Lock | None = None

    def step_down(self, failed: JsonMode) -> JsonMode | None:
        """Move below `failed` (once per tier); None when there is nothing weaker."""
        if self._lock is None:
            self._lock = threading.Lock()
        with self._lock:
            index = MODES.index(failed)
            if index + 1 >= len(MODES):
                return None
            if MODES.index(self.mode) <= index:
                self.mode = MODES[index + 1]
            return self.mode


def check_mode(mode: str) -> JsonMode:
    """Validate a user-supplied mode name (configuration error: raises)."""
    if mode not in MODES:
        raise ValueError(f"json_mode must be one of {', '.join(MODES)}; got {mode!r}")
    return mode  # narrowed by the membership test above


def shape_request(
    mode: JsonMode, target: Shapeable, messages: Sequence[dict[str, Any]]
) -> tuple[JsonMode, list[dict[str, Any]], dict[str, Any]]:
    """Messages and extra params for `mode` (falling back from `json_schema` when the target
    cannot be expressed in strict mode, e.g. a free-form map). `messages` are handed on as they
    are (the drivers pass fresh copies)."""
    shaped = list(messages)
    if mode == "json_schema":
        try:
            try:
                response_format = strict_format(target.type_)
            except TypeError:  # an unhashable type: not cached
                response_format = strict_json_schema(target.type_).response_format()
        except StrictSchemaUnsupported:
            mode = "json_object"
        else:
            return mode, shaped, {"response_format": response_format}
    instruction = {
        "role": "system",
        "content": (
            "Reply with only a JSON value (no prose, no code fences) that conforms to this JSON "
            f"schema: {json.dumps(target.json_schema, ensure_ascii=False, separators=(',', ':'))}"
        ),
    }
    extra: dict[str, Any] = {}
    if mode == "json_object":
        extra["response_format"] = {"type": "json_object"}
    return mode, [instruction, *shaped], extra


@functools.lru_cache(maxsize=256)
def strict_format(type_: Any) -> dict[str, Any]:
    """The strict `response_format` for `type_`, built once and shared by its requests (the SDK
    only reads it)."""
    return strict_json_schema(type_).response_format()


def constrains_one_value(params: Mapping[str, Any]) -> bool:
    """True when a request's `response_format` constrains the output to one JSON value (what a
    healed stream needs before it judges anything early)."""
    response_format = params.get("response_format")
    if isinstance(response_format, Mapping):
        kind = response_format.get("type")
    else:
        kind = getattr(response_format, "type", None)
    return kind in ("json_object", "json_schema")


def is_format_rejection(exc: BaseException) -> bool:
    """True for an HTTP 400 whose error names `response_format` (the tier is unsupported), or
    the Responses API's `text.format`."""
    if getattr(exc, "status_code", None) != 400:
        return False
    param = getattr(exc, "param", None)
    if param == "response_format" or (isinstance(param, str) and param.startswith("text.format")):
        return True
    text = str(getattr(exc, "message", "") or exc).lower()
    return any(name in text for name in ("response_format", "json_schema", "json_object",
                                         "text.format"))  # fmt: skip


def anthropic_request(
    messages: Sequence[Mapping[str, Any]], params: Mapping[str, Any]
) -> dict[str, Any]:
    """Chat messages and parameters as an Anthropic Messages request: the system messages joined
    into the top-level `system`, OpenAI's `max_completion_tokens` named `max_tokens`."""
    system = [message_text(m.get("content")) for m in messages if m.get("role") == "system"]
    turns = [
        {"role": m.get("role"), "content": m.get("content")}
        for m in messages
        if m.get("role") != "system"
    ]
    body: dict[str, Any] = {**params, "messages": turns}
    if "max_completion_tokens" in body:  # OpenAI's name (the truncation strategy may set it)
        body["max_tokens"] = body.pop("max_completion_tokens")
    if system:
        body["system"] = "\n\n".join(system)
    return body


def message_text(content: Any) -> str:
    """A chat message's content as text (content parts joined)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)
