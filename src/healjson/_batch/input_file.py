"""Read a batch's input file into `Job`s, and pick the ones a run still has to do.

The input is JSON Lines: one object per line with an optional `id` and a request, read as every
runner reads one (`request`: `messages` or `prompt`, optionally `system`, `context` and the row's
`temperature`, `top_p`, `max_tokens`). An unreadable line never stops a run: not UTF-8, not JSON,
nested too deeply for the JSON parser, not an object, longer than `MAX_LINE_BYTES`, or a request
that breaks `request`'s rules: it becomes a `Job` with a `problem`, which the run writes as an
`invalid_input` row. A line with no `id` (or `null`) is identified by its line number N (its row:
`"id": N, "input_line": N`), a line with no usable id gets the id `#line-N`; both are compared by
the key `#line-N`, apart from every id an input can give (see `rows`), so a line without an id never
collides with a row that has one. A repeated id is processed once (the first line).
A file that is not JSON Lines at all is refused before any row is run (`not_json_lines`): its
first non-blank line is not a JSON object, and neither are at least half of its first
`SNIFF_LINES` non-blank lines (a CSV, a JSON array however laid out, plain text). A file that
starts with a row keeps the per-line rule (its unreadable lines become `invalid_input` rows);
an empty file is JSON Lines with no row.

Resuming an output written before lines without an id carried `input_line` (their rows were
`{"id": N, ...}` alone): such a row counts as line N's when the input has no line with the
explicit id N, else as that line's (so nothing is run twice for it).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

from .json_lines import Line, parse_line, read_lines
from .request import Unusable, read_request
from .rows import EXCERPT_CHARS, BatchError, Job, id_key

__all__ = ["SNIFF_LINES", "input_keys", "not_json_lines", "read_jobs", "select"]

SNIFF_LINES = 20
"""How many non-blank lines `not_json_lines` looks at."""


def read_jobs(path: Path) -> Iterator[Job]:
    """Every non-blank input line as a `Job` (unreadable lines carry a `problem`)."""
    try:
        file = path.open("rb")
    except OSError as exc:
        raise BatchError(f"cannot read {path}: {exc.strerror or exc}") from exc
    with file:
        for line in read_lines(file):
            if line.blank:
                continue
            bom = line.number == 1 and line.data.startswith(b"\xef\xbb\xbf")
            yield _job(dataclasses.replace(line, data=line.data[3:]) if bom else line)


def not_json_lines(path: Path) -> str | None:
    """Why `path` is not JSON Lines at all (see the module's rule), or None when it may be."""
    objects = seen = 0
    try:
        file = path.open("rb")
    except OSError as exc:
        raise BatchError(f"cannot read {path}: {exc.strerror or exc}") from exc
    with file:
        for line in read_lines(file):
            if line.blank:
                continue
            seen += 1
            bom = line.number == 1 and line.data.startswith(b"\xef\xbb\xbf")
            data, _ = parse_line(dataclasses.replace(line, data=line.data[3:]) if bom else line)
            if isinstance(data, dict):
                if seen == 1:
                    return None
                objects += 1
            if seen == SNIFF_LINES:
                break
    if seen == 0 or objects * 2 >= seen:
        return None
    return (
        f"{path} is not JSON Lines (one JSON object per line): {seen - objects} of its first "
        f"{seen} non-blank line(s), the first one among them, are not JSON objects"
    )


def select(path: Path, done: set[str]) -> Iterator[tuple[str, Job]]:
    """Each job with what to do about it: `todo`, `done` (id in the output) or `duplicate`."""
    seen: set[str] = set()
    explicit: set[int] | None = None  # the input's explicit integer ids, read when needed
    for job in read_jobs(path):
        key = job.key
        if job.implicit and key not in done and id_key(job.line) in done:
            if explicit is None:
                explicit = _explicit_integers(path)
            if job.line not in explicit:  # an older output's row for this line
                key = id_key(job.line)
        if key in done:
            yield "done", job
        elif key in seen:
            yield "duplicate", job
        else:
            seen.add(key)
            yield "todo", job


def input_keys(path: Path) -> frozenset[str]:
    """The id key of every input line, plus the key an older output gave each line without an
    id (its line number's, unless a line has that explicit id): the rows `--retry` may take out."""
    keys: set[str] = set()
    explicit: set[int] = set()
    lines: list[int] = []
    for job in read_jobs(path):
        keys.add(job.key)
        if job.implicit:
            lines.append(job.line)
        elif not job.by_line and type(job.id) is int:
            explicit.add(job.id)
    keys.update(id_key(line) for line in lines if line not in explicit)
    return frozenset(keys)


def _explicit_integers(path: Path) -> set[int]:
    return {job.id for job in read_jobs(path) if not job.by_line and type(job.id) is int}


def _job(raw: Line) -> Job:
    line = raw.number
    data, problem = parse_line(raw)
    # only an excerpt is kept (for an `invalid_input` row): a line may be 64 MiB
    head = raw.data[: 4 * EXCERPT_CHARS + 8].decode("utf-8", errors="replace")
    text = head.strip()[: EXCERPT_CHARS + 1]
    if problem is not None:
        return Job.unreadable(line, f"line {line} {problem}", text)
    if not isinstance(data, dict):
        return Job.unreadable(line, f"line {line} is not a JSON object", text)
    ident = data.get("id")
    implicit = ident is None
    if implicit:
        ident = line
    elif isinstance(ident, bool) or not isinstance(ident, str | int):
        return Job.unreadable(line, f"line {line}: `id` must be a string or an integer", text)
    request = read_request(data)
    if isinstance(request, Unusable):
        problem = f"line {line}: {request.problem}"
        return Job(ident, line, problem=problem, text=text, implicit=implicit)
    return Job(ident, line, request, text=text, implicit=implicit)
