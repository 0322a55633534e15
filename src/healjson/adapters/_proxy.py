"""Attribute passthrough for a wrapped client's `chat` and `chat.completions` namespaces, and
an OpenAI client's `beta`.

An adapter's `chat.completions` has healjson's `create` (`_base.Completions`); every other
attribute of `client.chat` and `client.chat.completions` is the wrapped client's. An OpenAI
client's `beta.chat` is the wrapped client's `chat`, healed the same (`BetaProxy`).
"""

from __future__ import annotations

from typing import Any

__all__ = ["BetaProxy", "ChatProxy", "CompletionsProxy"]


class CompletionsProxy:
    """Base of an adapter's `chat.completions`: unknown attributes go to the wrapped client's."""

    def __init__(self, owner: Any) -> None:
        self._owner = owner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._owner.wrapped.chat.completions, name)


class ChatProxy:
    """`client.chat`: healjson's `completions`; other attributes go to the wrapped client's."""

    def __init__(self, owner: Any, completions: CompletionsProxy) -> None:
        self._owner = owner
        self.completions = completions

    def __getattr__(self, name: str) -> Any:
        return getattr(self._owner.wrapped.chat, name)


class BetaProxy:
    """`client.beta` of a wrapped OpenAI client: its `chat` is the wrapped client's healing
    `chat` (the SDK's `beta.chat.completions` is its `chat.completions`: `parse` and `stream`
    with a type as `response_format` return the SDK's types, healed); other attributes go to
    the wrapped client's `beta`."""

    def __init__(self, owner: Any) -> None:
        self._owner = owner

    @property
    def chat(self) -> Any:
        """The wrapped client's `chat`, healing (where the SDK's `beta` has a `chat`)."""
        if not hasattr(self._owner.wrapped.beta, "chat"):
            raise AttributeError("the wrapped client's beta has no attribute 'chat'")
        return self._owner.chat

    def __getattr__(self, name: str) -> Any:
        return getattr(self._owner.wrapped.beta, name)
