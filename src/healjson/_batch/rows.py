"""What a batch is made of: the input `Job`, the output row it becomes, and how ids compare.

Each distinct id gets exactly one output row:

    {"id": ..., "ok": true, "value": ..., "attempts": N, "usage": {...}}
    {"id": ..., "ok": false, "reason": ..., "raw_text": ..., "errors": [...], "attempts": N,
     "usage": {...}}

plus `"outcome"` (the whole `outcome.to_dict()`) with `full=True`. A line that cannot be read
becomes `{"ok": false, "reason": "invalid_input", ...}`.

Ids: a row's id is its input's `id` (a string or an integer). A line with no `id` (or `"id":
null`) is identified by its line number N: its row shows `"id": N` and `"input_line": N`. A line
with no usable id (unreadable, not an object, an `id` that is neither) is given the id
`"#line-N"` and its row also carries `"input_line": N`. Ids are compared by key (`id_key`): a
given id's key is its JSON text (`"7"` is `"\"7\""`, `7` is `"7"`), which always starts with `"`,
a digit or `-`; a line's key (no id, or no usable id) is `#line-N`, bare, which starts with `#`.
So no explicit id can ever have a line's key — not `7`, not `"7"`, not even the string
`"#line-N"` — and no valid row is ever skipped as the duplicate of a line without an id (or
the other way round). Still, a reader of the output would see the same `id` twice (line N
without an id and a line with `"id": N`), so such an input is refused before it runs
(`input_file.id_clash`). An output row is read back as a line's row only with a matching
`input_line`; a row without one is an explicit id's (`row_key`).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from healjson._core.outcome.outcome import Outcome
from healjson._core.outcome.written import VALUE_ALTERED, as_written

from .request import Request

__all__ = [
    "EXCERPT_CHARS",
    "INVALID_INPUT",
    "PRESCRIPTION",
    "VALUE_ALTERED",
    "BatchError",
    "Job",
    "assigned_id",
    "id_key",
    "invalid_row",
    "line_key",
    "outcome_row",
    "row_id",
    "row_key",
]

INVALID_INPUT = "invalid_input"
PRESCRIPTION = (
    "Fix the input line: a JSON object with an optional `id`, `messages` (a list of chat "
    "messages) or `prompt` (a string), optionally `system` (a string), `context` (an object) "
    "and `temperature`, `top_p`, `max_tokens`."
)
EXCERPT_CHARS = 200
"""The most of an unreadable input line an `invalid_input` row shows."""


class BatchError(Exception):
    """The batch cannot start: unreadable input, or an output file in use or not writable.
    `option`: the command-line option it is about (`--out` for the output), else None."""

    def __init__(self, message: str, *, option: str | None = None) -> None:
        super().__init__(message)
        self.option = option


@dataclass(frozen=True, slots=True)
class Job:
    """One input line: its id and its request (`request`: messages, context, the row's own
    parameters, read by `request.read_request`), or why it cannot be processed (`problem`);
    `text` is the start of the line, for the excerpt an `invalid_input` row shows."""

    id: str | int
    line: int
    request: Request | None = None
    problem: str | None = None
    text: str = ""
    assigned: bool = False
    """True when the line had no usable id and `id` is `assigned_id(line)`."""
    implicit: bool = False
    """True when the line gave no id (or `null`) and `id` is its line number."""

    @property
    def messages(self) -> tuple[dict[str, Any], ...]:
        """The request's messages (none for a line that cannot be processed)."""
        return () if self.request is None else self.request.messages

    @property
    def context(self) -> dict[str, Any] | None:
        """The line's `context` object: the run's `context=` (its contracts' `ctx.extra`, and
        pydantic's validation context), None when the line has none."""
        return None if self.request is None else self.request.context

    @property
    def params(self) -> dict[str, Any]:
        """The line's own model parameters (`temperature`, `top_p`, `max_tokens`)."""
        return {} if self.request is None else self.request.params

    @property
    def key(self) -> str:
        """The id as compared for resuming and de-duplication (see `id_key`)."""
        return line_key(self.line) if self.by_line else id_key(self.id)

    @property
    def by_line(self) -> bool:
        """True when the job is identified by its line (no id, or no usable id): its row
        carries `input_line`."""
        return self.assigned or self.implicit

    @classmethod
    def unreadable(cls, line: int, problem: str, text: str = "") -> Job:
        """A line with no usable id: it gets the assigned id `#line-N`."""
        return cls(assigned_id(line), line, problem=problem, text=text, assigned=True)


_ASSIGNED_KEY = "#line-{}"


def line_key(line: int) -> str:
    """The key of line `line` when it gave no usable id: `#line-N`, never JSON text."""
    return _ASSIGNED_KEY.format(line)


def assigned_id(line: int) -> str:
    """The id given to the unreadable line `line`: `#line-N`."""
    return _ASSIGNED_KEY.format(line)


def id_key(value: Any) -> str:
    """Ids compare as JSON values: `7` and `"7"` are different ids (and neither can equal an
    assigned id's key, which is not JSON text: see the module docstring)."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def row_id(row: Any) -> str | int | None:
    """The id of an output row (a JSON object with a string or integer `id`), else None."""
    if not isinstance(row, dict):
        return None
    ident = row.get("id")
    if isinstance(ident, bool) or not isinstance(ident, str | int):
        return None
    return ident


def row_key(row: Any) -> str | None:
    """The key of an output row's id, else None: a line's key (`#line-N`) for the row of a line
    without an id (`"id": N`) or without a usable one (`"id": "#line-N"`), told by its
    matching `"input_line": N`; else the id's JSON text."""
    ident = row_id(row)
    if ident is None:
        return None
    line = row.get("input_line")
    if type(line) is int and (ident == assigned_id(line) or (type(ident) is int and ident == line)):
        return line_key(line)
    return id_key(ident)


def outcome_row(job: Job, outcome: Outcome[Any], *, full: bool = False) -> dict[str, Any]:
    """The output row for a job that ran: `outcome.to_dict()`'s data, so every string in it has
    passed the redactor. A healed value the redactor would change (a key the model echoed, a
    credential name or shape) is never written altered as `ok`: the row degrades with
    `api_error` saying why (`VALUE_ALTERED`), its usage and attempts kept (`as_written`: its
    `outcome` member says so too)."""
    outcome = as_written(outcome)
    data = outcome.to_dict()
    row: dict[str, Any] = _head(job) | {"ok": outcome.ok}
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
    excerpt = job.text if len(job.text) <= EXCERPT_CHARS else job.text[:EXCERPT_CHARS] + "…"
    error = {
        "path": "<input>",
        "value": excerpt,
        "constraint": job.problem,
        "prescription": PRESCRIPTION,
        "source": "input",
        "line": job.line,
    }
    empty = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0, "estimated": False}
    return _head(job) | {
        "ok": False,
        "reason": INVALID_INPUT,
        "raw_text": None,
        "errors": [error],
        "attempts": 0,
        "usage": empty,
    }


def _head(job: Job) -> dict[str, Any]:
    """A row's first members: its id, then `input_line` for a job identified by its line
    (`output_file` reads an over-long row's key from these first bytes)."""
    if job.by_line:
        return {"id": job.id, "input_line": job.line}
    return {"id": job.id}
