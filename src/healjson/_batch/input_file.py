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
An input where a line's row would show the same `id` as an explicit id elsewhere (a line without
an id, N, and a line with `"id": N`; an unreadable line, `#line-N`, and a line with
`"id": "#line-N"`) is refused before any row is run (`id_clash`), naming both lines.
A file that is not JSON Lines at all is refused before any row is run (`not_json_lines`): its
first non-blank line is not a JSON object, and neither are at least half of its first
`SNIFF_LINES` non-blank lines (a CSV, a JSON array however laid out, plain text). A file that
starts with a row keeps the per-line rule (its unreadable lines become `invalid_input` rows);
an empty file is JSON Lines with no row.

Resuming an output written before lines without an id carried `input_line` (their rows were
`{"id": N, ...}` alone): such a row counts as line N's (no line of an input that is run can have
the explicit id N).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path

from .json_lines import Line, parse_line, read_lines
from .request import Unusable, read_request
from .rows import EXCERPT_CHARS, BatchError, Job, assigned_id, id_key

__all__ = [
    "SNIFF_LINES",
    "check_ids",
    "id_clash",
    "input_keys",
    "not_json_lines",
    "read_jobs",
    "select",
]

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


def id_clash(path: Path) -> str | None:
    """Why `path` cannot run: two of its lines would give rows the same `id`, else None.

    The id shown for a line without one is its line number (`#line-N` for an unreadable line),
    and an explicit id can equal it. The two rows would stay apart inside healjson (a line's
    key is not an id's, see `rows`), but a reader of the output would see one id twice, so the
    input is refused instead. Refusing, rather than giving generated ids a form of their own
    (`line-7`), keeps every id a re-run or a resume meets the same as before: rows written by
    earlier runs still match their lines, and no generated form is safe anyway, since an
    explicit id can be any string.
    """
    no_id: list[int] = []  # lines whose row shows their line number as `id`
    unreadable: list[int] = []  # lines whose row shows `#line-N`
    explicit: dict[str | int, int] = {}  # an explicit id that a line's id could equal: its line
    for job in read_jobs(path):
        if job.implicit:
            no_id.append(job.line)
        elif job.assigned:
            unreadable.append(job.line)
        elif type(job.id) is int or (isinstance(job.id, str) and job.id.startswith("#line-")):
            explicit.setdefault(job.id, job.line)
    clashes = [
        (line, explicit[ident], ident, why)
        for lines, shown, why in (
            (no_id, lambda n: n, "has no `id`, so its row's id is its line number"),
            (unreadable, assigned_id, "cannot be read, so its row's id is"),
        )
        for line in lines
        if (ident := shown(line)) in explicit
    ]
    if not clashes:
        return None
    line, other, ident, why = min(clashes, key=lambda clash: clash[0])
    more = f" ({len(clashes) - 1} more line(s) like it)" if len(clashes) > 1 else ""
    return (
        f"line {line} {why}, {json.dumps(ident)}, and line {other} gives the same id: two "
        f"rows would share the id {json.dumps(ident)}{more}. Give line {line} an `id` of its "
        f"own, or change line {other}'s."
    )


def check_ids(path: Path) -> None:
    """Raise `BatchError` when two lines of `path` would give rows the same id (`id_clash`)."""
    problem = id_clash(path)
    if problem is not None:
        raise BatchError(problem)


def select(path: Path, done: set[str]) -> Iterator[tuple[str, Job]]:
    """Each job with what to do about it: `todo`, `done` (id in the output) or `duplicate`.
    The runners call `check_ids` first, once per run: an input whose ids clash never runs."""
    seen: set[str] = set()
    for job in read_jobs(path):
        key = job.key
        if job.implicit and key not in done and id_key(job.line) in done:
            key = id_key(job.line)  # an older output's row for this line
        if key in done:
            yield "done", job
        elif key in seen:
            yield "duplicate", job
        else:
            seen.add(key)
            yield "todo", job


def input_keys(path: Path) -> frozenset[str]:
    """The id key of every input line, plus the key an older output gave each line without an
    id (its line number's): the rows `--retry` may take out."""
    keys: set[str] = set()
    for job in read_jobs(path):
        keys.add(job.key)
        if job.implicit:
            keys.add(id_key(job.line))
    return frozenset(keys)


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
