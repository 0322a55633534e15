"""Degenerate answers: a run of whitespace, or one passage repeated, past a bound.

Local models under a grammar (and some hosted ones) can fall into a loop: newlines and spaces
until the token limit, or the same sentence or list item again and again. Such an answer costs
every token up to the limit and never completes; no parser can save it. `Guard` finds it as the
text arrives, so a streamed answer is cut off at once (`stream.reading`), and `degenerate`
judges a whole reply by the very same rule (a reply read whole is checked before it is parsed):
whatever the chunking, the same text trips at the same place.

The rule (both bounds set by `HealPolicy`; None turns a check off):

- **whitespace**: more than `max_whitespace_run` whitespace characters in a row (`str.isspace`),
  anywhere in the answer;
- **repeats**: the answer, up to one of its checkpoints (every `CHECK_EVERY` characters), ends in
  one passage of at most `MAX_PASSAGE` characters, not all whitespace, repeated more than
  `max_repeats` times in a row over at least `MIN_LOOP_CHARS` characters, within the last
  `window` characters (`(max_repeats + 1) * MAX_PASSAGE`, at most `MAX_WINDOW`; a larger
  `max_repeats` looks for shorter passages).

Linear by construction: a whitespace run is counted as the pieces arrive (a long piece is
probed in blocks of half the bound, C-level `isspace` on each, and only a block that is all
whitespace is measured); a loop is looked for at each checkpoint on a bounded tail window, its
period found from the distances back to earlier copies of the tail's last characters and its
extent grown by doubling (`tail_loop`, also what a repair prompt uses to summarise a loop).
No check re-reads the text before the window.
"""

from __future__ import annotations

from typing import Final

from healjson._core.diagnostic import ROOT, Diagnostic, Source

__all__ = [
    "CHECK_EVERY",
    "MAX_PASSAGE",
    "MAX_WINDOW",
    "MIN_LOOP_CHARS",
    "Guard",
    "degenerate",
    "tail_loop",
]

CHECK_EVERY: Final = 1_024
"""Characters between two checkpoints of the repeat check."""
MAX_PASSAGE: Final = 512
"""The longest passage the repeat check looks for (with the default `max_repeats`)."""
MIN_LOOP_CHARS: Final = 8_192
"""A repeated passage shorter than this in all is never cut (a short list of equal items)."""
MAX_WINDOW: Final = 262_144
"""The repeat check's tail window, at most (it bounds the work per checkpoint)."""
_PROBE: Final = 16  # characters of the tail searched for earlier copies
_CANDIDATES: Final = 16  # earlier copies of the probe tried as the period


def tail_loop(
    text: str,
    end: int | None = None,
    *,
    min_repeats: int,
    min_chars: int,
    max_period: int,
    floor: int = 0,
) -> tuple[int, int] | None:
    """`(start, period)` when `text[start:end]` is one passage of `period` characters
    repeated at least `min_repeats` times over at least `min_chars` characters, not reaching
    below `floor`; else None.

    Linear in the span looked at, in C-level string operations: candidate periods are the
    distances back to earlier copies of the last `_PROBE` characters (nearest first, within
    `max_period`); for each, the periodic tail is grown by doubling and then narrowed by
    halving, comparing only the newly covered part each time.
    """
    n = len(text) if end is None else end
    if n - floor < max(min_chars, _PROBE + 1):
        return None
    probe = text[n - _PROBE : n]
    low = max(floor, n - _PROBE - max_period)
    last = n - 1
    for _ in range(_CANDIDATES):
        found = text.rfind(probe, low, last)
        if found < 0:
            return None
        last = found + _PROBE - 1
        period = n - _PROBE - found
        need = max(min_chars, min_repeats * period)
        # two copies first (most candidates fail there at once), then the whole span needed:
        # each a single C-level comparison; the extent is measured only for a loop found
        if (
            need <= n - floor
            and text[n - 2 * period : n - period] == text[n - period : n]
            and text[n - need : n - period] == text[n - need + period : n]
        ):
            return n - _periodic_tail(text, n, period, floor), period
    return None


def _periodic_tail(text: str, n: int, period: int, floor: int) -> int:
    """The length of the longest suffix of `text[floor:n]` that has period `period`."""

    def extends(good: int, longer: int) -> bool:  # text[n-good:n] is periodic; is text[n-longer:n]?
        return text[n - longer : n - good] == text[n - longer + period : n - good + period]

    room = n - floor
    if room <= period:  # any string of at most `period` characters has that period
        return room
    good, longer = period, 2 * period
    while longer <= room and extends(good, longer):
        good, longer = longer, 2 * longer
    longer = min(longer, room + 1)
    while longer - good > 1:
        middle = (good + longer) // 2
        if extends(good, middle):
            good = middle
        else:
            longer = middle
    return good


class Guard:
    """The degenerate-answer check, fed piece by piece (`feed`): the first `Diagnostic` it
    returns says where and how the answer degenerated (then the answer should be cut off);
    None while it has not. The same text trips at the same place however it is cut into
    pieces."""

    __slots__ = (
        "_buffer",
        "_buffer_start",
        "_chars",
        "_max_period",
        "_max_repeats",
        "_max_run",
        "_next_check",
        "_pending",
        "_run",
        "_window",
        "tripped",
    )

    def __init__(self, max_whitespace_run: int | None, max_repeats: int | None) -> None:
        self._max_run = max_whitespace_run
        self._max_repeats = max_repeats
        self._chars = 0  # characters fed so far
        self._run = 0  # whitespace characters at the end of what was fed
        self._pending: list[str] = []  # pieces since the last checkpoint crossed
        self._buffer = ""  # the tail window as of the last checkpoint crossed
        self._buffer_start = 0  # the absolute position of `_buffer[0]`
        self._next_check = CHECK_EVERY
        if max_repeats is None:
            self._window = self._max_period = 0
        else:
            self._window = min((max_repeats + 1) * MAX_PASSAGE, MAX_WINDOW)
            self._max_period = max(1, min(MAX_PASSAGE, self._window // (max_repeats + 1)))
        self.tripped: Diagnostic | None = None

    @property
    def active(self) -> bool:
        """False when both checks are off (nothing to feed)."""
        return self._max_run is not None or self._max_repeats is not None

    def feed(self, piece: str) -> Diagnostic | None:
        """Take the next piece of the answer; the diagnostic once it has degenerated (of the
        two checks, the one whose bound was passed first in the text)."""
        if self.tripped is not None or not piece:
            return self.tripped
        start = self._chars
        self._chars = start + len(piece)
        found = None if self._max_run is None else self._whitespace(piece, start, self._max_run)
        if self._max_repeats is not None:
            self._pending.append(piece)
            if self._chars >= self._next_check:
                loop = self._repeats()
                if loop is not None and (found is None or loop[1] < found[1]):
                    found = loop
        self.tripped = None if found is None else found[0]
        return self.tripped

    def _whitespace(self, piece: str, start: int, bound: int) -> tuple[Diagnostic, int] | None:
        """A run of more than `bound` whitespace characters, continued from the pieces before
        or inside this one (and where its bound was passed); keeps the run at the end of
        `piece` for the next."""
        body = piece.lstrip()
        lead = len(piece) - len(body)
        if not body:  # all whitespace: the run goes on
            self._run += lead
            return _run_found(start + lead - self._run, bound) if self._run > bound else None
        if self._run + lead > bound:
            return _run_found(start - self._run, bound)
        inner = body.rstrip()
        if len(inner) > bound:  # a run inside the piece: probe blocks of half the bound
            step = max(bound // 2, 1)
            for at in range(0, len(inner) - step + 1, step):
                if not inner[at : at + step].isspace():
                    continue
                before = inner[max(0, at - bound) : at]
                left = at - (len(before) - len(before.rstrip()))
                after = inner[at : at + bound + 1]
                if at + (len(after) - len(after.lstrip())) - left > bound:
                    return _run_found(start + lead + left, bound)
        self._run = len(body) - len(inner)
        if self._run > bound:
            return _run_found(self._chars - self._run, bound)
        return None

    def _repeats(self) -> tuple[Diagnostic, int] | None:
        """At each checkpoint crossed since the last: does the text up to it end in a loop?
        Then the window is cut back to its bound."""
        assert self._max_repeats is not None
        text = self._buffer + "".join(self._pending)
        self._pending.clear()
        base = self._buffer_start
        found = None
        while self._next_check <= self._chars and found is None:
            end = self._next_check - base
            self._next_check += CHECK_EVERY
            loop = tail_loop(
                text,
                end,
                min_repeats=self._max_repeats + 1,
                min_chars=MIN_LOOP_CHARS,
                max_period=self._max_period,
                floor=max(0, end - self._window),
            )
            if loop is not None and not text[loop[0] : loop[0] + loop[1]].isspace():
                found = _loop_found(text, base, loop, end), base + end
        keep = max(0, len(text) - self._window)
        self._buffer = text[keep:]
        self._buffer_start = base + keep
        return found


def degenerate(
    text: str, max_whitespace_run: int | None, max_repeats: int | None
) -> Diagnostic | None:
    """Whether a whole answer degenerated, by `Guard`'s rule (the same verdict as feeding it
    piece by piece); cheap for an answer too short to hold either (one length check)."""
    if max_whitespace_run is None and max_repeats is None:
        return None
    shortest = min(
        MIN_LOOP_CHARS if max_repeats is not None else len(text) + 1,
        max_whitespace_run + 1 if max_whitespace_run is not None else len(text) + 1,
    )
    if len(text) < shortest:
        return None
    return Guard(max_whitespace_run, max_repeats).feed(text)


def _run_found(at: int, bound: int) -> tuple[Diagnostic, int]:
    """A whitespace run from `at` on, past `bound` (where it passed it)."""
    diagnostic = Diagnostic(
        ROOT,
        "<whitespace>",
        f"turned into a run of more than {bound:,} whitespace characters after {at:,} characters",
        "Write the JSON value compactly, with no runs of spaces or newlines, and stop after "
        "its closing bracket.",
        Source.DEGENERATE,
        extra={"kind": "whitespace", "at": at},
    )
    return diagnostic, at + bound + 1


def _loop_found(text: str, base: int, loop: tuple[int, int], end: int) -> Diagnostic:
    start, period = loop
    length = end - start
    passage = text[start : start + period]
    return Diagnostic(
        ROOT,
        passage,
        f"turned into the same {period}-character passage repeated {length // period:,} "
        f"times ({length:,} characters) after {base + start:,} characters",
        "Write each value once, compactly, and stop after the JSON value's closing bracket.",
        Source.DEGENERATE,
        extra={"kind": "repeats", "at": base + start, "length": length, "period": period},
    )
