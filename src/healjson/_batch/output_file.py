"""A batch's output file: read the rows already there, and append new ones durably.

An output line that is not a row (not UTF-8, not JSON, nested too deeply, too long, or an object
without a string or integer `id`) is left as it is, counted, and skipped by a resume and by
`healjson trace`, which say so on stderr. An over-long output line whose first bytes start a row
(`{"id": ...`, as this writer writes them) still counts as that id's row, so a resume never runs
the id twice.

The output must be a regular file or a path that does not exist yet (`not_regular`): a pipe
(/dev/stdout) cannot be read back, a device (/dev/null) cannot be fsync'd.

Durability: one writer appends each row as one `write`, then flushes and fsyncs it before the
next, so a killed run leaves whole rows plus at most one torn last line. Opening the output reads
the ids already there (a re-run skips them) and cuts off an unreadable last line that has no
final newline (a row this writer tore: a whole line, newline included, is kept).

Retrying: `retry` names degraded reasons (e.g. `api_error`, `timeout`) whose rows are taken out
of the output before the run, so their ids run again and each id still has one row. The output
is rewritten to a locked temporary file, fsync'd and renamed over the old one: a crash leaves
either the old file or the new one, never a mix.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from healjson._core.outcome.json_text import strict_dumps

from .json_lines import CHUNK_BYTES, Line, parse_line, read_lines
from .rows import BatchError, row_id, row_key

__all__ = ["OutputFile", "Recovered", "not_regular", "read_rows", "recover_output"]


@dataclass(frozen=True, slots=True)
class Recovered:
    """What an existing output file holds."""

    keys: frozenset[str] = frozenset()
    unreadable: int = 0
    keep_bytes: int = 0
    """Where the good part ends (a torn last line starts here)."""
    needs_newline: bool = False
    torn: bool = False


def not_regular(path: Path) -> str | None:
    """Why `path` cannot be written as a batch's output (or its ledger): it exists and is not a
    regular file (a pipe such as /dev/stdout, a device such as /dev/null, a folder); else None.
    Such a file cannot be read back to resume, nor made durable (fsync)."""
    try:
        if not path.exists() or path.is_file():
            return None
    except OSError:  # unreadable: opening it says why
        return None
    return (
        f"{path} is not a regular file: a batch reads its output back (to resume) and makes "
        "each row durable, so write to a file (and read it from there)"
    )


def recover_output(path: Path) -> Recovered:
    """Read the ids already written to `path` and find a torn last line (nothing is changed)."""
    if not path.exists():
        return Recovered()
    keys: set[str] = set()
    unreadable = 0
    last: Line | None = None
    with path.open("rb") as file:
        for line in read_lines(file):
            if last is not None and not _note_row(last, keys):
                unreadable += 1
            last = line
    if last is None:
        return Recovered()
    end = last.offset + last.size
    if _note_row(last, keys):
        return Recovered(frozenset(keys), unreadable, end, not last.ended)
    if last.ended:  # a whole line (this writer never tears one before its newline): kept
        return Recovered(frozenset(keys), unreadable + 1, end)
    return Recovered(frozenset(keys), unreadable, last.offset, torn=True)


def _note_row(line: Line, keys: set[str]) -> bool:
    if line.blank:
        return True  # a blank line is not damage
    key = _head_key(line.data) if line.too_long else row_key(parse_line(line)[0])
    if key is None:
        return False
    keys.add(key)
    return True


def _head_key(head: bytes) -> str | None:
    """The id key of an over-long row, read from its first bytes: this writer puts `id` first,
    then `input_line` for a line's row."""
    text = head.decode("utf-8", errors="ignore")
    prefix = '{"id": '
    if not text.startswith(prefix):
        return None
    decoder = json.JSONDecoder()
    try:
        ident, end = decoder.raw_decode(text, len(prefix))
    except (ValueError, RecursionError):
        return None
    if isinstance(ident, bool) or not isinstance(ident, str | int):
        return None
    row: dict[str, Any] = {"id": ident}
    marker = ', "input_line": '
    if text.startswith(marker, end):
        with contextlib.suppress(ValueError, RecursionError):
            row["input_line"], _ = decoder.raw_decode(text, end + len(marker))
    return row_key(row)


def read_rows(path: Path) -> Iterator[tuple[int, dict[str, Any] | None, str | None]]:
    """Each non-blank line of an output file: `(number, row, None)` for a row, `(number, None,
    why not)` for any other line — never an exception for what a line holds."""
    with path.open("rb") as file:
        for line in read_lines(file):
            if line.blank:
                continue
            row, problem = parse_line(line)
            if problem is None and row_id(row) is None:
                problem = "is not a row (a JSON object with a string or integer `id`)"
            if problem is not None:
                yield line.number, None, problem
            else:
                yield line.number, row, None


class OutputFile:
    """The single writer: one JSON line per row, flushed and fsync'd before the next."""

    def __init__(
        self,
        path: Path,
        retry: frozenset[str] = frozenset(),
        wanted: frozenset[str] = frozenset(),
    ) -> None:
        self.retried = 0
        problem = not_regular(path)
        if problem is not None:
            raise BatchError(problem, option="--out")
        try:
            self._file: IO[bytes] = path.open("ab")
        except OSError as exc:
            raise BatchError(f"cannot write {path}: {exc.strerror or exc}", option="--out") from exc
        try:
            _lock(self._file, path)
            self.recovered = recover_output(path)
            if self.recovered.torn:  # a killed run's half-written row: overwrite it
                self._file.truncate(self.recovered.keep_bytes)
                self._sync()
            if self.recovered.needs_newline:
                self._append(b"\n")
            if retry:
                self._drop(path, retry, wanted)
        except BaseException:
            self._file.close()
            raise

    def _drop(self, path: Path, retry: frozenset[str], wanted: frozenset[str]) -> None:
        """Rewrite the output without the rows degraded for a reason in `retry` whose id is
        `wanted` (still in the input: a row the run will not write again is kept)."""
        dropped: list[tuple[int, int]] = []
        with path.open("rb") as file:
            for line in read_lines(file):
                reason, key = _reason(line)
                if reason in retry and key in wanted:
                    dropped.append((line.offset, line.offset + line.size))
        self.retried = len(dropped)
        if not self.retried:
            return
        temporary = path.with_name(path.name + ".healjson-retry")
        try:
            new: IO[bytes] = temporary.open("wb")
        except OSError as exc:
            said = f"cannot write {temporary}: {exc.strerror or exc}"
            raise BatchError(said, option="--out") from exc
        try:
            _lock(new, temporary)  # locked before it takes the output's name
            with path.open("rb") as old:
                _copy_except(old, new, dropped)
            new.flush()
            os.fsync(new.fileno())
            os.replace(temporary, path)
            _sync_folder(path)
        except BaseException:
            new.close()
            raise
        self._file.close()
        self._file = new
        self.recovered = dataclasses.replace(recover_output(path), torn=self.recovered.torn)

    def write(self, row: Mapping[str, Any]) -> None:
        """Append `row` as one JSON line and make it durable."""
        self._append(_line(row))

    def write_many(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Append `rows`, one JSON line each, in one write made durable once (a killed run
        leaves whole rows plus at most one torn last line, as with `write`)."""
        data = b"".join(map(_line, rows))
        if data:
            self._append(data)

    def _append(self, data: bytes) -> None:
        self._file.write(data)
        self._sync()

    def _sync(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        """Release the file (and its lock)."""
        self._file.close()


def _line(row: Mapping[str, Any]) -> bytes:
    try:
        return (strict_dumps(row, ensure_ascii=False) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from the endpoint: escape everything
        return (strict_dumps(row, ensure_ascii=True) + "\n").encode("ascii")


def _copy_except(source: IO[bytes], target: IO[bytes], dropped: list[tuple[int, int]]) -> None:
    """Copy `source` to `target` without the byte ranges `dropped` (sorted, disjoint), in
    chunks: an over-long line is never held in memory."""
    position = 0
    for start, end in [*dropped, (-1, -1)]:
        while start < 0 or position < start:
            chunk = source.read(CHUNK_BYTES if start < 0 else min(CHUNK_BYTES, start - position))
            if not chunk:
                break
            target.write(chunk)
            position += len(chunk)
        if start >= 0:
            source.seek(end)
            position = end


def _reason(line: Line) -> tuple[str | None, str | None]:
    """An output line's degraded reason and id key ((None, None) for a healed row or a line
    that is no row; an over-long row is kept as it is)."""
    if line.blank or line.too_long:
        return None, None
    row, _ = parse_line(line)
    key = row_key(row)
    if key is None or row.get("ok") is not False:
        return None, None
    reason = row.get("reason")
    return (reason if isinstance(reason, str) else None), key


def _sync_folder(path: Path) -> None:
    """Make a rename durable (POSIX); a no-op where folders cannot be opened."""
    try:
        folder = os.open(path.parent, os.O_RDONLY)
    except OSError:  # pragma: no cover - e.g. Windows
        return
    try:
        os.fsync(folder)
    finally:
        os.close(folder)


def _lock(file: IO[bytes], path: Path) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: no advisory lock
        return
    try:
        fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        said = f"{path} is being written by another healjson batch"
        raise BatchError(said, option="--out") from exc
