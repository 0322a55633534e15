"""How deep a JSON text or value nests, measured without recursion: the bound every reader of
model or provider text checks before it hands the text to a recursive parser or walker.

`MAX_NESTING` is the reader's bound: as deep as pydantic's own JSON reader goes (it refuses
deeper text with an error instead of a crash). Both measures are linear: the text is scanned
once (strings skipped by a possessive pattern, so nothing backtracks), the value walked once
with an explicit stack.
"""

from __future__ import annotations

import re
from typing import Any, Final

__all__ = ["MAX_NESTING", "nests_deeper", "value_nests_deeper"]

MAX_NESTING: Final = 200
"""The deepest nesting of arrays and objects a reader accepts."""

# a string literal (its escapes included) as one token, or one bracket
_TOKENS: Final = re.compile(r'"(?:[^"\\]++|\\.)*+"?|[\[\]{}]', re.DOTALL)


def nests_deeper(text: str, limit: int = MAX_NESTING) -> bool:
    """True when the brackets of `text` (outside its string literals) open more than `limit`
    levels at some point: too deep to hand to a recursive reader."""
    if text.count("[") + text.count("{") <= limit:  # the common case, at C speed
        return False
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return True
        elif token in "]}":
            depth = max(0, depth - 1)
    return False


def value_nests_deeper(value: Any, limit: int = MAX_NESTING) -> bool:
    """True when lists, tuples and dicts in `value` nest more than `limit` levels."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        children: Any
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list | tuple):
            children = node
        else:
            continue
        if depth + 1 > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False
