"""Gemini: `generateContent` and the `google-genai` SDK's client.

- `wire`: the wire format (requests in Gemini's tiers, `contents` as messages, responses and
  stream pieces read);
- `schema`: a JSON schema in Gemini's `response_json_schema` dialect;
- `client`: `wrap(genai.Client())` (sync, and async through `aio`), and the healed streams
  under an instructor client.
"""

from __future__ import annotations

from healjson._providers.provider import Provider
from healjson._providers.tiers import NATIVE_MODES

from .wire import FORMAT

__all__ = ["PROVIDER"]

PROVIDER = Provider(
    "gemini",
    formats=(FORMAT,),
    adapter=f"{__name__}.client:HealingGemini",
    streams=f"{__name__}.client:instructor_streams",
    tiers=NATIVE_MODES,
    assistant_role="model",
)
