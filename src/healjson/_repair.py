"""L3: the repair request as a data object with one renderer.

The same `RepairPrompt` builds the messages sent to the model and appears in the trace, so what
the logs show is what the model saw. A repair carries the original messages, the last raw output
verbatim (as the assistant turn) and that output's diagnostics, plus one short line per earlier
attempt (at most `MAX_HISTORY_LINES`, each capped) — never every failed attempt verbatim — so its
size is bounded however many attempts a policy allows.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._diagnostic import Diagnostic, Source, short_repr

__all__ = ["RepairPrompt", "Strategy", "history_line", "normalise_messages", "strategy_for"]

_HISTORY_LINE_CHARS = 200
_VALUE_CHARS = 300
MAX_HISTORY_LINES = 4
MAX_DIAGNOSTICS = 20  # keeps a repair prompt bounded when every item of a long list is wrong


class Strategy(enum.StrEnum):
    """What a request is for."""

    INITIAL = "initial"
    REPAIR = "repair"
    """Schema or contract diagnostics: ask for the complete corrected object."""
    SYNTAX = "syntax"
    """No JSON could be recovered: a short syntax prompt."""
    TRUNCATION = "truncation"
    """The answer was cut off: ask for a compact complete object (and/or more tokens)."""
    EMPTY_RETRY = "empty_retry"
    """The answer was empty: resend the original request unchanged."""
    RESEND = "resend"
    """Resend the original request unchanged with other parameters (a larger `max_tokens`)."""


@dataclass(frozen=True, slots=True)
class RepairPrompt:
    """Everything the next request adds to the original messages."""

    strategy: Strategy
    round: int
    raw_output: str | None
    diagnostics: tuple[Diagnostic, ...] = ()
    history: tuple[str, ...] = ()
    example: str | None = None
    schema: str | None = None

    def render(self) -> str:
        """The user turn that follows the model's last output ("" for a clean retry)."""
        if self.strategy in (Strategy.EMPTY_RETRY, Strategy.RESEND):
            return ""
        lines: list[str] = []
        if self.strategy is Strategy.TRUNCATION:
            size = len(self.raw_output or "")
            lines.append(
                f"Your previous answer was cut off after {size} characters by the output token "
                "limit, so it is incomplete and was discarded."
            )
            lines.append(
                "Write the complete JSON value again, compactly: no indentation or spaces "
                "between tokens, and every free-text field as short as the rules allow. "
                "Include every field."
            )
        elif self.strategy is Strategy.SYNTAX:
            problem = self.diagnostics[0].constraint if self.diagnostics else "is not valid JSON"
            lines.append(f"Your previous answer could not be read as JSON: it {problem}.")
            lines.append(
                "Reply with only the JSON value: no prose, no code fences, double-quoted keys "
                "and strings, no trailing commas or comments."
            )
        else:
            count = len(self.diagnostics)
            lines.append(
                f"Your previous answer (above) failed {count} check{'s' if count != 1 else ''}:"
            )
            shown = self.diagnostics[:MAX_DIAGNOSTICS]
            for number, diagnostic in enumerate(shown, 1):
                lines.extend(_render_diagnostic(number, diagnostic))
            if count > len(shown):
                lines.append(f"... and {count - len(shown)} more problems of the same kinds.")
        if self.history:
            lines.append("")
            lines.append("Earlier attempts failed like this; do not repeat them:")
            lines.extend(f"- {line}" for line in self.history)
        if self.example is not None:
            lines.append("")
            lines.append(
                f"Example of a valid answer (shape only; use your own values): {self.example}"
            )
        if self.schema is not None:
            lines.append("")
            lines.append(f"JSON schema of the answer: {self.schema}")
        if self.strategy is Strategy.REPAIR:
            lines.append("")
            lines.append(
                "Reply with the complete corrected JSON value only — every field, not just the "
                "ones listed. Any field may change, including ones that passed, if that is what "
                "makes all the rules hold."
            )
        return "\n".join(lines)

    def messages(self, original: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The full request: original messages, then the raw output and this prompt."""
        out = [dict(message) for message in original]
        if self.strategy in (Strategy.EMPTY_RETRY, Strategy.RESEND):
            return out
        out.append({"role": "assistant", "content": self.raw_output or ""})
        out.append({"role": "user", "content": self.render()})
        return out


def _render_diagnostic(number: int, diagnostic: Diagnostic) -> list[str]:
    shown = "<missing>" if diagnostic.is_missing else short_repr(diagnostic.value, _VALUE_CHARS)
    lines = [f"{number}. `{diagnostic.path}` = {shown}", f"   rule: {diagnostic.constraint}"]
    values = diagnostic.extra.get("values") if diagnostic.source is Source.CONTRACT else None
    if isinstance(values, Mapping):
        others = [
            f"`{name}` = {short_repr(value, 120)}"
            for name, value in values.items()
            if name != diagnostic.path
        ]
        if others:
            lines.append(f"   also involved: {', '.join(others)}")
    lines.append(f"   fix: {diagnostic.prescription}")
    return lines


_STRATEGY_BY_SOURCE = {
    Source.EMPTY: Strategy.EMPTY_RETRY,
    Source.TRUNCATION: Strategy.TRUNCATION,
    Source.SYNTAX: Strategy.SYNTAX,
}


def strategy_for(diagnostics: Sequence[Diagnostic]) -> Strategy:
    """The repair strategy a failed answer calls for: a clean retry for an empty answer, a
    compact rewrite for a cut one, a syntax prompt when no JSON was recovered, else a repair."""
    for diagnostic in diagnostics:
        strategy = _STRATEGY_BY_SOURCE.get(diagnostic.source)
        if strategy is not None:
            return strategy
    return Strategy.REPAIR


def history_line(number: int, verdict: str, diagnostics: Sequence[Diagnostic]) -> str:
    """One short line summarising a failed attempt (bounded length)."""
    if not diagnostics:
        summary = "no usable answer"
    else:
        summary = "; ".join(d.describe(max_value_chars=40) for d in diagnostics)
    line = f"attempt {number} ({verdict}): {summary}"
    if len(line) > _HISTORY_LINE_CHARS:
        line = line[: _HISTORY_LINE_CHARS - 1] + "…"
    return line


def normalise_messages(messages: Any) -> tuple[dict[str, Any], ...]:
    """Accept a prompt string, or a sequence of message mappings / objects with role+content."""
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
