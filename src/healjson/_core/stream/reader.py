"""An incremental reader of one JSON value that arrives in pieces (a model's streamed answer).

`JsonStream.feed(text)` advances a small state machine over the new characters only; nothing
already read is scanned again. The value is built as it arrives: containers are created when
they open and filled as their members complete. `snapshot()` returns the value read so far:
complete members are shared with the live value (a member is never changed once complete), and
only the containers still open — the path from the root to the member being read — are copied.

Per-chunk cost: O(len(chunk)) to scan (strings are skipped with `str.find`, not per character),
plus O(size of the open containers) for a snapshot; decoding a string costs O(its length) once
when it closes. A partial string at the tip is included in a snapshot (as far as it can be
decoded); the caller decides how often to take snapshots (`StreamSession` bounds the cost of a
long growing string).

A string's text is read as L1's tolerant reader reads it (`parse.strings`: escapes, a surrogate
pair as one character, raw control characters kept, a layout line break before the closing
quote dropped), so a member complete early is the member of the final value.

What this reader does not do is heal: text before the value (prose, a code fence, a `<think>`
block) is skipped, the first `{` or `[` outside a think block starts the value, and anything
after the value is ignored. A syntax error drops the value read so far and looks for a new
start after it (prose with brackets in it). The whole text always goes to L1 at the end of the
stream, which decides what the answer is; the snapshots are a preview.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final

from healjson._core.parse.strings import open_string_text, string_text

__all__ = ["JsonStream"]

# what a frame expects next
_KEY: Final = 0  # a key (or `}`)
_COLON: Final = 1
_VALUE: Final = 2  # a value (or `]` in a list)
_COMMA: Final = 3  # `,` or the closing bracket

_WHITESPACE: Final = frozenset(" \t\r\n")
_NUMBER_CHARS: Final = frozenset("0123456789+-.eE")
_LITERALS: Final = {"true": True, "false": False, "null": None}
_STRING_STOP: Final = re.compile(r'["\\]')
_THINK_OPEN: Final = "<think>"
_THINK_CLOSE: Final = "</think>"


class _Frame:
    """One open container: the container, the key being filled (objects), what comes next."""

    __slots__ = ("container", "expect", "key")

    def __init__(self, container: dict[str, Any] | list[Any]) -> None:
        self.container = container
        self.key: str | None = None
        self.expect = _KEY if type(container) is dict else _VALUE


class JsonStream:
    """Reads one JSON object or array from text fed in pieces; see the module docstring."""

    __slots__ = (
        "_in_think",
        "_lookback",
        "_number",
        "_open_members",
        "_stack",
        "_string",
        "_string_chars",
        "_string_escape",
        "_string_is_key",
        "completed",
        "completed_inner",
        "done",
        "inner",
        "root",
        "starts",
        "version",
    )

    def __init__(self) -> None:
        self._stack: list[_Frame] = []
        self._open_members = 0  # members of the open containers, kept as they change
        self._string: list[str] | None = None  # the raw (undecoded) pieces of an open string
        self._string_is_key = False
        self._string_escape = False  # the last piece ended inside an escape (`\`)
        self._string_chars = 0  # raw characters of the open string so far
        self._number: list[str] | None = None  # an open number or literal
        self._in_think = False
        self._lookback = ""  # the tail of the text before the value (tags split across pieces)
        self.root: dict[str, Any] | list[Any] | None = None
        self.done = False
        """True once the root value has closed."""
        self.version = 0
        """Counts changes to the data read so far (a container opened or closed, a member put
        in, the value dropped): a new version means a new snapshot."""
        self.starts = 0
        """How many times a value started (more than one: prose with brackets came first)."""
        self.completed: list[str | int] = []
        """Keys (object root) or indexes (array root) of root members completed since the caller
        last cleared this list."""
        self.inner: str | None = None
        """Set by the caller: the key of an object root whose array's items are noted too (an
        envelope's, `{"value": [...]}`), in `completed_inner`."""
        self.completed_inner: list[int] = []
        """Indexes of that array's items completed since the caller last cleared this list."""

    # -- feeding ---------------------------------------------------------------------------------

    def feed(self, text: str) -> None:
        """Read `text`, the next piece of the answer."""
        index, end = 0, len(text)
        while index < end and not self.done:
            if self.root is None:
                index = self._seek(text, index)
            elif self._string is not None:
                index = self._read_string(text, index)
            else:
                index = self._step(text, index)

    def _seek(self, text: str, index: int) -> int:
        """Skip text before the value: prose, fences and `<think>` blocks."""
        window = self._lookback + text[index:]
        offset = len(self._lookback)
        position = 0
        while True:
            if self._in_think:
                close = window.find(_THINK_CLOSE, position)
                if close < 0:
                    self._lookback = window[-(len(_THINK_CLOSE) - 1) :]
                    return len(text)
                self._in_think = False
                position = close + len(_THINK_CLOSE)
                continue
            brace, bracket = window.find("{", position), window.find("[", position)
            think = window.find(_THINK_OPEN, position)
            starts = [found for found in (brace, bracket) if found >= 0]
            start = min(starts) if starts else -1
            if think >= 0 and (start < 0 or think < start):
                self._in_think = True
                position = think + len(_THINK_OPEN)
                continue
            if start < 0:
                self._lookback = window[-(len(_THINK_OPEN) - 1) :]
                return len(text)
            self._lookback = ""
            self._open(window[start])
            self.starts += 1
            return index + (start - offset) + 1

    def _open(self, bracket: str) -> None:
        self.version += 1
        container: dict[str, Any] | list[Any] = {} if bracket == "{" else []
        if self.root is None:
            self.root = container
        else:
            self._attach(container)
        self._stack.append(_Frame(container))

    def _attach(self, value: Any) -> None:
        """Put a value into the innermost open container (a container is put in when it opens)."""
        self.version += 1
        frame = self._stack[-1]
        container = frame.container
        if type(container) is dict:
            key = frame.key
            assert key is not None  # a value in an object always follows its key and colon
            if key not in container:  # a repeated key replaces its value: no member more
                self._open_members += 1
            container[key] = value
        else:
            container.append(value)  # type: ignore[union-attr]
            self._open_members += 1
        frame.expect = _COMMA

    def _member_done(self, frame: _Frame) -> None:
        """A member of `frame` is complete: note it when `frame` is the root, or the array the
        root holds under `inner`."""
        depth = len(self._stack)
        if depth == 1:
            container = frame.container
            if type(container) is dict:
                assert frame.key is not None
                self.completed.append(frame.key)
            else:
                self.completed.append(len(container) - 1)
        elif (
            depth == 2
            and self.inner is not None
            and type(frame.container) is list
            and self._stack[0].key == self.inner
            and type(self._stack[0].container) is dict
        ):
            self.completed_inner.append(len(frame.container) - 1)

    def _step(self, text: str, index: int) -> int:
        """One structural character (or a run of number/literal characters)."""
        char = text[index]
        if self._number is not None:
            if char in _NUMBER_CHARS or char.isalpha():
                self._number.append(char)
                return index + 1
            if not self._close_number():
                return self._broken(index)
        if char in _WHITESPACE:
            return index + 1
        frame = self._stack[-1]
        expect = frame.expect
        if expect == _VALUE:
            if char == '"':
                self._string, self._string_is_key, self._string_escape = [], False, False
                self._string_chars = 0
            elif char in "{[":
                self._open(char)
            elif char == "]" and type(frame.container) is list:
                self._close()
            elif char in "-0123456789tfn":
                self._number = [char]
            else:
                return self._broken(index)
        elif expect == _COMMA:
            if char == ",":
                frame.expect = _KEY if type(frame.container) is dict else _VALUE
            elif char == ("}" if type(frame.container) is dict else "]"):
                self._close()
            else:
                return self._broken(index)
        elif expect == _KEY:
            if char == '"':
                self._string, self._string_is_key, self._string_escape = [], True, False
            elif char == "}":
                self._close()
            else:
                return self._broken(index)
        elif char == ":":  # _COLON
            frame.expect = _VALUE
        else:
            return self._broken(index)
        return index + 1

    def _read_string(self, text: str, index: int) -> int:
        pieces = self._string
        assert pieces is not None
        start = index
        try:
            return self._scan_string(pieces, text, index)
        finally:
            self._string_chars += len(text) - start if self._string is not None else 0

    def _scan_string(self, pieces: list[str], text: str, index: int) -> int:
        if self._string_escape:  # the character after a backslash split across pieces
            pieces.append(text[index])
            self._string_escape = False
            index += 1
        while True:
            found = _STRING_STOP.search(text, index)
            if found is None:
                pieces.append(text[index:])
                return len(text)
            stop = found.start()
            if text[stop] == "\\":
                if stop + 1 >= len(text):
                    pieces.append(text[index:])
                    self._string_escape = True
                    return len(text)
                pieces.append(text[index : stop + 2])
                index = stop + 2
                continue
            pieces.append(text[index:stop])
            self._close_string("".join(pieces))
            return stop + 1

    def _close_string(self, raw: str) -> None:
        """Put the string that closed in: its text read as L1 reads it (`string_text`: escapes,
        raw control characters, a surrogate pair), so a member handed out early is the member
        of the final value."""
        self._string = None
        value = string_text(raw)
        frame = self._stack[-1]
        if self._string_is_key:
            frame.key = value
            frame.expect = _COLON
        else:
            self._attach(value)
            self._member_done(frame)

    def _close_number(self) -> bool:
        token = "".join(self._number or ())
        self._number = None
        if token in _LITERALS:
            value: Any = _LITERALS[token]
        else:
            try:
                value = json.loads(token)
            except ValueError:
                return False
            if not isinstance(value, int | float):
                return False
        frame = self._stack[-1]
        self._attach(value)
        self._member_done(frame)
        return True

    def _close(self) -> None:
        self.version += 1
        self._open_members -= len(self._stack.pop().container)
        if not self._stack:
            self.done = True
            return
        frame = self._stack[-1]
        frame.expect = _COMMA
        self._member_done(frame)

    def _broken(self, index: int) -> int:
        """Not JSON after all (prose with a bracket, or a slip L1 may repair): start over."""
        self.version += 1
        self._stack.clear()
        self._open_members = 0
        self._string = self._number = None
        self.root = None
        self.completed.clear()
        self.completed_inner.clear()
        return index  # the offending character may start the real value

    # -- reading ---------------------------------------------------------------------------------

    @property
    def open_string_chars(self) -> int:
        """Raw characters of the value string being read (-1: no value string is open)."""
        return -1 if self._string is None or self._string_is_key else self._string_chars

    @property
    def open_string(self) -> str | None:
        """The decodable part of a value string being read (None: no value string is open)."""
        if self._string is None or self._string_is_key:
            return None
        raw = "".join(self._string)
        if "\\" not in raw:
            return raw
        return open_string_text(raw)  # an escape still arriving (`\u00`) is left out

    def open_size(self) -> int:
        """Members of the open containers: what a snapshot copies (counted as they change: a
        stream nested deep asks this at every piece)."""
        return self._open_members

    def snapshot(self, with_open_string: bool = True) -> Any:
        """The value read so far (None before it starts); see the module docstring."""
        if self.root is None:
            return None
        tip: Any = _NO_TIP
        if with_open_string:
            partial = self.open_string
            if partial is not None:
                tip = partial
        innermost = True
        for frame in reversed(self._stack):
            container = frame.container
            if type(container) is dict:
                copy: Any = dict(container)
                if tip is not _NO_TIP and frame.key is not None:
                    copy[frame.key] = tip  # an open child is under the key being filled
            else:
                copy = list(container)
                if tip is not _NO_TIP:
                    if innermost:
                        copy.append(tip)  # the open string is not in the list yet
                    else:
                        copy[-1] = tip  # an open container was appended when it opened
            tip = copy
            innermost = False
        return self.root if tip is _NO_TIP else tip


_NO_TIP: Final = object()
