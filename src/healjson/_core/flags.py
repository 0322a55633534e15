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
    REASONING_SET_ASIDE = "reasoning_set_aside"
    """The reply held the model's reasoning (`<think>…</think>` and kin inline, or a reasoning
    field or part of the provider's own, as its module reads it); it was set aside (kept on the
    attempt) and never read as the answer."""
    MULTIPLE_CANDIDATES = "multiple_candidates"
    """The reply held several JSON values; one answer was kept (the only one that fits the
    schema, or identical repeats of one answer)."""
    AMBIGUOUS_CHOICE = "ambiguous_choice"
    """The reply held several *different* valid answers and `HealPolicy.on_ambiguity`
    (`"first"` or `"last"`) picked one. With the default (`"reask"`) there is no value."""
    SYNTAX_REPAIRED = "syntax_repaired"
    """Syntax slips were repaired (trailing commas, comments, quotes, Python literals...)."""
    TRUNCATED = "truncated"
    """The reply was cut off by the token limit. On `partial` data: the value is incomplete. On a
    `Healed` value: the JSON had closed before the cut, parsed strictly and validated, with
    nothing after it; a list may still have been shortened by the cut."""
    COERCED = "coerced"
    """pydantic's lax mode converted a value (`"5"` to `5`, `5.0` to `5`)."""
    ENUM_CASE = "enum_case"
    """An enum or literal value was matched ignoring case and separators."""
    KEYS_ALIGNED = "keys_aligned"
    """A key was renamed to the one field it can only mean (`Answer` → `answer`,
    `answer_text` → `answerText`), at any depth: in a nested model, a list item, a dict value."""
    UNWRAPPED = "unwrapped"
    """The answer, or a value in it, was wrapped in a single-key object (`{"ticket": {...}}`,
    `{"items": [...]}` where a list is expected) and was unwrapped. Inside the answer only from
    under a word that can name the value (`parse.wrappers`): another key (`{"fahrenheit": 70}`,
    `{"not": [1, 2]}`) qualifies it."""
    WRAPPED = "wrapped"
    """A bare value was placed in the one field of the object expected there: a list in the
    only required field, a list, of the target or a nested model; an answer without an agent
    framework's `{"response": ...}` envelope, in that field."""
    LISTED = "listed"
    """A single value was taken as a one-item list where the schema wants a list."""
    UNLISTED = "unlisted"
    """A one-item list was taken as its item where the schema wants a single value."""
    NUMBER_WORD = "number_word"
    """A number written as an English word (`"seven"`) was read as the number."""
    ITEMS_MERGED = "items_merged"
    """A per-item repair's answer (the failed items only) was spliced into the list whose other
    items had passed; the whole list was then checked again."""
    DOUBLE_ENCODED = "double_encoded"
    """The JSON arrived encoded inside a JSON string (one level or more) and was decoded."""
    TEXT_AS_VALUE = "text_as_value"
    """A scalar target (string, number, enum) was read from plain text."""
    STREAM_ABORTED = "stream_aborted"
    """A streamed answer was closed early: a complete part of it broke a rule that more tokens
    could not fix (`HealPolicy.stream_abort`); the repair started at once."""
    CONTRACT_FIXED = "contract_fixed"
    """A contract with `on_fail="fix"` found a violation and its `fix` corrected the value
    locally (no model call); the corrected value passed the schema and every rule again. The
    rules are named on `Healed.fixed`."""
    ITEMS_DROPPED = "items_dropped"
    """Items that broke an item contract with `on_fail="drop"` were removed from the list
    (listed on `Healed.dropped`); the list passed the schema and every rule again."""
    PARSED_DATA = "parsed_data"
    """The answer was given to `validate` already parsed (a dict or a list), not as text: it was
    judged as data, with no text repair (the schema's alignments may still apply)."""
    SCHEMA_NOT_ENFORCED = "schema_not_enforced"
    """The request asked the endpoint to enforce the schema while decoding (a strict format, a
    server's constrained decoding, a strict tool), and its first answer was not JSON, or broke
    the schema as sent: the endpoint accepts the request but does not enforce it (see
    `healjson._core.judge.enforcement`). Not a local repair: a note about the endpoint, on the first
    attempt (`outcome.attempts[0].flags`), and on `Healed.flags` when that answer healed."""
    STRUCTURED_FROM_TEXT = "structured_from_text"
    """The answer was asked for in a structured channel and came as text: it was read from the
    text. An MCP tool result without structured content (or with structured content that could
    not be healed) had it recovered from its text content, against the tool's `outputSchema`;
    a LangChain agent's `ToolStrategy` answer came as the message's text, not as a call of its
    structured-response tool."""
    ARGUMENTS_NORMALISED = "arguments_normalised"
    """The arguments of an MCP tool call were normalised against the tool's `inputSchema`
    before they were sent (a stringified object or array parsed, keys aligned, `"5"` read as a
    number); the repairs themselves are the arguments' own run's flags (its events)."""
