"""Find the JSON candidates in a reply: code-fence bodies and balanced `{...}` / `[...]` spans.

One left-to-right pass with an explicit stack (no recursion, so 10k nesting levels cost nothing
special), string-aware for double, single and typographic quotes, comment-aware (a bracket or a
quote inside a `//` or `/* */` comment is not structure), jumping between the only characters
that matter with a regex. Time is linear in the input: a structure that never closes is
rescanned from inside at most `_MAX_RESTARTS` times.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Candidate", "find_candidates", "strip_fences"]

_SPECIAL = re.compile(r"[{}\[\]\"'\\/\u201c\u201d]")
_FENCE = re.compile(r"(?m)(`{3,}|~{3,})")
_LANG = re.compile(r"[A-Za-z0-9_+.\-]*")
_OPEN = {"{": "}", "[": "]"}
_CLOSERS = frozenset("}]")
_VALUE_START = frozenset("{[,:")
_BEFORE_COMMENT = frozenset(" \t\r\n,{}[]\"'")  # `//` after these opens a comment; `http://` no
_MAX_RESTARTS = 3
_MAX_RESTART_CHARS = 1_000_000  # past this, one scan only: keeps megabyte inputs sub-second
_MAX_CANDIDATES = 64


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


def find_candidates(text: str) -> list[Candidate]:
    """All candidates in reading order: fence bodies first, then bracketed spans."""
    out: list[Candidate] = []
    seen: set[str] = set()

    def add(candidate: Candidate) -> None:
        key = candidate.text.strip()
        if key and key not in seen and len(out) < _MAX_CANDIDATES:
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
    bodies = list(_fence_bodies(text))
    if len(bodies) == 1:
        return bodies[0][0].strip()
    return text.strip()


def _fence_bodies(text: str) -> list[tuple[str, int, bool]]:
    """(body, offset, closed) for each ``` or ~~~ fence, pairing fence markers in order."""
    bodies: list[tuple[str, int, bool]] = []
    pos = 0
    while len(bodies) < _MAX_CANDIDATES:
        opening = _FENCE.search(text, pos)
        if opening is None:
            break
        marker = opening.group(1)
        body_start = opening.end()
        lang = _LANG.match(text, body_start)
        if lang is not None and lang.end() < len(text) and text[lang.end()] in "\r\n":
            body_start = lang.end()
        closing = re.compile(re.escape(marker[0]) + "{" + str(len(marker)) + ",}")
        first = len(text) - len(text[body_start:].lstrip())  # a fence inside a fenced JSON
        quoted = _string_end(text, first) if text[first : first + 1] == '"' else -1  # string
        found = closing.search(text, max(body_start, quoted))  # is text, not the closer
        if found is None:
            bodies.append((text[body_start:], body_start, False))
            break
        bodies.append((text[body_start : found.start()], body_start, True))
        pos = found.end()
    return bodies


def _string_end(text: str, start: int) -> int:
    """The offset after the double-quoted string opening at `start` (-1: it never closes)."""
    i = start + 1
    while True:
        quote = text.find('"', i)
        if quote < 0:
            return -1
        backslashes = 0
        while text[quote - 1 - backslashes] == "\\":
            backslashes += 1
        if backslashes % 2 == 0:
            return quote + 1
        i = quote + 1


def _is_string(text: str) -> bool:
    """True when `text` is exactly one double-quoted string."""
    return text.startswith('"') and _string_end(text, 0) == len(text)


def _spans(text: str) -> list[Candidate]:
    """Balanced bracketed spans at the top level of `text`, in order."""
    spans: list[Candidate] = []
    pos = 0
    restarts = 0
    n = len(text)
    while pos < n and len(spans) < _MAX_CANDIDATES:
        start = _next_opener(text, pos)
        if start < 0:
            break
        end, string_start = _match(text, start)
        if end >= 0:
            spans.append(Candidate(text[start:end], start, fenced=False, complete=True))
            pos = end
            continue
        rel = None if string_start is None else string_start - start
        spans.append(Candidate(text[start:], start, fenced=False, complete=False, string_start=rel))
        if restarts >= _MAX_RESTARTS or n > _MAX_RESTART_CHARS:
            break
        # an unclosed opener may be prose ("use {braces"): look for complete spans inside it
        restarts += 1
        pos = start + 1
    return spans


def _next_opener(text: str, pos: int) -> int:
    brace = text.find("{", pos)
    bracket = text.find("[", pos)
    if brace < 0:
        return bracket
    if bracket < 0:
        return brace
    return min(brace, bracket)


def _match(text: str, start: int) -> tuple[int, int | None]:
    """End offset of the structure opened at `start` (-1 if it never closes) and, when it ends
    inside a string, that string's start offset."""
    stack: list[str] = []
    open_closers = {"}": 0, "]": 0}  # counts, so a stray closer costs O(1), not O(depth)
    comments: list[tuple[int, int]] = []  # (start, end) of each comment skipped, in order
    quote: str | None = None
    quote_start = 0
    skip_to = -1
    for match in _SPECIAL.finditer(text, start):
        i = match.start()
        if i < skip_to:
            continue
        char = match.group()
        if quote is not None:
            if char == "\\":
                skip_to = i + 2
            elif char == quote:
                quote = None
            continue
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
            quote, quote_start = '"', i
        elif char == "\u201c":
            quote, quote_start = "\u201d", i
        elif char == "'" and _in_value_position(text, i, comments):
            quote, quote_start = "'", i
        elif char == "/":
            end = _comment_end(text, i)
            if end is not None:
                comments.append((i, end))
                skip_to = end
    return -1, (quote_start if quote is not None else None)


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
