"""`healjson batch`: heal many prompts through an OpenAI-compatible endpoint and lose nothing.

The input is JSON Lines: one object per line with an optional `id` (default: the 1-based line
number) and either `messages` (chat messages) or `prompt` (a string). The output gets exactly one
JSON line per distinct id:

    {"id": ..., "ok": true, "value": ..., "attempts": N, "usage": {...}}
    {"id": ..., "ok": false, "reason": ..., "raw_text": ..., "errors": [...], "attempts": N,
     "usage": {...}}

plus `"outcome"` (the whole `outcome.to_dict()`) with `full=True`. A line that cannot be read
becomes `{"ok": false, "reason": "invalid_input", ...}`; a repeated id is processed once.

Unreadable lines never stop a run. An input line is unreadable when it is not UTF-8, not JSON,
nested too deeply for the JSON parser (`RecursionError`), not an object, longer than
`MAX_LINE_BYTES` (64 MiB: such a line is skipped in 1 MiB chunks, never held in memory), or when
its `messages` nest deeper than `MAX_MESSAGES_DEPTH` levels; it gets an `invalid_input` row (its
id is its line number). An output line that is not a row (the same reasons, or an object without
a string or integer `id`) is left as it is, counted, and skipped by a resume and by
`healjson trace`, which say so on stderr. An over-long output line whose first bytes start a row
(`{"id": ...`, as this writer writes them) still counts as that id's row, so a resume never runs
the id twice.

Durability: one writer appends each row as one `write`, then flushes and fsyncs it before the
next, so a killed run leaves whole rows plus at most one torn last line. Opening the output reads
the ids already there (a re-run skips them) and cuts off an unreadable last line that has no
final newline (a row this writer tore: a whole line, newline included, is kept). Rows are written
in the order they finish, not in input order.

Retrying: `retry` names degraded reasons (e.g. `api_error`, `timeout`) whose rows are taken out
of the output before the run, so their ids run again and each id still has one row. The output
is rewritten to a locked temporary file, fsync'd and renamed over the old one: a crash leaves
either the old file or the new one, never a mix.

This module does no terminal output: the command line passes a callback for its progress bar.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from healjson._core.outcome import Outcome

__all__ = [
    "Batch",
    "BatchError",
    "BatchStats",
    "Job",
    "id_key",
    "openai_healer",
    "parse_line",
    "read_jobs",
    "read_lines",
    "read_rows",
    "recover_output",
    "row_id",
]

INVALID_INPUT = "invalid_input"
MAX_LINE_BYTES = 64 * 1024 * 1024
"""Longest input or output line read (newline excluded); a longer one is unreadable."""
MAX_MESSAGES_DEPTH = 64
"""Deepest nesting accepted in an input line's `messages` (chat messages need about 5 levels)."""
_EXCERPT_CHARS = 200
_HEAD_BYTES = 64 * 1024  # what is kept of an over-long line (for an excerpt, or a row's id)
_CHUNK_BYTES = 1024 * 1024

Heal = Callable[["Job"], Awaitable[Outcome[Any]]]


class BatchError(Exception):
    """The batch cannot start: unreadable input, or an output file in use or not writable."""


@dataclass(frozen=True, slots=True)
class Job:
    """One input line: its id and messages, or why it cannot be processed (`problem`); `text`
    is the start of the line, for the excerpt an `invalid_input` row shows."""

    id: str | int
    line: int
    messages: tuple[dict[str, Any], ...] = ()
    problem: str | None = None
    text: str = ""

    @property
    def key(self) -> str:
        """The id as compared for resuming and de-duplication (see `id_key`)."""
        return id_key(self.id)


def id_key(value: Any) -> str:
    """Ids compare as JSON values: `7` and `"7"` are different ids."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


@dataclass
class BatchStats:
    """Counts for one run (the progress bar reads them after every written row)."""

    total: int = 0
    """Rows this run has to write (distinct ids not yet in the output)."""
    written: int = 0
    healed: int = 0
    degraded: int = 0
    invalid: int = 0
    calls: int = 0
    tokens: int = 0
    already_done: int = 0
    """Input lines skipped because their id is already in the output."""
    duplicates: int = 0
    """Input lines skipped because an earlier line had the same id."""
    unreadable_rows: int = 0
    """Lines of the existing output that are not rows (kept as they are)."""
    torn_line_dropped: bool = False
    failed: int = 0
    """Jobs that raised unexpectedly (no row written; a re-run retries them)."""
    retried: int = 0
    """Rows taken out of the output to run again (`retry`)."""
    first_failure: str | None = None

    @property
    def complete(self) -> bool:
        """True when every row this run owed was written."""
        return self.written == self.total


# -- input -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Line:
    """One line of a JSON Lines file: where it is, and its bytes (the first `_HEAD_BYTES` only
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
    in chunks up to its newline and kept as its first `_HEAD_BYTES` bytes."""
    limit = MAX_LINE_BYTES
    number = offset = 0
    while data := file.readline(limit + 1):
        number += 1
        size, ended = len(data), data.endswith(b"\n")
        if ended or size <= limit:
            yield Line(number, offset, size, data, ended=ended)
        else:
            while more := file.readline(_CHUNK_BYTES):
                size += len(more)
                if more.endswith(b"\n"):
                    break
            ended = bool(more)
            yield Line(number, offset, size, data[:_HEAD_BYTES], too_long=True, ended=ended)
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


def _job(raw: Line) -> Job:
    line = raw.number
    data, problem = parse_line(raw)
    # only an excerpt is kept (for an `invalid_input` row): a line may be 64 MiB
    head = raw.data[: 4 * _EXCERPT_CHARS + 8].decode("utf-8", errors="replace")
    text = head.strip()[: _EXCERPT_CHARS + 1]
    if problem is not None:
        return Job(line, line, problem=f"line {line} {problem}", text=text)
    if not isinstance(data, dict):
        return Job(line, line, problem=f"line {line} is not a JSON object", text=text)
    ident = data.get("id")
    if ident is None:
        ident = line
    elif isinstance(ident, bool) or not isinstance(ident, str | int):
        return Job(line, line, problem=f"line {line}: `id` must be a string or an integer")
    problem = None
    messages: tuple[dict[str, Any], ...] = ()
    if ("messages" in data) == ("prompt" in data):
        problem = "give either `messages` (chat messages) or `prompt` (a string)"
    elif "prompt" in data:
        if isinstance(data["prompt"], str) and data["prompt"].strip():
            messages = ({"role": "user", "content": data["prompt"]},)
        else:
            problem = "`prompt` must be a non-empty string"
    else:
        messages, problem = _messages(data["messages"])
    if problem is not None:
        return Job(ident, line, problem=f"line {line}: {problem}", text=text)
    return Job(ident, line, messages, text=text)


def _messages(value: Any) -> tuple[tuple[dict[str, Any], ...], str | None]:
    if not isinstance(value, list) or not value:
        return (), "`messages` must be a non-empty list of chat messages"
    for index, message in enumerate(value):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            return (), f"`messages[{index}]` must be an object with a `role`"
    if _deeper_than(value, MAX_MESSAGES_DEPTH):
        return (), f"`messages` nest deeper than {MAX_MESSAGES_DEPTH} levels"
    return tuple(dict(message) for message in value), None


def _deeper_than(value: Any, limit: int) -> bool:
    """True when lists / objects nest more than `limit` levels (iterative: no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node
        for child in children:
            if isinstance(child, dict | list):
                if depth + 1 > limit:
                    return True
                stack.append((child, depth + 1))
    return False


def _select(path: Path, done: set[str]) -> Iterator[tuple[str, Job]]:
    """Each job with what to do about it: `todo`, `done` (id in the output) or `duplicate`."""
    seen: set[str] = set()
    for job in read_jobs(path):
        key = job.key
        if key in done:
            yield "done", job
        elif key in seen:
            yield "duplicate", job
        else:
            seen.add(key)
            yield "todo", job


# -- output ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Recovered:
    """What an existing output file holds."""

    keys: frozenset[str] = frozenset()
    unreadable: int = 0
    keep_bytes: int = 0
    """Where the good part ends (a torn last line starts here)."""
    needs_newline: bool = False
    torn: bool = False


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
    key = _head_key(line.data) if line.too_long else _row_key(parse_line(line)[0])
    if key is None:
        return False
    keys.add(key)
    return True


def row_id(row: Any) -> str | int | None:
    """The id of an output row (a JSON object with a string or integer `id`), else None."""
    if not isinstance(row, dict):
        return None
    ident = row.get("id")
    if isinstance(ident, bool) or not isinstance(ident, str | int):
        return None
    return ident


def _row_key(row: Any) -> str | None:
    ident = row_id(row)
    return None if ident is None else id_key(ident)


def _head_key(head: bytes) -> str | None:
    """The id key of an over-long row, read from its first bytes: this writer puts `id` first."""
    text = head.decode("utf-8", errors="ignore")
    prefix = '{"id": '
    if not text.startswith(prefix):
        return None
    try:
        ident, _ = json.JSONDecoder().raw_decode(text, len(prefix))
    except (ValueError, RecursionError):
        return None
    return _row_key({"id": ident})


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


class _Output:
    """The single writer: one JSON line per row, flushed and fsync'd before the next."""

    def __init__(
        self,
        path: Path,
        retry: frozenset[str] = frozenset(),
        wanted: frozenset[str] = frozenset(),
    ) -> None:
        self.retried = 0
        try:
            self._file: IO[bytes] = path.open("ab")
        except OSError as exc:
            raise BatchError(f"cannot write {path}: {exc.strerror or exc}") from exc
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
            raise BatchError(f"cannot write {temporary}: {exc.strerror or exc}") from exc
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
        try:
            text = json.dumps(row, ensure_ascii=False)
            data = (text + "\n").encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate from the endpoint: escape everything
            data = (json.dumps(row, ensure_ascii=True) + "\n").encode("ascii")
        self._append(data)

    def _append(self, data: bytes) -> None:
        self._file.write(data)
        self._sync()

    def _sync(self) -> None:
        self._file.flush()
        os.fsync(self._file.fileno())

    def close(self) -> None:
        self._file.close()


def _copy_except(source: IO[bytes], target: IO[bytes], dropped: list[tuple[int, int]]) -> None:
    """Copy `source` to `target` without the byte ranges `dropped` (sorted, disjoint), in
    chunks: an over-long line is never held in memory."""
    position = 0
    for start, end in [*dropped, (-1, -1)]:
        while start < 0 or position < start:
            chunk = source.read(_CHUNK_BYTES if start < 0 else min(_CHUNK_BYTES, start - position))
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
    key = _row_key(row)
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
        raise BatchError(f"{path} is being written by another healjson batch") from exc


# -- rows --------------------------------------------------------------------------------------


def outcome_row(job: Job, outcome: Outcome[Any], *, full: bool = False) -> dict[str, Any]:
    """The output row for a job that ran."""
    data = outcome.to_dict()
    row: dict[str, Any] = {"id": job.id, "ok": outcome.ok}
    if outcome.ok:
        row["value"] = data["value"]
    else:
        row.update(reason=data["reason"], raw_text=data["raw_text"], errors=data["errors"])
    row.update(attempts=outcome.calls, usage=data["usage"])
    if full:
        row["outcome"] = data
    return row


def invalid_row(job: Job) -> dict[str, Any]:
    """The output row for an input line that cannot be processed."""
    excerpt = job.text if len(job.text) <= _EXCERPT_CHARS else job.text[:_EXCERPT_CHARS] + "…"
    error = {
        "path": "<input>",
        "value": excerpt,
        "constraint": job.problem,
        "prescription": "Fix the input line: a JSON object with an optional `id` and either "
        "`messages` (a list of chat messages) or `prompt` (a string).",
        "source": "input",
        "line": job.line,
    }
    empty = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "estimated": False}
    return {
        "id": job.id,
        "ok": False,
        "reason": INVALID_INPUT,
        "raw_text": None,
        "errors": [error],
        "attempts": 0,
        "usage": empty,
    }


# -- the run -----------------------------------------------------------------------------------


@dataclass
class Batch:
    """An input file and an output file, opened for one run (the output is locked meanwhile).

    `Batch.open` reads what the output already holds, so `stats.total` is known before
    `run` starts (for a progress bar); call `close` (or use `with`) when done.
    """

    input_path: Path
    out_path: Path
    stats: BatchStats = field(default_factory=BatchStats)
    _output: _Output | None = None
    _done: set[str] = field(default_factory=set)

    @classmethod
    def open(
        cls, input_path: Path, out_path: Path, *, retry: frozenset[str] = frozenset()
    ) -> Batch:
        """Lock and recover the output, take out the rows to `retry` (degraded reasons), then
        count the input (raises `BatchError`)."""
        if not input_path.is_file():
            raise BatchError(f"no input file at {input_path}")
        wanted = frozenset(job.key for job in read_jobs(input_path)) if retry else frozenset()
        output = _Output(out_path, retry, wanted)
        batch = cls(input_path, out_path, _output=output, _done=set(output.recovered.keys))
        batch.stats.retried = output.retried
        batch.stats.torn_line_dropped = output.recovered.torn
        batch.stats.unreadable_rows = output.recovered.unreadable
        try:
            for status, _ in _select(input_path, batch._done):
                if status == "todo":
                    batch.stats.total += 1
                elif status == "done":
                    batch.stats.already_done += 1
                else:
                    batch.stats.duplicates += 1
        except BaseException:
            output.close()
            raise
        return batch

    def __enter__(self) -> Batch:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the output file."""
        if self._output is not None:
            self._output.close()
            self._output = None

    async def run(
        self,
        heal: Heal,
        *,
        concurrency: int = 8,
        full: bool = False,
        on_row: Callable[[BatchStats], None] | None = None,
    ) -> BatchStats:
        """Heal every pending job, `concurrency` at a time; one writer appends the rows."""
        if self._output is None:
            raise RuntimeError("this batch is closed")
        output = self._output
        jobs = (job for status, job in _select(self.input_path, self._done) if status == "todo")
        queue: asyncio.Queue[tuple[dict[str, Any], Outcome[Any] | None] | None] = asyncio.Queue(
            maxsize=2 * concurrency
        )

        async def work() -> None:
            for job in jobs:  # one shared iterator: each job goes to exactly one worker
                row = await self._row(job, heal, full)
                if row is not None:
                    await queue.put(row)

        async def produce() -> None:
            try:
                async with asyncio.TaskGroup() as workers:
                    for _ in range(max(1, concurrency)):
                        workers.create_task(work())
            finally:
                await queue.put(None)

        async def write() -> None:
            while (item := await queue.get()) is not None:
                row, outcome = item
                await asyncio.to_thread(output.write, row)
                self._count(row, outcome)
                if on_row is not None:
                    on_row(self.stats)

        async with asyncio.TaskGroup() as group:
            group.create_task(write())
            group.create_task(produce())
        return self.stats

    async def _row(
        self, job: Job, heal: Heal, full: bool
    ) -> tuple[dict[str, Any], Outcome[Any] | None] | None:
        if job.problem is not None:
            return invalid_row(job), None
        try:
            outcome = await heal(job)
            return outcome_row(job, outcome, full=full), outcome
        except Exception as exc:  # healjson never raises at call time: this is a bug
            self.stats.failed += 1
            if self.stats.first_failure is None:
                self.stats.first_failure = f"id {job.id!r}: {type(exc).__name__}: {exc}"
            return None

    def _count(self, row: Mapping[str, Any], outcome: Outcome[Any] | None) -> None:
        stats = self.stats
        stats.written += 1
        if outcome is None:
            stats.invalid += 1
            return
        if outcome.ok:
            stats.healed += 1
        else:
            stats.degraded += 1
        stats.calls += outcome.calls
        stats.tokens += outcome.usage.total_tokens


def openai_healer(
    client: Any,
    *,
    model: str,
    response_model: Any,
    contracts: tuple[Any, ...] = (),
    examples: tuple[Any, ...] = (),
    policy: Any = None,
    params: Mapping[str, Any] | None = None,
) -> Heal:
    """A `heal(job)` that sends the job's messages through a `healjson.wrap`-ped async client.

    The healer is built once here, so a bad model or contract raises before any row is written.
    """
    client.healer(response_model, contracts, policy, None, examples)
    extra = dict(params or {})

    async def heal(job: Job) -> Outcome[Any]:
        outcome: Outcome[Any] = await client.chat.completions.create(
            model=model,
            messages=[dict(message) for message in job.messages],
            response_model=response_model,
            contracts=contracts,
            examples=examples,
            policy=policy,
            **extra,
        )
        return outcome

    return heal
