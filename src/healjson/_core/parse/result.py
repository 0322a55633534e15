"""`ParseResult`: everything L1 learned from one reply, computed once and kept by the engine."""

from __future__ import annotations

from typing import Any

from pydantic_core import ErrorDetails, from_json

from healjson._core.diagnostic import Diagnostic
from healjson._core.flags import Flag
from healjson._core.sentinels import NOTHING

__all__ = ["ParseResult"]


class ParseResult:
    """What L1 recovered from one reply (immutable).

    - `value`: the recovered JSON data (with healjson's own alignments applied). When
      `truncated`, the partial data of a cut reply (never a result); None when nothing could be
      recovered.
    - `flags`: the local repairs applied (`healjson.Flag`).
    - `error`: why no value was recovered (a `Diagnostic`), else None. Its `source` says which
      case: `syntax`, `empty`, `truncation` or `ambiguity`.
    - `candidates`: with an `ambiguity` error, every different answer the reply held, in reading
      order (as data); otherwise empty.
    - `reasoning`: the model's reasoning that was set aside (inline `<think>` blocks), or None;
      `answer` is then the rest of the reply, the part read as the answer.
    - With a schema: `valid` is True when the value validated, and `instance` holds the
      validated object (None otherwise).
    """

    __slots__ = (
        "_instance",
        "_text",
        "_value",
        "answer",
        "candidates",
        "error",
        "flags",
        "reasoning",
        "schema_errors",
        "truncated",
    )
    _text: str | None
    _value: Any
    _instance: Any
    flags: tuple[Flag, ...]
    truncated: bool
    error: Diagnostic | None
    candidates: tuple[Any, ...]
    reasoning: str | None
    answer: str | None
    schema_errors: tuple[ErrorDetails, ...]

    def __init__(
        self,
        value: Any = None,
        flags: tuple[Flag, ...] = (),
        truncated: bool = False,
        error: Diagnostic | None = None,
        *,
        candidates: tuple[Any, ...] = (),
        reasoning: str | None = None,
        answer: str | None = None,
        instance: Any = NOTHING,
        schema_errors: tuple[ErrorDetails, ...] = (),
        lazy_text: str | None = None,
    ) -> None:
        setter = object.__setattr__
        setter(self, "_text", lazy_text)
        setter(self, "_value", None if value is NOTHING else value)
        setter(self, "flags", tuple(dict.fromkeys(flags)))
        setter(self, "truncated", truncated)
        setter(self, "error", error)
        setter(self, "candidates", tuple(candidates))
        setter(self, "reasoning", reasoning or None)
        setter(self, "answer", answer)
        setter(self, "_instance", instance)
        setter(self, "schema_errors", tuple(schema_errors))

    @property
    def value(self) -> Any:
        """The recovered data; on the valid-JSON fast path it is decoded on first access."""
        if self._text is not None:
            object.__setattr__(self, "_value", from_json(self._text))
            object.__setattr__(self, "_text", None)
        return self._value

    @property
    def ok(self) -> bool:
        """True when a complete value was recovered (it may still fail the schema: `valid`)."""
        return self.error is None

    @property
    def valid(self) -> bool:
        """True when a schema was given and the value validated against it."""
        return self._instance is not NOTHING

    @property
    def instance(self) -> Any:
        """The validated object when `valid`, else None."""
        return None if self._instance is NOTHING else self._instance

    def replace(self, **changes: Any) -> ParseResult:
        """A copy with some fields changed (the lazily decoded value is kept lazy)."""
        fields: dict[str, Any] = {
            "flags": self.flags,
            "truncated": self.truncated,
            "error": self.error,
            "candidates": self.candidates,
            "reasoning": self.reasoning,
            "answer": self.answer,
            "instance": self._instance,
            "schema_errors": self.schema_errors,
        }
        if "value" not in changes:
            fields["value"], fields["lazy_text"] = self._value, self._text
        fields.update(changes)
        return ParseResult(**fields)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"ParseResult is immutable; cannot set {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ParseResult):
            return NotImplemented
        return self._key() == other._key()

    __hash__ = None  # type: ignore[assignment]

    def _key(self) -> tuple[Any, ...]:
        return (self.value, self.flags, self.truncated, self.error, self.candidates)

    def __repr__(self) -> str:
        parts = [f"value={self.value!r}", f"flags={self.flags!r}"]
        if self.truncated:
            parts.append("truncated=True")
        if self.error is not None:
            parts.append(f"error={self.error!r}")
        if self.candidates:
            parts.append(f"candidates={self.candidates!r}")
        if self.reasoning:
            parts.append(f"reasoning={self.reasoning[:60]!r}")
        return f"ParseResult({', '.join(parts)})"
