"""Healed streams over a google-genai client: what `wrap(instructor.from_genai(...))` uses for
`create_partial`, `create_iterable` and `create(stream=True)`.

As for Anthropic (`_anthropic`), a healed stream reads the provider's own chunks (each a
`GenerateContentResponse`, read by `healjson._core.stream.chunks`), so the request goes to the
genai client itself (`models.generate_content_stream`, `aio.models.generate_content_stream`
for an async instructor client), in the prompt tier: the schema in the system instruction. The
chat messages become Gemini `contents` (`assistant` is `model`), the system messages the
`system_instruction`; OpenAI's parameter names are mapped (`max_tokens` to
`max_output_tokens`, `stop` to `stop_sequences`), any other goes into the config as given.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from healjson._core.policy import HealPolicy
from healjson._core.stream.run import is_stream
from healjson._providers.gemini_generate import gemini_request

from ._base import Exchange, HealingAdapter, Send, ShapeCheck
from ._format import FormatState

__all__ = ["GeminiStreams", "gemini_request"]


class GeminiStreams(HealingAdapter):
    """Wraps a `google.genai.Client` for healed streams (`use_async`: through `client.aio`)."""

    def __init__(
        self, client: Any, *, use_async: bool = False, policy: HealPolicy | None = None
    ) -> None:
        self._use_async = use_async
        super().__init__(client, policy=policy)
        self._tiers = FormatState("prompt")

    def _accept(self, client: Any) -> bool:
        models = getattr(client, "aio", client) if self._use_async else client
        stream = getattr(getattr(models, "models", None), "generate_content_stream", None)
        if not callable(stream):
            raise TypeError(
                "a google-genai client with models.generate_content_stream is needed; got "
                f"{type(client).__name__}"
            )
        return self._use_async

    def _sender(self, response_model: Any, params: dict[str, Any]) -> Send:
        models = self.wrapped.aio.models if self._use_async else self.wrapped.models
        stream = models.generate_content_stream

        def send(request: dict[str, Any]) -> tuple[Callable[..., Any], dict[str, Any], Exchange]:
            messages = request.pop("messages")
            return stream, gemini_request(messages, request), _READ_CHUNKS

        return send


# the answer of `generate_content_stream`: an iterator of responses (an awaitable of one, async)
_READ_CHUNKS = ShapeCheck(
    lambda value: is_stream(value) or hasattr(value, "__await__"), "a stream of responses"
)
