"""Attribute passthrough for a wrapped client's `chat` and `chat.completions` namespaces.

An adapter's `chat.completions` has healjson's `create` (`_base.Completions`); every other
attribute of `client.chat` and `client.chat.completions` is the wrapped client's.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ChatProxy", "CompletionsProxy"]


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
