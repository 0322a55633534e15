"""A tolerant JSON reader for one candidate: the slips models make, read in linear time.

Only reached when the strict Rust parser has already said no, so its cost never touches the
happy path. It reads what JSON, Python and JavaScript writers produce by mistake:

- strings in double, single, curly, triple (`\"\"\"…\"\"\"`) or backtick quotes; raw control
  characters inside them; `\\'` and other stray escapes (a string's text is read by
  `strings.py`, the rule the stream reader shares: a surrogate pair's two escapes are one
  character); a quote inside a string that the model forgot to escape
  (a quote closes a string only when what follows it is a comma, colon, closing bracket,
  another quote, a line break or the end);
- unquoted keys (`{name: "x"}`), and unquoted values (*bare tokens*: up to the next comma,
  bracket, quote, comment or line break; spaces do not end one) read by one rule
  (`tokens.py`): a bare token is a value only when the whole token is one — a literal spelled
  whole (`true`, `None`, `undefined`, `NaN`: any case), a number as JSON, Python or
  JavaScript writes it (`-1.5e3`, `.25`, `82_461_110`), or a word (`{"city": New York}`:
  the string `New York`) that no value could have been meant by. Punctuation (`-`, `.`, `$`),
  malformed or grouped numbers (`1.`, `1e`, `1..2`, `007`, `12 345`), literals cut short
  (`tru`, `nul`), values side by side on one line (`1 2 3`) or fused with punctuation (`1:`,
  `true.`) are no value: the candidate is given up, wherever the token stands (alone in
  brackets, beside a comma, in an object);
- missing commas between values whose ends are plain (a closing quote or bracket, a line
  break: `[1\n2\n3]` is three numbers, `[1 2 3]` one token that is none), trailing commas,
  `//`, `/* */` and `#` comments (a `#` followed by a space, a tab, another `#` or the line's
  end: `#python` and `#ff0000` are words a value may be, read by the bare-token rule, never
  dropped), a closing bracket that also closes the containers still open inside it (when they
  hold something: `[{]` is a stray `{`, not `[{}]`).

**Never invent.** Every key and every scalar of the result is a token of the text; what is
dropped is only punctuation and comments. Anything the reader cannot account for that way — a
bare token that is no value (above), a key without a colon or without a value (`{"a": }`), a
value where a key belongs (`["k": 1]`), an ellipsis standing for elided items (`[1, 2, ...]`),
text after the value — makes it give up (`NOTHING`): healjson then asks the model again rather
than guess. A span with no quote, no
`key:`, no comma and no comment is prose in brackets (`[this page]`, `{name}`, `[^2]`), not
JSON, and is not read at all.

The last resort, json-repair, is super-linear (36 KB of unquoted values took 10 s; 1 KB of
prose in brackets 0.12 s), so it only sees candidates up to `MAX_JSON_REPAIR_CHARS`, at most
`JSON_REPAIR_CHARS_PER_REPLY` per reply, and its reading is kept only when `grounded`: every
bare token it read is one by the same rule, so it never keeps what this reader refuses.

`partial=True` reads a structure cut off at the end (the partial data of a truncated reply,
never a result): containers still open are closed, and a string, key or bare token touching the
cut is left out (it may itself be cut).

**Linear time.** One left-to-right pass; regexes only jump to the next character that matters
and are possessive; the look-ahead after a quote inside a string skips spaces only, so every
character is examined a bounded number of times. (json-repair, which this replaces, is pure
Python and super-linear; it stays only as the bounded last resort described above.)
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final

from healjson._core.sentinels import NOTHING

from .meter import charge
from .strings import string_text
from .tokens import REFUSED, bare_value, is_number_or_literal

__all__ = [
    "MAX_DEPTH",
    "MAX_JSON_REPAIR_CHARS",
    "MAX_REPAIR_CHARS",
    "RepairBudget",
    "grounded",
    "lenient_loads",
    "partial_loads",
]

MAX_REPAIR_CHARS: Final = 1_000_000
"""Candidates above this size are not read leniently at all."""
MAX_DEPTH: Final = 500
"""Deeper nesting than this is given up on (explicit stack: no recursion limit involved)."""
MAX_JSON_REPAIR_CHARS: Final = 512
"""json-repair, the last resort, only sees candidates up to this size..."""
JSON_REPAIR_CHARS_PER_REPLY: Final = 1_024
"""...and at most this many characters per reply (it is super-linear: ~0.04 s for the worst
512-character input we found, so a reply spends at most ~0.1 s there)."""

_QUOTES: Final = {'"': '"', "'": "'", "\u201c": "\u201d", "\u2018": "\u2019", "`": "`"}
_SPACE: Final = re.compile(r"[ \t\r\n]*+")
_INLINE_SPACE: Final = re.compile(r"[ \t]*+")
_BLOCK_END: Final = re.compile(r"\*/")
# up to a delimiter, a quote or a comment (`/` alone is text: `1/3`, `a/b`; `#` is text unless
# it opens a comment as `_hash_comment` says: after a space or tab, before one, `#` or the end)
_BARE_VALUE: Final = re.compile(
    r"(?:[^,{}\[\]\n\"\u201c/#]++|/(?![/*])|(?<![ \t])#|#(?![ \t\r\n#]|\Z))*+"
)
_BARE_KEY: Final = re.compile(r"(?:[^:,{}\[\]\n\"'\u201c\u2018/]++|/(?![/*]))*+")
_BRACKETS: Final = re.compile(r"[{}\[\]]")
_ELLIPSIS: Final = re.compile(r"(?:\.{2,}|\u2026)")
# a span worth reading: it holds a quote, a `key:`, a comma or a comment (`[this page]`,
# `{name}` and `[^2]` are prose in brackets)
_JSON_LOOKING: Final = re.compile(r"[\"'\u201c\u2018`,]|[{,]\s*+[\w$]++\s*+:|//|/\*")
_CLOSES_AFTER: Final = frozenset(",:}]\n") | frozenset(_QUOTES)
_COMMENTS: Final = ("//", "/*")
_NEXT_KEY: Final = re.compile(r'"[^"\\\n]{1,100}+"[ \t]*+:')


class _GiveUp(Exception):
    """The text cannot be read without inventing or dropping the model's words."""


class RepairBudget:
    """How many characters json-repair may still see while one reply is read."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = JSON_REPAIR_CHARS_PER_REPLY


def lenient_loads(text: str, budget: RepairBudget | None = None) -> Any:
    """The value of a complete candidate read tolerantly, or `NOTHING`. When the tolerant
    reader gives up, json-repair gets a small candidate (within `budget`), and its reading is
    kept only if it is `grounded`."""
    if len(text) > MAX_REPAIR_CHARS or _prose_in_brackets(text):
        return NOTHING
    charge(len(text))
    try:
        return _Reader(text, partial=False).read()
    except _GiveUp:
        pass
    if budget is None or len(text) > min(MAX_JSON_REPAIR_CHARS, budget.left):
        return NOTHING
    budget.left -= len(text)
    value = _json_repair(text)
    if value is NOTHING or not grounded(value, text.strip()):
        return NOTHING
    return value


def _json_repair(text: str) -> Any:
    try:
        import json_repair

        value = json_repair.repair_json(text, return_objects=True, skip_json_loads=True)
    except Exception:  # json-repair raises ValueError on deep nesting; any failure means "no"
        return NOTHING
    if value == "" and text.strip() not in ('""', "''"):
        return NOTHING
    try:  # a surrogate (a pair's escapes read as two halves, not one character): refused
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (UnicodeEncodeError, ValueError, TypeError):
        return NOTHING
    return value


def grounded(value: Any, text: str) -> bool:
    """True when `value` accounts for `text` exactly: every key and scalar is written there, in
    reading order (a bare one as a whole token that reads as it: `tokens.py`), and what lies
    between them is only punctuation (brackets, commas, colons, quotes, whitespace, comments)
    that writes the value's structure: a bracket opened per container, an empty one written
    with its closer (`[]`, `[,]`), a colon per key. A repair that filled a gap (a scalar not in
    the text), dropped the model's words (prose read as structure: `[^2]` as `[2]`), made up or
    dropped a container (`[{]` as `[]` or `[{}]`, `["k": 1]` as `[{"k": 1}]`) or dropped a
    colon (`{"a": :1}`, `[1:, 2]`) is not grounded."""
    charge(len(text))
    cursor = 0
    wanted = _Marks()  # what the value's structure writes
    written = _Marks()  # what the text's punctuation writes
    stack: list[Any] = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict | list):
            wanted.openers += 1
            wanted.empty += not node
        if isinstance(node, dict):
            wanted.colons += len(node)
            for key, item in reversed(list(node.items())):
                stack.append(item)
                stack.append(_Key(key))
            continue
        if isinstance(node, list):
            stack.extend(reversed(node))
            continue
        found = _next_leaf(text, cursor, node)
        if found is None:
            return False
        start, end = found
        written.count(text, cursor, start)
        cursor = end
    if _PUNCTUATION.match(text, cursor).end() != len(text):  # type: ignore[union-attr]
        return False
    written.count(text, cursor, len(text))
    return (wanted.openers, wanted.colons) == (written.openers, written.colons) and (
        wanted.empty <= written.empty
    )


class _Marks:
    """Openers (`{`, `[`), colons and empty containers (`[]`, `{}`), counted."""

    __slots__ = ("colons", "empty", "openers")

    def __init__(self) -> None:
        self.openers = self.colons = self.empty = 0

    def count(self, text: str, start: int, end: int) -> None:
        """Add those the punctuation in `text[start:end]` writes (comments looked through)."""
        i, last = start, ""
        while i < end:
            if text.startswith("//", i):
                newline = text.find("\n", i, end)
                i = end if newline < 0 else newline
            elif text.startswith("/*", i):
                close = text.find("*/", i + 2, end)
                i = end if close < 0 else close + 2
            else:
                char = text[i]
                self.openers += char in "{["
                self.colons += char == ":"
                self.empty += (last, char) in (("[", "]"), ("{", "}"))
                last = last if char in " \t\r\n," else char  # `[,]` is `[]`, a comma dropped
                i += 1


class _Key:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name


# what may lie between the keys and values of a repaired value: JSON punctuation, any quote
# the model may have used, whitespace and comments (possessive: linear, never backtracks)
_PUNCTUATION: Final = re.compile(
    r"""(?:[\s{}\[\](),:"'`\u201c\u201d\u2018\u2019]++|//[^\n]*+|/\*(?:[^*]++|\*(?!/))*+(?:\*/)?)*+"""
)
_BOUNDARY: Final = frozenset(" \t\r\n,:{}[]")


def _next_leaf(text: str, cursor: int, leaf: Any) -> tuple[int, int] | None:
    """Where `leaf` (a scalar or a `_Key`) is written after only punctuation from `cursor`
    (its start and the offset just past it), else None. A quoted string is found as written
    (or escaped); any other leaf must be a whole bare token that reads as it (`tokens.py`), as
    the tolerant reader reads it: a string or number cut out of a longer token is not there."""
    content = _PUNCTUATION.match(text, cursor).end()  # type: ignore[union-attr]
    as_key = isinstance(leaf, _Key)
    scalar = leaf.name if isinstance(leaf, _Key) else leaf
    for start in _starts(text, cursor, content):
        if isinstance(scalar, str):
            if not scalar:
                if text.startswith(('""', "''"), start):
                    return start, start + 2
                continue
            if start > 0 and text[start - 1] in _QUOTES:
                for form in _forms(scalar):
                    if text.startswith(form, start):
                        return start, start + len(form)
                continue
        if start > 0 and text[start - 1] not in _BOUNDARY and not text.startswith("*/", start - 2):
            continue  # not where a bare token begins
        end = (_BARE_KEY if as_key else _BARE_VALUE).match(text, start).end()  # type: ignore[union-attr]
        token = text[start:end].rstrip()
        if token and token[0] not in " \t" and _reads_as(token, scalar, as_key=as_key):
            return start, start + len(token)
    return None


def _reads_as(token: str, scalar: Any, *, as_key: bool) -> bool:
    """Whether a bare token is `scalar`: a key as written, a value by the bare-token rule."""
    if as_key:
        return bool(token == scalar)
    value = bare_value(token)
    if value is REFUSED or isinstance(value, bool) != isinstance(scalar, bool):
        return False
    if isinstance(value, str) != isinstance(scalar, str) or value is None or scalar is None:
        return value is scalar
    if isinstance(value, float) and math.isnan(value):
        return isinstance(scalar, float) and math.isnan(scalar)
    return bool(value == scalar)


def _starts(text: str, cursor: int, content: int) -> list[int]:
    """Where a leaf may begin in the punctuation between `cursor` and `content`: anywhere but
    inside a comment (a comment's first character may still begin a quoted leaf: `"//x"`)."""
    out: list[int] = []
    i = cursor
    while i <= content:
        out.append(i)
        if text.startswith("//", i):
            end = text.find("\n", i)
            i = content if end < 0 or end > content else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2, content)
            i = content if end < 0 else end + 2
        else:
            i += 1
    return out


def _forms(scalar: str) -> list[str]:
    """How a non-empty string may be written between quotes: as is, or JSON-escaped."""
    escaped = json.dumps(scalar, ensure_ascii=False)[1:-1]
    return list(dict.fromkeys((scalar, escaped, json.dumps(scalar)[1:-1])))


def partial_loads(text: str) -> Any:
    """Best-effort data from a structure cut off at the end (only ever `partial`), or
    `NOTHING`."""
    if len(text) > MAX_REPAIR_CHARS:
        return NOTHING
    charge(len(text))
    try:
        return _Reader(text, partial=True).read()
    except _GiveUp:
        return NOTHING


class _Frame:
    """One open container: its value, and for an object the key waiting for its value."""

    __slots__ = ("closer", "key", "value", "wants")

    def __init__(self, value: dict[str, Any] | list[Any]) -> None:
        self.value = value
        self.closer = "}" if isinstance(value, dict) else "]"
        self.key: str | None = None
        self.wants = "key" if isinstance(value, dict) else "value"  # key, colon or value


class _Reader:
    def __init__(self, text: str, *, partial: bool) -> None:
        self.text = text
        self.n = len(text)
        self.partial = partial
        self.stack: list[_Frame] = []
        self.root: Any = NOTHING

    # -- the pass -------------------------------------------------------------------------------

    def read(self) -> Any:
        text, pos = self.text, self._skip(0)
        while pos < self.n:
            if self.root is not NOTHING:
                raise _GiveUp  # text after the value: not ours to drop
            char = text[pos]
            frame = self.stack[-1] if self.stack else None
            if char in "}]":
                pos = self._close(char, pos)
            elif char == ",":
                if frame is None or (frame.wants in ("colon", "value") and frame.key is not None):
                    raise _GiveUp  # a key with no value: filling it would invent one
                pos += 1
            elif char == ":":
                if frame is None or frame.wants != "colon":
                    raise _GiveUp
                frame.wants = "value"
                pos += 1
            elif char in "{[":
                if len(self.stack) >= MAX_DEPTH:
                    raise _GiveUp
                self._expect_value(frame)
                self.stack.append(_Frame({} if char == "{" else []))
                pos += 1
            elif char in _QUOTES:
                value, pos, complete = self._string(pos)
                if not complete:
                    break  # cut inside a string (partial mode): it is left out
                self._put(value, frame, quoted=True)
            else:
                pos = self._bare(pos, frame)
            pos = self._skip(pos)
        return self._finish()

    def _finish(self) -> Any:
        if not self.stack:
            if self.root is NOTHING:
                raise _GiveUp
            return self.root
        if not self.partial:
            raise _GiveUp  # still open: truncated, not ours to close
        while self.stack:  # partial data: close what is open, drop a dangling key
            frame = self.stack.pop()
            self._put_closed(frame.value)
        return self.root

    # -- structure ------------------------------------------------------------------------------

    def _close(self, char: str, pos: int) -> int:
        if not any(frame.closer == char for frame in self.stack):
            if not self.stack:
                raise _GiveUp
            return pos + 1  # a stray closer with nothing to close: punctuation, dropped
        while True:
            frame = self.stack.pop()
            if frame.key is not None or (frame.wants == "value" and isinstance(frame.value, dict)):
                raise _GiveUp  # `{"a": }`: a key with no value
            if frame.closer != char and not frame.value:
                raise _GiveUp  # `[{]`: an opener with nothing after it is a stray, not `{}`
            self._put_closed(frame.value)
            if frame.closer == char:
                return pos + 1
            # a missing closer: the inner container ends where its parent does

    def _put_closed(self, value: Any) -> None:
        frame = self.stack[-1] if self.stack else None
        if frame is None:
            self.root = value
        elif isinstance(frame.value, list):
            frame.value.append(value)
        elif frame.key is not None:
            frame.value[frame.key] = value
            frame.key, frame.wants = None, "key"
        else:
            raise _GiveUp

    def _expect_value(self, frame: _Frame | None) -> None:
        if frame is not None and isinstance(frame.value, dict) and frame.wants != "value":
            raise _GiveUp  # a container where a key belongs (`{[1]: 2}`)

    def _put(self, value: Any, frame: _Frame | None, *, quoted: bool) -> None:
        if frame is None:
            self.root = value
            return
        if isinstance(frame.value, list):
            frame.value.append(value)
            return
        if frame.wants == "key":
            if not isinstance(value, str):
                raise _GiveUp
            frame.key, frame.wants = value, "colon"
            return
        if frame.wants == "colon":
            raise _GiveUp  # `{"a" "b"}`: two keys, or a key without its colon
        assert frame.key is not None
        frame.value[frame.key] = value
        frame.key, frame.wants = None, "key"

    # -- tokens ---------------------------------------------------------------------------------

    def _skip(self, pos: int) -> int:
        """Past whitespace and comments."""
        text, n = self.text, self.n
        while True:
            pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]
            if pos >= n:
                return pos
            if text.startswith("//", pos):
                newline = text.find("\n", pos)
                pos = n if newline < 0 else newline
            elif text.startswith("/*", pos):
                end = _BLOCK_END.search(text, pos + 2)
                pos = n if end is None else end.end()
            elif text[pos] == "#" and _hash_comment(text, pos):
                newline = text.find("\n", pos)
                pos = n if newline < 0 else newline
            else:
                return pos

    def _string(self, pos: int) -> tuple[str, int, bool]:
        """The string opened at `pos`: (value, end, complete). This finds where it closes; its
        text is read by `strings.string_text`, as the stream reader reads it."""
        text = self.text
        opener = text[pos]
        if text.startswith(opener * 3, pos) and opener in "\"'":
            close = text.find(opener * 3, pos + 3)
            if close < 0:
                return self._cut_string()
            return text[pos + 3 : close], close + 3, True
        closer = _QUOTES[opener]
        special = re.compile(re.escape(closer) + r"|\\")
        start = pos + 1
        while True:
            found = special.search(text, start)
            if found is None:
                return self._cut_string()
            at = found.start()
            if text[at] == "\\":
                if at + 1 >= self.n:
                    return self._cut_string()
                start = at + 2  # an escape: what it writes is `string_text`'s to read
                continue
            after = _INLINE_SPACE.match(text, at + 1).end()  # type: ignore[union-attr]
            if (
                after >= self.n
                or text[after] in _CLOSES_AFTER
                or text.startswith(_COMMENTS, after)
                or (text[after] == "#" and _hash_comment(text, after))
            ):  # what follows closes the string: its quote is its end (`","` is a key too)
                return string_text(text[pos + 1 : at]), at + 1, True
            comma = _comma_before(text, start, at)
            if opener == '"' and comma >= 0 and _NEXT_KEY.match(text, at):
                # `"New York, "gender": "male"`: a quoted key after a comma means this string's
                # closing quote was forgotten before the comma
                return string_text(text[pos + 1 : comma]).rstrip(), comma, True
            start = at + 1  # a quote the model forgot to escape: part of the text

    def _cut_string(self) -> tuple[str, int, bool]:
        if not self.partial:
            raise _GiveUp
        return "", self.n, False

    def _bare(self, pos: int, frame: _Frame | None) -> int:
        """An unquoted key, number, literal or string value."""
        text = self.text
        as_key = frame is not None and isinstance(frame.value, dict) and frame.wants == "key"
        pattern = _BARE_KEY if as_key else _BARE_VALUE
        end = pattern.match(text, pos).end()  # type: ignore[union-attr]
        token = text[pos:end].strip()
        if end >= self.n and self.partial:
            return end  # touching the cut: it may itself be cut
        if not token or _ELLIPSIS.fullmatch(token):
            raise _GiveUp  # a character no reading accounts for, or `...` for elided items
        scalar = token if as_key else bare_value(token)
        if scalar is REFUSED:
            raise _GiveUp  # no value as a whole (`tokens.py`): not ours to guess which
        if frame is None and isinstance(scalar, str):
            raise _GiveUp  # an unquoted word on its own is prose, not a JSON value
        self._put(scalar, frame, quoted=False)
        if not as_key and text.startswith('"', end):
            after = _INLINE_SPACE.match(text, end + 1).end()  # type: ignore[union-attr]
            if after >= self.n or text[after] in ",}]\n":
                return end + 1  # `abcdef",`: a stray closing quote after a bare value
        return end


def _prose_in_brackets(text: str) -> bool:
    """`[this page]`, `{name}`, `[^2]`: no quote, no `key:`, no comma, no comment, and what the
    brackets hold is no number or literal (`[None]` is Python for `[null]`)."""
    if _JSON_LOOKING.search(text):
        return False
    words = _BRACKETS.sub(" ", text).split()
    return any(not is_number_or_literal(word) for word in words)


def _hash_comment(text: str, pos: int) -> bool:
    """Whether the `#` at `pos` opens a comment: one written as YAML and Python comments are (a
    space, a tab, another `#` or the line's end after it), where a comment may stand (the
    text's start, or after a space, a comma or an opener). `#python`, `#ff0000` are words a
    value may be (a hashtag, a colour), read by the bare-token rule, never dropped."""
    if pos > 0 and text[pos - 1] not in "\n\r \t,{[":
        return False
    follower = text[pos + 1 : pos + 2]
    return follower in ("", " ", "\t", "\r", "\n", "#")


def _comma_before(text: str, start: int, at: int) -> int:
    """The offset of a comma that only spaces separate from `at` (within `start:at`), or -1."""
    j = at - 1
    while j >= start and text[j] in " \t":
        j -= 1
    return j if j >= start and text[j] == "," else -1
