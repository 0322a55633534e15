"""A row's next model call as a provider batch request: the body, and the `custom_id`.

`custom_id` is `row-<seq>_r<round>`: the row's number in the ledger and the round of the
request (0: the first call, 1: the first repair, ...), so a result names the row and the
attempt it answers (a late or repeated line for an older round is ignored). The form fits both
providers (Anthropic allows only `[a-zA-Z0-9_-]{1,64}`).

The body asks for JSON as `healjson.wrap` does: OpenAI in the configured tier (strict
`json_schema` by default, `json_object` or `prompt`); Anthropic with the schema in the system
prompt (its system messages moved to the top-level `system`, as its API wants).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from healjson._core.effects import ModelCall
from healjson._core.target import Target
from healjson.adapters._format import JsonMode, shape_request

__all__ = ["custom_id", "parse_custom_id", "request_body"]

_CUSTOM_ID: Final = re.compile(r"row-(\d{1,18})_r(\d{1,6})")


def custom_id(seq: int, round_: int) -> str:
    return f"row-{seq}_r{round_}"


def parse_custom_id(text: str) -> tuple[int, int] | None:
    """`(seq, round)` of a `custom_id` this module made, else None."""
    match = _CUSTOM_ID.fullmatch(text)
    return None if match is None else (int(match[1]), int(match[2]))


def request_body(
    provider: str, call: ModelCall, target: Target[Any], mode: JsonMode
) -> dict[str, Any]:
    """The request `call` stands for, as the provider's batch line body."""
    messages = [dict(message) for message in call.messages]
    if provider == "anthropic":
        _, shaped, _ = shape_request("prompt", target, messages)
        return _anthropic_body(shaped, call.params)
    _, shaped, extra = shape_request(mode, target, messages)
    return {**call.params, **extra, "messages": shaped}


def _anthropic_body(messages: list[dict[str, Any]], params: Mapping[str, Any]) -> dict[str, Any]:
    system = [_text(m.get("content")) for m in messages if m.get("role") == "system"]
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


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return "" if content is None else str(content)
