"""Quoting model text and diagnostics back to the model, within bounds.

The pieces every repair request is made of (`RepairPrompt`, the tool-call form `CallsForm`):
the answer quoted back (`quote_answer`: cut around a marker past `MAX_ANSWER_CHARS`, a
repetition loop at its tail summarised in one line), any text cut to a size (`elide`), and
diagnostics as numbered blocks (`render_diagnostic`, `render_diagnostics`: each part clipped,
at most `MAX_DIAGNOSTICS` of them in `MAX_DIAGNOSTICS_CHARS`). Linear in the text's size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from healjson._core.diagnostic import Diagnostic, Source, short_repr
from healjson._core.wire.degenerate import tail_loop

__all__ = [
    "MAX_ANSWER_CHARS",
    "MAX_CONSTRAINT_CHARS",
    "MAX_DIAGNOSTICS",
    "MAX_DIAGNOSTICS_CHARS",
    "clip",
    "elide",
    "quote_answer",
    "render_diagnostic",
    "render_diagnostics",
]

MAX_ANSWER_CHARS: Final = 16_000
"""The raw answer quoted back in the assistant turn is cut (head and tail kept) beyond this."""
MAX_DIAGNOSTICS: Final = 20  # keeps a repair prompt bounded when every item of a long list is wrong
MAX_DIAGNOSTICS_CHARS: Final = 12_000
_PATH_CHARS = 200
_VALUE_CHARS = 300
MAX_CONSTRAINT_CHARS = 400
_PRESCRIPTION_CHARS = 800
_INVOLVED = 6
_NAME_CHARS = 80
_INVOLVED_VALUE_CHARS = 120
_LOOP_MIN_REPEATS = 8
_LOOP_MIN_CHARS = 2_000
_LOOP_MAX_PERIOD = 4_000


def quote_answer(text: str) -> str:
    """The answer as the repair's assistant turn: unchanged up to `MAX_ANSWER_CHARS`; a longer
    one keeps its head and tail around a marker counting what was left out; one that ends in a
    repetition loop is sent up to the loop's first passage plus a line summarising the repeats."""
    loop = _tail_loop(text)
    if loop is None:
        return elide(text, MAX_ANSWER_CHARS)
    start, period = loop
    length = len(text) - start
    return (
        elide(text[: start + period], MAX_ANSWER_CHARS)
        + f"\n[… from here the same {period}-character passage repeated {length // period} "
        f"times ({length} characters in all); the repeats are left out …]"
    )


def elide(text: str, cap: int) -> str:
    """`text` if it fits in `cap` characters, else its first and last halves of `cap` around a
    marker that says how many characters were left out."""
    if len(text) <= cap:
        return text
    head = cap // 2
    tail = cap - head
    omitted = len(text) - head - tail
    return f"{text[:head]}\n[… {omitted} characters left out …]\n{text[len(text) - tail :]}"


def _tail_loop(text: str) -> tuple[int, int] | None:
    """`(start, period)` when `text[start:]` is one passage of `period` characters repeated at
    least `_LOOP_MIN_REPEATS` times over at least `_LOOP_MIN_CHARS` characters; else None
    (linear: `wire.degenerate.tail_loop`)."""
    return tail_loop(
        text,
        min_repeats=_LOOP_MIN_REPEATS,
        min_chars=_LOOP_MIN_CHARS,
        max_period=_LOOP_MAX_PERIOD,
    )


def clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def render_diagnostics(diagnostics: Sequence[Diagnostic]) -> list[str]:
    """The diagnostics as numbered blocks (the value, its rule, the fix), bounded: at most
    `MAX_DIAGNOSTICS` of them in at most `MAX_DIAGNOSTICS_CHARS` characters (the first always),
    then a line counting the rest."""
    lines: list[str] = []
    shown, used = 0, 0
    for diagnostic in diagnostics[:MAX_DIAGNOSTICS]:
        block = render_diagnostic(shown + 1, diagnostic)
        size = sum(len(line) + 1 for line in block)
        if shown and used + size > MAX_DIAGNOSTICS_CHARS:
            break
        lines.extend(block)
        shown, used = shown + 1, used + size
    if len(diagnostics) > shown:
        lines.append(f"... and {len(diagnostics) - shown} more problems of the same kinds.")
    return lines


def render_diagnostic(number: int, diagnostic: Diagnostic) -> list[str]:
    shown = "<missing>" if diagnostic.is_missing else short_repr(diagnostic.value, _VALUE_CHARS)
    path = clip(diagnostic.path, _PATH_CHARS)
    lines = [
        f"{number}. `{path}` = {shown}",
        f"   rule: {clip(diagnostic.constraint, MAX_CONSTRAINT_CHARS)}",
    ]
    values = diagnostic.extra.get("values") if diagnostic.source is Source.CONTRACT else None
    if isinstance(values, Mapping):
        others: list[str] = []
        for name, value in values.items():
            if name == diagnostic.path or not isinstance(name, str):
                continue
            if len(others) == _INVOLVED:
                others.append("…")
                break
            shown_value = short_repr(value, _INVOLVED_VALUE_CHARS)
            others.append(f"`{clip(name, _NAME_CHARS)}` = {shown_value}")
        if others:
            lines.append(f"   also involved: {', '.join(others)}")
    lines.append(f"   fix: {clip(diagnostic.prescription, _PRESCRIPTION_CHARS)}")
    return lines
