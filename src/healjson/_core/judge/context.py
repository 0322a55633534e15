"""`ContractContext`: what a contract may read besides the value."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

__all__ = ["ContractContext"]

_NO_EXTRA: Mapping[str, Any] = MappingProxyType({})
"""The `extra` of a context the caller gave no data for (shared, read-only)."""


def _no_extra() -> Mapping[str, Any]:
    return _NO_EXTRA


@dataclass(frozen=True, slots=True)
class ContractContext:
    """What a contract may read besides the value: the original request and caller data.

    `extra` is the caller's `context=` mapping itself (not a copy); the same object is
    pydantic's validation context (`info.context` in a validator) in every validation of the
    run: see `validation_context`."""

    messages: tuple[Mapping[str, Any], ...] = ()
    extra: Mapping[str, Any] = field(default_factory=_no_extra)
    raw_text: str = ""
    spent: list[Any] = field(default_factory=list, repr=False, compare=False)
    """Model calls the contracts made during the run (`record_usage`), not yet counted in it."""

    def record_usage(self, usage: Any) -> None:
        """Count what a contract's own model call spent (a `Usage`, e.g. `healjson.judge`'s)
        in the run's usage: the run adds it after the contracts ran."""
        self.spent.append(usage)

    @property
    def validation_context(self) -> Any:
        """pydantic's validation context for the run: `extra` (the caller's `context=`
        mapping, the very object), or None when the caller gave no data."""
        extra = self.extra
        return None if extra is _NO_EXTRA else extra

    @property
    def input_text(self) -> str:
        """The text of the user turns of the original messages, joined by blank lines."""
        parts: list[str] = []
        for message in self.messages:
            if message.get("role", "user") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                parts.append(content)
            elif isinstance(content, list):
                parts.extend(
                    str(part.get("text", ""))
                    for part in content
                    if isinstance(part, Mapping) and part.get("type") == "text"
                )
        return "\n\n".join(parts)
