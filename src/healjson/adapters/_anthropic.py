"""Healed streams over an Anthropic client: what `wrap(instructor.from_anthropic(...))` uses for
`create_partial`, `create_iterable` and `create(stream=True)`.

A healed stream reads the provider's own stream events (`message_start`, `content_block_delta`,
... : `healjson._core.stream.chunks` reads them), so the request goes to the Anthropic client
itself, not through instructor (whose partial parsing validates each snapshot and retries on its
own). The JSON is asked for as for any client whose JSON mode healjson chooses, in the prompt
tier: the schema in the system prompt (Anthropic has no JSON response format), the system
messages moved to the top-level `system`. Anthropic requires `max_tokens`: 4096 when the call
gives none.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from healjson._core.policy import HealPolicy
from healjson._core.stream.run import is_stream
from healjson._providers.anthropic_messages import messages_request

from ._base import Exchange, HealingAdapter, Send, ShapeCheck, is_async_client
from ._format import FormatState

__all__ = ["AnthropicStreams"]


class AnthropicStreams(HealingAdapter):
    """Wraps `anthropic.Anthropic` or `anthropic.AsyncAnthropic` for healed streams."""

    def __init__(self, client: Any, *, policy: HealPolicy | None = None) -> None:
        super().__init__(client, policy=policy)
        self._tiers = FormatState("prompt")

    def _accept(self, client: Any) -> bool:
        create = getattr(getattr(client, "messages", None), "create", None)
        if not callable(create):
            raise TypeError(
                f"an Anthropic client with messages.create is needed; got {type(client).__name__}"
            )
        return is_async_client(client, create)

    def _sender(self, response_model: Any, params: dict[str, Any]) -> Send:
        create = self.wrapped.messages.create

        def send(request: dict[str, Any]) -> tuple[Callable[..., Any], dict[str, Any], Exchange]:
            messages = request.pop("messages")
            return create, messages_request(messages, request), _READ_EVENTS

        return send


# the answer of `messages.create(stream=True)`: a stream of events (or a whole message)
_READ_EVENTS = ShapeCheck(
    lambda value: is_stream(value) or hasattr(value, "stop_reason"), "a stream of message events"
)
