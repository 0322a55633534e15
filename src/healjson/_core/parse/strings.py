"""A string's text from what a reply wrote between its quotes: the one rule the tolerant reader
(`lenient`) and the stream reader share, so a string streamed is the string read whole.

- The escapes JSON knows are decoded (`\\n`, `\\t`, `\\"`, `\\/`, `\\\\`, and `\\uXXXX` with four
  hex digits). A high-surrogate escape followed by a low-surrogate one is one character
  (`\\ud83d\\ude00` is the emoji: what JSON specifies, and what `json.dumps` writes for any
  character outside the Basic Multilingual Plane). A surrogate escape without its other half
  is that code point alone, as Python's `json.loads` reads it (pydantic's reader refuses the
  whole reply; the tolerant reader recovers the rest of it, and the target's validation says
  what it makes of half a character).
- An escaped quote of any kind (`\\'`, `` \\` ``, `\\\u201d`) is that quote; an escape JSON does
  not know (`\\d`, `\\x41`, `\\u12`) is kept as written, its backslash included.
- Raw control characters (a line break, a tab) are kept as written.
- A raw line break (spaces around it aside) right before the closing quote is layout and is
  dropped, unless it is all the string holds (then it is the string's text: `"\\n"` written
  raw).

`open_string_text` reads a string still arriving (a stream's preview): no closing quote yet, so
no layout rule, and an escape cut short at the end (`\\`, `\\u00`, a high surrogate whose low
half has not arrived) is left out. Linear: each escape is a fixed-size step (content that is
valid JSON is read by `json.loads`, whose reading is the same).
"""

from __future__ import annotations

import json
from typing import Any, Final

from pydantic_core import ErrorDetails

__all__ = ["lone_surrogate", "open_string_text", "string_text"]

_ESCAPES: Final = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", "/": "/", "\\": "\\"}
_QUOTE_ESCAPES: Final = frozenset("\"'`\u201d\u2019")
_HEX: Final = frozenset("0123456789abcdefABCDEF")
_SPACE: Final = frozenset(" \t\r\n")


def string_text(raw: str) -> str:
    """The text of a closed string whose content between its quotes is `raw` (rules above)."""
    if "\\" in raw:
        try:  # content that is valid JSON (no raw control character, no unknown escape, no
            text: str = json.loads(f'"{raw}"')  # bare quote) reads the same, in C
        except ValueError:
            pass
        else:
            return text
    elif raw[-1:] not in _SPACE:  # no escape, no layout at the end: the text as written
        return raw
    parts = _decoded(raw, partial=False)
    tail = parts[-1]  # the raw text after the last escape
    if tail.rstrip(" \t").endswith(("\n", "\r")) and "".join(parts).strip():
        parts[-1] = tail.rstrip(" \t\r\n")
    return "".join(parts)


def open_string_text(raw: str) -> str:
    """The text of a string still arriving, `raw` so far (an escape cut short left out)."""
    return "".join(_decoded(raw, partial=True))


def _decoded(raw: str, *, partial: bool) -> list[str]:
    """The string's pieces: raw runs and decoded escapes, the last piece always a raw run."""
    parts: list[str] = []
    start, n = 0, len(raw)
    while True:
        at = raw.find("\\", start)
        if at < 0:
            parts.append(raw[start:])
            return parts
        parts.append(raw[start:at])
        if at + 1 >= n:  # a backslash at the very end
            parts.append("" if partial else "\\")
            return parts
        code = raw[at + 1]
        if code in _ESCAPES:
            parts.append(_ESCAPES[code])
            start = at + 2
        elif code == "u":
            point = _hex4(raw, at + 2)
            if point is None:
                if partial and _arriving(raw, at, n):
                    parts.append("")
                    return parts
                parts.append("\\u")  # not a unicode escape: kept as written
                start = at + 2
                continue
            if 0xD800 <= point <= 0xDBFF:
                low = _hex4(raw, at + 8) if raw.startswith("\\u", at + 6) else None
                if low is not None and 0xDC00 <= low <= 0xDFFF:
                    parts.append(chr(0x10000 + ((point - 0xD800) << 10) + (low - 0xDC00)))
                    start = at + 12
                    continue
                if partial and _arriving(raw, at + 6, n):
                    parts.append("")  # its low half may be arriving
                    return parts
            parts.append(chr(point))
            start = at + 6
        else:
            parts.append(code if code in _QUOTE_ESCAPES else "\\" + code)
            start = at + 2


def _hex4(raw: str, at: int) -> int | None:
    """The number four hex digits at `at` write, or None."""
    digits = raw[at : at + 4]
    if len(digits) != 4 or not all(char in _HEX for char in digits):
        return None
    return int(digits, 16)


def _arriving(raw: str, at: int, n: int) -> bool:
    """Whether `raw[at:]`, at the end, may be the start of a `\\uXXXX` escape still arriving."""
    rest = raw[at:n]
    return len(rest) < 6 and ("\\u"[: len(rest)] == rest[:2]) and all(c in _HEX for c in rest[2:])


def lone_surrogate(data: Any) -> ErrorDetails | None:
    """Where `data` (JSON data) holds a string with a lone surrogate (an escape such as
    `\\ud800` written without its pair: half of a character, which no JSON encoder writes), as
    the schema error a model can act on: the string's place, what it holds and where; None when
    no string holds one. Walked without recursion, keys included."""
    stack: list[tuple[tuple[str | int, ...], Any]] = [((), data)]
    while stack:
        loc, node = stack.pop()
        if isinstance(node, dict):
            for key, item in node.items():
                stack.append(((*loc, key), key))
                stack.append(((*loc, str(key)), item))
        elif isinstance(node, list):
            stack.extend(((*loc, index), item) for index, item in enumerate(node))
        elif isinstance(node, str):
            try:
                node.encode("utf-8")
            except UnicodeEncodeError as exc:
                code = ord(node[exc.start])
                return {
                    "type": "string_unicode",
                    "loc": loc,
                    "msg": f"Input should be text: it holds a lone surrogate escape "
                    f"(\\u{code:04x}) at character {exc.start}, half of a character; write the "
                    "character itself, or both escapes of its pair",
                    "input": node.encode("utf-8", "backslashreplace").decode("ascii", "replace"),
                }
    return None
