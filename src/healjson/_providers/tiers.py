"""The JSON-mode tiers: the words every provider and adapter shares for how JSON is asked for.

A tier is how strongly a request asks for the target's JSON, strongest first:

- `json_schema`: the endpoint enforces the schema while decoding, in its own strict form
  (OpenAI's strict structured outputs, Anthropic's and Gemini's native schemas, Ollama's
  `format`);
- `structured_outputs`: a server's own field carrying the full schema (vLLM >= 0.12);
- `constrained`: the full schema as a non-strict format that local servers enforce as sent;
- `json_object`: JSON mode (one JSON value, any shape) plus the schema in the prompt;
- `prompt`: the schema in the prompt only (any endpoint).

Each provider module says which tiers it has (`Provider.tiers`) and how a request in each is
shaped; what they share is here: the names (`JsonMode`, `MODES`), which tier a refused one
steps down to (`WEAKER`), which tiers enforce a schema or constrain the answer to one JSON
value, and the prompt tier's words (`instruction`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal, Protocol

__all__ = [
    "ENFORCING",
    "MODES",
    "NATIVE_MODES",
    "ONE_VALUE",
    "WEAKER",
    "JsonMode",
    "Shapeable",
    "instruction",
    "prompted",
]

JsonMode = Literal["json_schema", "structured_outputs", "constrained", "json_object", "prompt"]
MODES: tuple[JsonMode, ...] = (
    "json_schema",
    "structured_outputs",
    "constrained",
    "json_object",
    "prompt",
)
"""Every tier, strongest first (a client only ever steps down this order)."""
NATIVE_MODES: tuple[JsonMode, ...] = ("json_schema", "json_object", "prompt")
"""The tiers of a provider that has one schema form of its own (its native structured output),
JSON mode and the prompt."""
WEAKER: dict[JsonMode, JsonMode | None] = {
    "json_schema": "json_object",
    "structured_outputs": "constrained",
    "constrained": "json_object",
    "json_object": "prompt",
    "prompt": None,
}
"""The tier a rejected one steps down to (a strict schema falls to JSON mode: a non-strict
schema is not enforced where the strict one was refused; vLLM's field to the `response_format`
form of the same schema)."""
ENFORCING: frozenset[JsonMode] = frozenset({"json_schema", "structured_outputs", "constrained"})
"""The tiers whose request asks the endpoint to enforce a schema while decoding."""
ONE_VALUE: frozenset[JsonMode] = ENFORCING | {"json_object"}
"""The tiers whose request constrains the answer to one JSON value (a stream may be judged
early)."""


class Shapeable(Protocol):
    """What shaping a request reads of a healer's target (`healjson._core.target.target.Target`)."""

    @property
    def type_(self) -> Any: ...

    @property
    def json_schema(self) -> Any: ...


def instruction(target: Shapeable) -> dict[str, Any]:
    """The prompt tier's system message: answer with one JSON value conforming to the schema."""
    schema = json.dumps(target.json_schema, ensure_ascii=False, separators=(",", ":"))
    return {
        "role": "system",
        "content": (
            "Reply with only a JSON value (no prose, no code fences) that conforms to this JSON "
            f"schema: {schema}"
        ),
    }


def prompted(target: Shapeable, messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """`messages` with the prompt tier's instruction first (the messages handed on as they are:
    the drivers pass fresh copies)."""
    return [instruction(target), *messages]
