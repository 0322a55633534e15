"""Read a JSON Lines file in bounded memory: each line's place, bytes, and parsed value.

A line longer than `MAX_LINE_BYTES` (64 MiB) is skipped in `CHUNK_BYTES` chunks and kept as its
first `HEAD_BYTES` only; parsing a line never raises, whatever it holds (invalid UTF-8, invalid
JSON, JSON nested too deeply for the parser).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

__all__ = ["CHUNK_BYTES", "HEAD_BYTES", "MAX_LINE_BYTES", "Line", "parse_line", "read_lines"]

MAX_LINE_BYTES = 64 * 1024 * 1024
"""Longest line read (newline excluded); a longer one is unreadable."""
HEAD_BYTES = 64 * 1024
"""What is kept of an over-long line (for an excerpt, or a row's id)."""
CHUNK_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a JSON Lines file: where it is, and its bytes (the first `HEAD_BYTES` only
    when it is longer than `MAX_LINE_BYTES`)."""

    number: int
    offset: int
    size: int
    """Bytes, newline included."""
    data: bytes
    too_long: bool = False
    ended: bool = True
    """False for a last line without a final newline."""

    @property
    def blank(self) -> bool:
        """True for an empty or whitespace-only line."""
        return not self.too_long and not self.data.strip()


def read_lines(file: IO[bytes]) -> Iterator[Line]:
    """Every line of `file`, in bounded memory: a line longer than `MAX_LINE_BYTES` is read on
    in chunks up to its newline and kept as its first `HEAD_BYTES` bytes."""
    limit = MAX_LINE_BYTES
    number = offset = 0
    while data := file.readline(limit + 1):
        number += 1
        size, ended = len(data), data.endswith(b"\n")
        if ended or size <= limit:
            yield Line(number, offset, size, data, ended=ended)
        else:
            while more := file.readline(CHUNK_BYTES):
                size += len(more)
                if more.endswith(b"\n"):
                    break
            ended = bool(more)
            yield Line(number, offset, size, data[:HEAD_BYTES], too_long=True, ended=ended)
        offset += size


def parse_line(line: Line) -> tuple[Any, str | None]:
    """`(value, None)`, or `(None, why the line cannot be read)` — never an exception: invalid
    UTF-8, invalid JSON, JSON nested too deeply for the parser, a line too long."""
    if line.too_long:
        return None, f"is longer than {MAX_LINE_BYTES} bytes"
    try:
        text = line.data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"is not UTF-8 ({exc.reason})"
    try:
        return json.loads(text), None
    except RecursionError:
        return None, "is nested too deeply to read"
    except ValueError as exc:
        return None, f"is not valid JSON: {exc}"
