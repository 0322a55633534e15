"""Names for the local repairs L1 applies; each one that happened is recorded on the result."""

from __future__ import annotations

import enum

__all__ = ["Flag"]


class Flag(enum.StrEnum):
    """A local repair that was applied to a reply (compares equal to its string value)."""

    CODE_FENCE = "code_fence"
    """The JSON was inside a markdown code fence."""
    PROSE_AROUND = "prose_around"
    """Text before or after the JSON was dropped."""
    MULTIPLE_CANDIDATES = "multiple_candidates"
    """The reply held several JSON values; one was chosen (the first that validates)."""
    SYNTAX_REPAIRED = "syntax_repaired"
    """Syntax slips were repaired (trailing commas, comments, quotes, Python literals...)."""
    TRUNCATED = "truncated"
    """The reply was cut off; the value is partial and is never accepted as healed."""
    COERCED = "coerced"
    """pydantic's lax mode converted a value (`"5"` to `5`)."""
    ENUM_CASE = "enum_case"
    """An enum or literal value was matched ignoring case and separators."""
    UNWRAPPED = "unwrapped"
    """The answer was wrapped in a single-key object (`{"ticket": {...}}`) and was unwrapped."""
    DOUBLE_ENCODED = "double_encoded"
    """The JSON arrived encoded inside a JSON string and was decoded."""
    TEXT_AS_VALUE = "text_as_value"
    """A scalar target (string, number, enum) was read from plain text."""
