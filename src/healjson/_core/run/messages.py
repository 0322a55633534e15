"""The request's messages as healjson keeps them, and the context contracts receive."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from healjson._core.judge.contracts import ContractContext

__all__ = ["make_context", "normalise_messages"]


def normalise_messages(messages: Any) -> tuple[dict[str, Any], ...]:
    """Accept a prompt string, or a sequence of message mappings / objects with role+content."""
    kind = type(messages)
    if kind is not list and kind is not tuple:  # exact types first: ABC checks are slow
        if isinstance(messages, str):
            return ({"role": "user", "content": messages},)
        if isinstance(messages, Mapping):
            return (dict(messages),)
        if not isinstance(messages, Sequence):
            raise TypeError(
                "messages must be a prompt string or a list of chat messages, "
                f"got {type(messages).__name__}"
            )
    out: list[dict[str, Any]] = []
    for message in messages:
        if type(message) is dict or isinstance(message, Mapping):
            out.append(dict(message))
        elif hasattr(message, "model_dump"):
            out.append(dict(message.model_dump(exclude_none=True)))
        elif hasattr(message, "role") and hasattr(message, "content"):
            out.append({"role": message.role, "content": message.content})
        else:
            raise TypeError(f"cannot read a chat message from {message!r}")
    return tuple(out)


def make_context(context: Any, messages: Sequence[Mapping[str, Any]] = ()) -> ContractContext:
    """Build the contract context from what the caller passed as `context=`.

    Accepts a `ContractContext`, a mapping of extra data, a prompt string or a list of messages.
    A mapping is kept as it is (not copied): it is the contracts' `ctx.extra` and pydantic's
    validation context, the same object the caller passed (`ContractContext.validation_context`).
    """
    if isinstance(context, ContractContext):  # a run's own copy: what its contracts spend
        return ContractContext(context.messages, context.extra, context.raw_text)
    if context is None:
        return ContractContext(messages=tuple(messages))
    if isinstance(context, Mapping):
        return ContractContext(messages=tuple(messages), extra=context)
    return ContractContext(messages=normalise_messages(context))
