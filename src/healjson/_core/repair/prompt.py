"""L3: the repair request as a data object with one renderer.

The same `RepairPrompt` builds the messages sent to the model and appears in the trace, so what
the logs show is what the model saw. A repair carries the original messages, the last raw output
(as the assistant turn) and that output's diagnostics, plus one short line per earlier attempt
(at most `MAX_HISTORY_LINES`, each capped) — never every failed attempt verbatim.

Every part that depends on the answer or on user code is capped, so a repair request is at most
`MAX_REPAIR_EXTRA_CHARS` (72,000) characters of message content longer than the original
messages, however large or hostile the answer:

- the answer quoted back is sent verbatim up to `MAX_ANSWER_CHARS` (16,000) characters; a longer
  one keeps its first and last 8,000 characters around a marker that says how many were left
  out. An answer that ends in a repetition loop (the same passage of up to 4,000 characters at
  least 8 times, 2,000 characters or more in all — found in linear time from the answer's tail
  period) is sent up to the first copy of that passage, then one line: "the same N-character
  passage repeated K times";
- at most `MAX_DIAGNOSTICS` (20) diagnostics, in at most `MAX_DIAGNOSTICS_CHARS` (12,000)
  characters, each of its parts cut (path 200, value 300, constraint 400, prescription 800
  characters, 6 other involved fields of 80 + 120);
- the history: the last `MAX_HISTORY_LINES` (4) lines of at most 200 characters;
- the golden example only when it is at most `MAX_EXAMPLE_CHARS` (8,000) characters and the JSON
  schema only when it is at most `MAX_SCHEMA_CHARS` (32,000) characters (a cut example or schema
  would mislead; a larger one is left out);
- the fixed wording, under 2,000 characters (with a per-item repair's item indices, at most
  40 runs such as `[2]-[5]`).

Ordinary answers (a few KB) are quoted back untouched.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from healjson._core.diagnostic import Diagnostic

from .calls import CallsForm
from .quote import MAX_CONSTRAINT_CHARS, clip, quote_answer, render_diagnostics

__all__ = [
    "MAX_EXAMPLE_CHARS",
    "MAX_HISTORY_LINES",
    "MAX_REPAIR_EXTRA_CHARS",
    "MAX_SCHEMA_CHARS",
    "RepairPrompt",
    "Strategy",
    "history_line",
]

MAX_REPAIR_EXTRA_CHARS: Final = 72_000
"""Characters of message content a repair request adds to the original messages, at most."""
MAX_HISTORY_LINES: Final = 4
MAX_EXAMPLE_CHARS: Final = 8_000
"""A golden example longer than this is not used (`_example` does not even build one)."""
MAX_SCHEMA_CHARS: Final = 32_000
_HISTORY_LINE_CHARS = 200
_HISTORY_DIAGNOSTICS = 5  # a history line describes at most this many diagnostics
_INDEX_RUNS = 40  # runs of item indices named in a per-item repair


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
    DEGENERATE = "degenerate"
    """The answer turned into a run of whitespace or one passage repeated (cut off there): ask
    for the complete value again, compactly, each value once."""
    ITEMS = "items"
    """Some items of a list failed, the others passed: ask for the failed items only (the
    others are named as accepted), and splice the answer back into the list."""


def _truncation_opening(size: int, diagnostics: tuple[Diagnostic, ...]) -> str:
    """Why the last answer was discarded, as the parser found it (never a guessed cause)."""
    cause = diagnostics[0].extra.get("cause") if diagnostics else None
    if cause == "token_limit":
        return (
            f"Your previous answer was cut off after {size} characters by the output token "
            "limit, so it is incomplete and was discarded."
        )
    if cause == "reasoning_only":
        return (
            "Your previous answer held only reasoning and no JSON value after it, so it was "
            "discarded."
        )
    return (
        f"Your previous answer was cut off after {size} characters, before the JSON value was "
        "complete, so it was discarded."
    )


def _degenerate_opening(diagnostics: tuple[Diagnostic, ...]) -> str:
    """What the degenerate answer turned into, as the guard found it."""
    constraint = diagnostics[0].constraint if diagnostics else "degenerated"
    return (
        f"Your previous answer {clip(constraint, MAX_CONSTRAINT_CHARS)}, so it was cut off "
        "there and discarded."
    )


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
    items: tuple[int, ...] = ()
    """`Strategy.ITEMS`: the indices of the list's failed items, the ones asked for."""
    item_count: int = 0
    """`Strategy.ITEMS`: how many items the list has."""
    removed_items: tuple[int, ...] = ()
    """`Strategy.ITEMS`: the indices of the items a `"drop"` rule removes: neither asked for
    nor accepted (the answer's judging removes them again)."""
    removed: tuple[str, ...] = ()
    """`Strategy.REPAIR`: the places (`[3]`, `lines[0]`) of the items a `"drop"` rule removes
    from the answer quoted back (the answer's judging removes them again)."""
    calls: CallsForm | None = None
    """A repair of the caller's own tool calls: the answer's calls as they stand and the ones
    asked for again (`repair.calls`); its rendering is this prompt's."""

    def render(self) -> str:
        """The user turn that follows the model's last output ("" for a clean retry); for a
        tool-call repair, each rejected call's problems and the calls to make again."""
        if self.strategy in (Strategy.EMPTY_RETRY, Strategy.RESEND):
            return ""
        if self.calls is not None:
            return self.calls.render()
        lines: list[str] = []
        if self.strategy is Strategy.TRUNCATION:
            lines.append(_truncation_opening(len(self.raw_output or ""), self.diagnostics))
            lines.append(
                "Write the complete JSON value again, compactly: no indentation or spaces "
                "between tokens, and every free-text field as short as the rules allow. "
                "Include every field."
            )
        elif self.strategy is Strategy.DEGENERATE:
            lines.append(_degenerate_opening(self.diagnostics))
            lines.append(
                "Write the complete JSON value again, compactly: no indentation or spaces "
                "between tokens, each value written once, and stop after the closing bracket. "
                "Include every field."
            )
        elif self.strategy is Strategy.SYNTAX:
            problem = (
                clip(self.diagnostics[0].constraint, MAX_CONSTRAINT_CHARS)
                if self.diagnostics
                else "is not valid JSON"
            )
            lines.append(f"Your previous answer could not be read as JSON: it {problem}.")
            lines.append(
                "Reply with only the JSON value: no prose, no code fences, double-quoted keys "
                "and strings, no trailing commas or comments."
            )
        else:
            count = len(self.diagnostics)
            checks = f"{count} check{'s' if count != 1 else ''}"
            if self.strategy is Strategy.ITEMS:
                failed = len(self.items)
                lines.append(
                    f"Your previous answer (above) is a list of {self.item_count} items; "
                    f"{failed} of them ({_indices(self.items)}) failed {checks}:"
                )
            else:
                lines.append(f"Your previous answer (above) failed {checks}:")
            lines.extend(render_diagnostics(self.diagnostics))
        history = self.history[-MAX_HISTORY_LINES:]
        if history:
            lines.append("")
            lines.append("Earlier attempts failed like this; do not repeat them:")
            lines.extend(f"- {clip(line, _HISTORY_LINE_CHARS)}" for line in history)
        if self.example is not None and len(self.example) <= MAX_EXAMPLE_CHARS:
            lines.append("")
            lines.append(
                f"Example of a valid answer (shape only; use your own values): {self.example}"
            )
        if self.schema is not None and len(self.schema) <= MAX_SCHEMA_CHARS:
            lines.append("")
            lines.append(f"JSON schema of the answer: {self.schema}")
        if self.strategy is Strategy.REPAIR:
            lines.append("")
            if self.removed:
                one = len(self.removed) == 1
                places = ", ".join(self.removed[:_INDEX_RUNS])
                if len(self.removed) > _INDEX_RUNS:
                    places += f", … ({len(self.removed)} in all)"
                lines.append(
                    f"The {'item' if one else 'items'} at {places} "
                    f"break{'s' if one else ''} a rule that removes "
                    f"{'it' if one else 'them'} from the list: "
                    f"{'it is' if one else 'they are'} not part of the value: leave "
                    f"{'it' if one else 'them'} out."
                )
            lines.append(
                "Reply with the complete corrected JSON value only — every field, not just the "
                "ones listed. Any field may change, including ones that passed, if that is what "
                "makes all the rules hold."
            )
        elif self.strategy is Strategy.ITEMS:
            settled = {*self.items, *self.removed_items}
            accepted = tuple(i for i in range(self.item_count) if i not in settled)
            lines.append("")
            if self.removed_items:
                count = len(self.removed_items)
                lines.append(
                    f"{count} item{'s' if count != 1 else ''} ({_indices(self.removed_items)}) "
                    f"break{'s' if count == 1 else ''} a rule that removes "
                    f"{'it' if count == 1 else 'them'} from the list: do not send "
                    f"{'it' if count == 1 else 'them'} again."
                )
            if accepted:
                one = len(accepted) == 1
                lines.append(
                    f"The other {'item' if one else f'{len(accepted)} items'} "
                    f"({_indices(accepted)}) passed every check and "
                    f"{'is' if one else 'are'} accepted as "
                    f"{'it is' if one else 'they are'}: do not send "
                    f"{'it' if one else 'them'} again."
                )
            lines.append(
                f"Reply with only a JSON array of the {len(self.items)} corrected items, in this "
                f"order: {_indices(self.items)}; each item complete (every field, not just the "
                "ones listed)."
            )
        return "\n".join(lines)

    def messages(self, original: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """The full request: original messages, then the raw output (quoted back within
        `MAX_ANSWER_CHARS`, see `quote_answer`) and this prompt."""
        if self.strategy in (Strategy.EMPTY_RETRY, Strategy.RESEND):
            return [dict(message) for message in original]
        if self.calls is not None:
            return self.calls.messages(original)
        out = [dict(message) for message in original]
        out.append({"role": "assistant", "content": quote_answer(self.raw_output or "")})
        out.append({"role": "user", "content": self.render()})
        return out


def _indices(indices: tuple[int, ...]) -> str:
    """`[0], [2]-[5], [9]`: item indices as runs, at most `_INDEX_RUNS` runs shown."""
    runs: list[tuple[int, int]] = []
    for index in sorted(indices):
        if runs and index == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], index)
        else:
            runs.append((index, index))
    shown = [f"[{a}]" if a == b else f"[{a}]-[{b}]" for a, b in runs[:_INDEX_RUNS]]
    if len(runs) > _INDEX_RUNS:
        shown.append(f"… ({len(indices)} in all)")
    return ", ".join(shown)


def history_line(number: int, verdict: str, diagnostics: Sequence[Diagnostic]) -> str:
    """One short line summarising a failed attempt (bounded length)."""
    if not diagnostics:
        summary = "no usable answer"
    else:
        described = diagnostics[:_HISTORY_DIAGNOSTICS]
        summary = "; ".join(d.describe(max_value_chars=40)[:_HISTORY_LINE_CHARS] for d in described)
    line = f"attempt {number} ({verdict}): {summary}"
    if len(line) > _HISTORY_LINE_CHARS:
        line = line[: _HISTORY_LINE_CHARS - 1] + "…"
    return line
