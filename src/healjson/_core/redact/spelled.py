"""Secrets a text holds in another spelling than their own: written with escapes (JSON's
`\\u0073k-...`, `\\/`, a lenient reader's `\\x73`), or cut short (a stream stopped inside one):
a secret's first 8 or more characters where the text ends, or where a string in it ends (a
quote follows, escaped or not: a rendering of data that holds a cut string) or a shortened
rendering cut it (`…` follows). Each such stretch is found by what it spells, and replaced by
the marker in the text as written; the rest of the text is kept as it is."""

from __future__ import annotations

import re
from bisect import bisect_right
from functools import lru_cache
from typing import Final

__all__ = ["SPELLING_ESCAPES", "cut_in", "cut_spans", "escaped_in", "unspelled"]

_MIN_CUT: Final = 8  # the shortest secret (`MIN_SECRET_CHARS`): a shorter end is no secret's
_QUOTES: Final = "\"'"  # what ends a string in a rendering (JSON, Python's repr)
_SHORTENED: Final = "\u2026"  # `…`: where a shortened rendering (`short_repr`) cut a text
_MAX_BACKSLASHES: Final = 8  # a quote escaped this many times over still ends a string
_SIMPLE: Final = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}


def unspelled(text: str, forms: tuple[str, ...], marker: str) -> str:
    """`text` with every secret form it spells with escapes, and every form cut short in it
    (`cut_spans`: a text or a string in it cut inside a secret), replaced by `marker`."""
    if not forms:
        return text
    spans: list[tuple[int, int]] = []
    if "\\" in text:
        spans += _escaped_spans(text, forms)
    spans += cut_spans(text, forms)
    if not spans:
        return text
    out: list[str] = []
    at = 0
    for start, end in sorted(spans):
        if end <= at:
            continue
        out += (text[at : max(start, at)], marker)
        at = end
    out.append(text[at:])
    return "".join(out)


def escaped_in(text: str, forms: tuple[str, ...]) -> bool:
    """True when `text` spells a secret form with escapes (`unspelled` would replace it)."""
    return "\\" in text and bool(_escaped_spans(text, forms))


def cut_in(text: str, forms: tuple[str, ...]) -> bool:
    """True when `text` holds a secret form cut short (`cut_spans` would find one)."""
    return bool(cut_spans(text, forms))


def cut_spans(text: str, forms: tuple[str, ...]) -> list[tuple[int, int]]:
    """The stretches of `text` that are a secret form cut short: a form's first 8 or more
    characters, not the whole form, where the text ends, where a string in it ends (a quote
    follows, escaped or not) or where a shortened rendering cut it (`…` follows). Linear: each
    place a form's first 8 characters occur is read once, as far as the form goes."""
    spans: list[tuple[int, int]] = []
    for head, group in _heads(forms):
        at = text.find(head)
        while at >= 0:
            size = _cut_size(text, at, group)
            if size:
                spans.append((at, at + size))
            at = text.find(head, at + (size or 1))
    return spans


def _cut_size(text: str, at: int, group: tuple[str, ...]) -> int:
    """How many characters at `at` (where the forms of `group` begin) are a form cut short:
    the longest beginning of one of them there, when a cut follows it (`cut_spans`); 0 for
    none, or when a whole form is there (the plain redactor's)."""
    best = 0
    for form in group:
        size, most = _MIN_CUT, min(len(form), len(text) - at)
        while size < most and text[at + size] == form[size]:
            size += 1
        if size == len(form):
            return 0
        best = max(best, size)
    end = at + best
    if end == len(text):
        return best
    follows = text[end]
    if follows == "\\":  # an escaped quote: a string's end in a rendering of a rendering
        follows = text[end : end + _MAX_BACKSLASHES + 1].lstrip("\\")[:1] or "\\"
        return best if follows in _QUOTES else 0
    return best if follows in _QUOTES or follows == _SHORTENED else 0


@lru_cache(maxsize=64)
def _heads(forms: tuple[str, ...]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The forms longer than 8 characters grouped by their first 8 (what any beginning of
    them long enough to be a secret's starts with)."""
    groups: dict[str, list[str]] = {}
    for form in forms:
        if len(form) > _MIN_CUT:
            groups.setdefault(form[:_MIN_CUT], []).append(form)
    return tuple((head, tuple(group)) for head, group in groups.items())


def _escaped_spans(text: str, forms: tuple[str, ...]) -> list[tuple[int, int]]:
    """The stretches of `text` (as written) that spell a secret form once their escapes are
    read, where an escape that can spell any character is in them."""
    if not any(escape in text for escape in SPELLING_ESCAPES):
        return []  # `\n`, `\"`, `\\`: the escaped forms the plain redactor knows already
    decoded, pieces = _decoded(text)
    spans = []
    for form in forms:
        found = decoded.find(form)
        while found >= 0:
            start, end = _raw_at(pieces, found), _raw_at(pieces, found + len(form))
            if text[start:end] != form:  # the plain spelling is the plain redactor's
                spans.append((start, end))
            found = decoded.find(form, found + 1)
    return spans


SPELLING_ESCAPES: Final = ("\\u", "\\U", "\\x", "\\/")
"""The escapes that can spell any character (JSON's `\\uXXXX` and `\\/`, a lenient reader's
`\\x41`, `\\U0001F600`): the others spell what a form's own JSON escaping already covers."""
_ESCAPE: Final = re.compile(
    r"\\(?:u[0-9a-fA-F]{4}(?:\\u[0-9a-fA-F]{4})?|U[0-9a-fA-F]{8}|x[0-9a-fA-F]{2}|[\"\\/bfnrt])"
)
_Pieces = tuple[list[int], list[int], int]  # decoded offsets, written offsets, written length


def _decoded(text: str) -> tuple[str, _Pieces]:
    """`text` with its escapes read (one that reads as no character is kept as written), and
    where each piece of it starts, read and as written: one piece per escape, one per run of
    plain text between them (linear in the escapes, not the characters)."""
    out: list[str] = []
    read: list[int] = []
    written: list[int] = []
    at = length = 0
    for match in _ESCAPE.finditer(text):
        if match.start() > at:  # the plain run before it
            read.append(length)
            written.append(at)
            out.append(text[at : match.start()])
            length += match.start() - at
        char = _read_escape(match.group())
        if char is None:
            continue  # kept as written: the plain run after it takes it
        read.append(length)
        written.append(match.start())
        out.append(char)
        length += len(char)
        at = match.end()
    read.append(length)
    written.append(at)
    out.append(text[at:])
    return "".join(out), (read, written, len(text))


def _read_escape(escape: str) -> str | None:
    """The character one escape spells, None for none (a lone surrogate, past U+10FFFF)."""
    kind = escape[1]
    if kind in _SIMPLE:
        return _SIMPLE[kind]
    code = int(escape[2:6] if kind == "u" else escape[2:], 16)
    if kind == "u" and len(escape) == 12:  # two `\\u` escapes: a surrogate pair, or two
        low = int(escape[8:], 16)
        if 0xD800 <= code < 0xDC00 and 0xDC00 <= low < 0xE000:
            return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00))
        first, second = _one(code), _one(low)
        return None if first is None or second is None else first + second
    return _one(code)


def _one(code: int) -> str | None:
    return None if 0xD800 <= code < 0xE000 or code > 0x10FFFF else chr(code)


def _raw_at(pieces: _Pieces, offset: int) -> int:
    """Where the character at `offset` of the decoded text starts as written (its length: the
    end); inside an escape's characters, where the escape starts."""
    read, written, size = pieces
    index = bisect_right(read, offset) - 1
    if index < 0:
        return 0
    if (
        index + 1 < len(read)
        and written[index + 1] - written[index] != read[index + 1] - read[index]
    ):
        return written[index]  # an escape: its characters start where it does
    return min(written[index] + offset - read[index], size)
