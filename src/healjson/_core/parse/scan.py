"""Find the JSON candidates in a reply: code-fence bodies and balanced `{...}` / `[...]` spans.

One left-to-right pass per span with an explicit stack (no recursion: 10k nesting levels cost
nothing special). The pass jumps between the only characters that matter with a regex and skips
whole strings with `str.find`; it is string-aware for double, single and typographic quotes,
comment-aware (a bracket or a quote inside `//` or `/* */` is text), and escape-aware outside
strings: `{\\"a\\": 1}` is JSON encoded inside a JSON string, its `\\"` are the encoded string's
quotes (a quote preceded by k backslashes, k odd, opens a string that only a quote with exactly
k backslashes closes), so such a span closes instead of looking cut off.

Time is linear in the input: a structure that never closes is rescanned from inside at most
`_MAX_RESTARTS` times, and however many spans a reply holds, only the first and the last
`_KEEP` are kept (the middle is scanned, not stored).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

from .meter import charge

__all__ = [
    "Candidate",
    "closed_despite_quotes",
    "cut_string",
    "find_candidates",
    "left_open",
    "strip_fences",
]

_SPECIAL = re.compile(r"[{}\[\]\"'\\/\u201c]")
_FENCE = re.compile(r"(?m)(`{3,}|~{3,})")
_LANG = re.compile(r"[A-Za-z0-9_+.\-]*")
_OPEN = {"{": "}", "[": "]"}
_CLOSERS = frozenset("}]")
_VALUE_START = frozenset("{[,:")
_BEFORE_COMMENT = frozenset(" \t\r\n,{}[]\"'")  # `//` after these opens a comment; `http://` no
_MAX_RESTARTS = 3
_MAX_RESTART_CHARS = 1_000_000  # past this, one scan only: keeps megabyte inputs sub-second
_KEEP = 32  # spans kept from each end of the reply
_MAX_FENCES = 64


@dataclass(frozen=True, slots=True)
class Candidate:
    """A stretch of the reply that may hold the JSON value.

    `complete` is False when the structure (or the fence) is still open at the end of the text —
    the signature of truncation. `string_start` is the offset, inside `text`, of a string that was
    still open at the end (a cut string: its content must not be trusted).
    """

    text: str
    start: int
    fenced: bool
    complete: bool
    string_start: int | None = None

    @property
    def end(self) -> int:
        """Offset just past the candidate in the reply."""
        return self.start + len(self.text)


def find_candidates(text: str) -> list[Candidate]:
    """All candidates, fence bodies first, then bracketed spans (duplicates dropped)."""
    out: list[Candidate] = []
    seen: set[str] = set()

    def add(candidate: Candidate) -> None:
        key = candidate.text.strip()
        if key and key not in seen:
            seen.add(key)
            out.append(candidate)

    for body, start, _closed in _fence_bodies(text):
        if _is_string(body.strip()):  # a fenced JSON string: its brackets are text
            add(Candidate(body, start, fenced=True, complete=True))
            continue
        inner = _spans(body)
        for span in inner:
            add(Candidate(span.text, span.start + start, True, span.complete, span.string_start))
        # a fence left open is fine when what it holds is complete (the closer is optional noise)
        add(Candidate(body, start, fenced=True, complete=all(s.complete for s in inner)))
    for span in _spans(text):
        add(span)
    return out


def strip_fences(text: str) -> str:
    """The text with one surrounding code fence removed (for scalar answers like ```42```)."""
    bodies = _fence_bodies(text)
    if len(bodies) == 1:
        return bodies[0][0].strip()
    return text.strip()


def _fence_bodies(text: str) -> list[tuple[str, int, bool]]:
    """(body, offset, closed) for each ``` or ~~~ fence, pairing fence markers in order."""
    bodies: list[tuple[str, int, bool]] = []
    pos = 0
    while len(bodies) < _MAX_FENCES:
        opening = _FENCE.search(text, pos)
        if opening is None:
            charge(len(text) - pos)
            break
        marker = opening.group(1)
        body_start = opening.end()
        lang = _LANG.match(text, body_start)
        if lang is not None and lang.end() < len(text) and text[lang.end()] in "\r\n":
            body_start = lang.end()
        # a closer ends its line (`}```` glued to the value too): a marker followed by more of
        # the line (`"```", "b"`, `x```y`) is text the fence holds, not its end
        closing = re.compile(
            re.escape(marker[0]) + "{" + str(len(marker)) + r",}(?=[ \t]*+(?:\r?\n|\Z))"
        )
        first = len(text) - len(text[body_start:].lstrip())  # a fence inside a fenced JSON
        quoted = _string_end(text, first) if text[first : first + 1] == '"' else -1  # string
        found = closing.search(text, max(body_start, quoted))  # is text, not the closer
        if found is None:
            charge(len(text) - pos)
            bodies.append((text[body_start:], body_start, False))
            break
        charge(found.end() - pos)
        bodies.append((text[body_start : found.start()], body_start, True))
        pos = found.end()
    return bodies


def closed_despite_quotes(candidate: Candidate) -> Candidate | None:
    """A span that "never closes" only because of a stray quote (`"New York, "gender": ...}`)
    still ends with its closer and has balanced brackets: it is broken, not truncated."""
    body = candidate.text.rstrip()
    closer = _OPEN.get(body[:1])
    if closer is None or len(body) < 2 or not body.endswith(closer):
        return None
    charge(len(body))
    if body.count("{") != body.count("}") or body.count("[") != body.count("]"):
        return None
    return Candidate(body, candidate.start, candidate.fenced, complete=True)


def left_open(still_open: list[Candidate], read_whole: list[tuple[int, int]]) -> Candidate | None:
    """The structure left open at the end of the reply: the outermost open span that does not
    start inside a span read whole (`read_whole`: (start, end) pairs). One that does is that
    structure misread (a ``` inside a string value closed a fence early, a stray quote made a
    string look unclosed), not a truncation."""
    for candidate in sorted(still_open, key=lambda c: c.start):
        if not any(start <= candidate.start < end for start, end in read_whole):
            return candidate
    return None


def cut_string(text: str) -> bool:
    """Whether `text` (stripped) opens a JSON string that never closes: a string cut off, never
    a value."""
    if not text.startswith('"'):
        return False
    charge(len(text))
    return _string_end(text, 0) < 0


def _string_end(text: str, start: int, closer: str = '"', level: int = 0) -> int:
    """The offset after the string opened at `start` that `closer` ends; -1 when it never closes.

    Backslashes escape, counted back from each closer (each run once: by the closer that ends
    it). At `level` 0 a closer ends the string after an even number of them. An encoded string,
    whose opening quote has `level` backslashes before it (`2**d - 1` at encoding depth d),
    closes at the next quote with `level` more backslashes than a multiple of `2 * (level + 1)`
    before it: those are its content's own backslashes, each written `level + 1` times, in pairs
    (a content backslash is itself escaped); a quote of its content carries `2 * level + 1`.
    """
    i = start + 1
    period = 2 * (level + 1)
    while True:
        found = text.find(closer, i)
        if found < 0:
            return -1
        backslashes = 0
        while found - 1 - backslashes > start and text[found - 1 - backslashes] == "\\":
            backslashes += 1
        if backslashes >= level and (backslashes - level) % period == 0:
            return found + 1
        i = found + 1


def _is_string(text: str) -> bool:
    """True when `text` is exactly one double-quoted string."""
    return text.startswith('"') and _string_end(text, 0) == len(text)


def _spans(text: str) -> list[Candidate]:
    """Balanced bracketed spans at the top level of `text`, in order (the first and last
    `_KEEP` of them, plus any structure left open)."""
    first: list[Candidate] = []
    last: deque[Candidate] = deque(maxlen=_KEEP)
    pos = 0
    restarts = 0
    n = len(text)
    openers = _Openers(text)
    while pos < n:
        start = openers.next(pos)
        if start < 0:
            charge(n - pos)
            break
        end, string_start = _match(text, start)
        charge((end if end >= 0 else n) - pos)
        if end >= 0:
            span = Candidate(text[start:end], start, fenced=False, complete=True)
            (first if len(first) < _KEEP else last).append(span)
            pos = end
            continue
        rel = None if string_start is None else string_start - start
        span = Candidate(text[start:], start, fenced=False, complete=False, string_start=rel)
        (first if len(first) < _KEEP else last).append(span)
        if restarts >= _MAX_RESTARTS or n > _MAX_RESTART_CHARS:
            break
        # an unclosed opener may be prose ("use {braces"): look for complete spans inside it
        restarts += 1
        pos = start + 1
    return [*first, *last]


class _Openers:
    """The next `{` or `[` at or after a position. Each kind's next offset is remembered, so a
    reply with thousands of `{` and no `[` does not search to its end for a `[` every time."""

    __slots__ = ("_next", "_text")

    def __init__(self, text: str) -> None:
        self._text = text
        self._next = {"{": -2, "[": -2}  # -2: not searched yet; -1: none left

    def next(self, pos: int) -> int:
        found = []
        for char, known in self._next.items():
            at = known
            if known == -2 or 0 <= known < pos:
                at = self._text.find(char, pos)
                self._next[char] = at
            if at >= 0:
                found.append(at)
        return min(found) if found else -1


def _match(text: str, start: int) -> tuple[int, int | None]:
    """End offset of the structure opened at `start` (-1 if it never closes) and, when it ends
    inside a string, that string's start offset."""
    stack: list[str] = []
    open_closers = {"}": 0, "]": 0}  # counts, so a stray closer costs O(1), not O(depth)
    comments: list[tuple[int, int]] = []  # (start, end) of each comment skipped, in order
    pos = start
    n = len(text)
    while True:
        match = _SPECIAL.search(text, pos)
        if match is None:
            return -1, None
        i = match.start()
        char = text[i]
        pos = i + 1
        if char in _OPEN:
            closer = _OPEN[char]
            stack.append(closer)
            open_closers[closer] += 1
        elif char in _CLOSERS:
            if open_closers[char]:
                # tolerate a missing closer: pop down to the matching one
                while stack:
                    popped = stack.pop()
                    open_closers[popped] -= 1
                    if popped == char:
                        break
            if not stack:
                return i + 1, None
        elif char == '"':
            end = _string_end(text, i)
            if end < 0:
                return -1, i
            pos = end
        elif char == "\\":
            j = i
            while j < n and text[j] == "\\":
                j += 1
            if j < n and text[j] == '"' and (j - i) % 2 == 1:  # an encoded string's quote
                end = _string_end(text, j, '"', j - i)
                if end < 0:
                    return -1, i
                pos = end
            else:
                pos = j
        elif char == "\u201c":
            end = _string_end(text, i, "\u201d")
            if end < 0:
                return -1, i
            pos = end
        elif char == "'":
            if _in_value_position(text, i, comments):
                end = _string_end(text, i, "'")
                if end < 0:
                    return -1, i
                pos = end
        elif char == "/":
            comment_end = _comment_end(text, i)
            if comment_end is not None:
                comments.append((i, comment_end))
                pos = comment_end


def _comment_end(text: str, i: int) -> int | None:
    """Where the `//` or `/* */` comment starting at `i` ends (the text's end if it never does),
    or None when the slash starts no comment."""
    follower = text[i + 1 : i + 2]
    if follower not in ("/", "*") or (i > 0 and text[i - 1] not in _BEFORE_COMMENT):
        return None
    if follower == "/":
        newline = text.find("\n", i + 2)
        return len(text) if newline < 0 else newline
    close = text.find("*/", i + 2)
    return len(text) if close < 0 else close + 2


def _in_value_position(text: str, i: int, comments: list[tuple[int, int]]) -> bool:
    """A single quote opens a string only where JSON expects a key or a value (comments
    between the two are looked through)."""
    j = i - 1
    floor = max(i - 64, 0)
    k = len(comments) - 1
    while j >= floor:
        if text[j] in " \t\r\n":
            j -= 1
        elif k >= 0 and comments[k][0] <= j < comments[k][1]:
            j = comments[k][0] - 1
            floor = max(j - 64, 0)
            k -= 1
        else:
            break
    return j >= 0 and text[j] in _VALUE_START
