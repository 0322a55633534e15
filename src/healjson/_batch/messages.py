"""Read the request a batch or scenario row holds: `messages` (chat messages) or `prompt`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["MAX_MESSAGES_DEPTH", "deeper_than", "row_messages"]

MAX_MESSAGES_DEPTH = 64
"""Deepest nesting accepted in a row's `messages` (chat messages need about 5 levels)."""

Messages = tuple[dict[str, Any], ...]


def row_messages(row: Mapping[str, Any]) -> tuple[Messages, str | None]:
    """`(messages, None)`, or `((), why the row holds no request)`.

    A row has exactly one of `messages` (a non-empty list of objects with a string `role`,
    nested at most `MAX_MESSAGES_DEPTH` levels) and `prompt` (a non-empty string: one user
    turn). Never an exception, whatever the row holds.
    """
    if ("messages" in row) == ("prompt" in row):
        return (), "give either `messages` (chat messages) or `prompt` (a string)"
    if "prompt" in row:
        prompt = row["prompt"]
        if isinstance(prompt, str) and prompt.strip():
            return ({"role": "user", "content": prompt},), None
        return (), "`prompt` must be a non-empty string"
    value = row["messages"]
    if not isinstance(value, list) or not value:
        return (), "`messages` must be a non-empty list of chat messages"
    for index, message in enumerate(value):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            return (), f"`messages[{index}]` must be an object with a `role`"
    if deeper_than(value, MAX_MESSAGES_DEPTH):
        return (), f"`messages` nest deeper than {MAX_MESSAGES_DEPTH} levels"
    return tuple(dict(message) for message in value), None


def deeper_than(value: Any, limit: int) -> bool:
    """True when lists / objects nest more than `limit` levels (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False
