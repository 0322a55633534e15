"""Gemini: `generateContent` and the `google-genai` SDK's client.

- `wire`: the wire format (requests in Gemini's tiers, `contents` as messages, responses and
  stream pieces read);
- `schema`: a JSON schema in Gemini's `response_json_schema` dialect;
- `client`: `wrap(genai.Client())` (sync, and async through `aio`), and the healed streams
  under an instructor client.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from healjson._providers.provider import Provider
from healjson._providers.tiers import NATIVE_MODES

from .wire import FORMAT

if TYPE_CHECKING:
    from healjson._providers.provider import TypingRow

__all__ = ["PROVIDER", "TYPING"]

_RESPONSE: Final = "google.genai.types.GenerateContentResponse"
_CONTENTS: Final = (("contents", "Any"),)

TYPING: Final[TypingRow] = {
    "name": "Gemini",
    "sync": "google.genai.Client",
    "aio": "aio",
    "contexts": {"sync": ("with",), "aio": ("async with",)},
    "imports": ("google.genai", "google.genai.types"),
    "completion": _RESPONSE,
    "summary": (
        "`google.genai.Client`: `models.generate_content(response_model=M)` and "
        "`generate_content_stream(response_model=M)`, also through `aio`, in Gemini's tiers: "
        "`json_schema` (`response_json_schema`), `json_object` (the JSON mime type), `prompt`."
    ),
    "methods": (
        {
            "path": "models.generate_content",
            "needs": _CONTENTS,
            "stream_kw": False,
            "returns": (_RESPONSE, _RESPONSE),
        },
        {
            "path": "models.generate_content_stream",
            "kind": "stream",
            "needs": _CONTENTS,
            "returns": (f"Iterator[{_RESPONSE}]", f"AsyncIterator[{_RESPONSE}]"),
        },
    ),
}
"""`models` of a google-genai client (and `aio.models`), in the typed face of `wrap`."""

PROVIDER = Provider(
    "gemini",
    formats=(FORMAT,),
    adapter=f"{__name__}.client:HealingGemini",
    streams=f"{__name__}.client:instructor_streams",
    tiers=NATIVE_MODES,
    assistant_role="model",
    typing=f"{__name__}:TYPING",
    # google-genai's generated converters of a response (`_Candidate_from_mldev`, ...), its
    # models' `_from_response`, a response's body (`HttpResponse`) and a stream's chunks
    reads=(
        "google.genai.*:*_from_mldev",
        "google.genai.*:*_from_vertex",
        "google.genai.*:*_from_response",
        "google.genai._api_client:HttpResponse.*",
        "google.genai._api_client:*request_streamed*",
    ),
    builds=("google.genai._api_client:*._build_request",),  # a stream's request, built
)
