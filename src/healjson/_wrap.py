"""`healjson.wrap`: make an existing client heal, changing one line at the call site."""

from __future__ import annotations

from typing import Any

from ._core.policy import HealPolicy

__all__ = ["wrap"]


def wrap(client: Any, *, json_mode: str = "json_schema", policy: HealPolicy | None = None) -> Any:
    """Wrap an `openai.OpenAI` / `openai.AsyncOpenAI` client (or an instructor client).

    `client.chat.completions.create(...)` without `response_model` is passed through unchanged;
    with `response_model=M` (and optional `contracts=`, `policy=`, `fallback=`, `examples=`,
    `context=`, `json_mode=`) it returns `Outcome[M]` and never raises at call time.

    `json_mode` is the strongest JSON mode the endpoint supports: `json_schema` (OpenAI strict
    structured outputs, the default), `json_object` (JSON mode plus the schema in the prompt) or
    `prompt` (schema in the prompt only) — declare a weaker one for endpoints such as older vLLM
    or Ollama builds. A tier the endpoint rejects with HTTP 400 is stepped down once and remembered.
    Wrapping a wrapped client wraps the client beneath it (one healing layer, the new settings).
    """
    from .adapters._base import unwrapped

    client = unwrapped(client)  # the adapter is chosen by the client beneath any healjson layer
    if type(client).__module__.split(".", 1)[0] == "instructor":
        from .adapters._instructor import InstructorClient

        return InstructorClient(client, json_mode=json_mode, policy=policy)
    from .adapters._openai import HealingClient

    return HealingClient(client, json_mode=json_mode, policy=policy)
