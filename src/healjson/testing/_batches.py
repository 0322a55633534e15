"""The scripted server's batch store: OpenAI's Batch API (uploaded files, batches, their output
and error files) and Anthropic's Message Batches, from creation to their end.

Lifecycle. A batch's lines are answered when it is created, in line order: each takes the next
item of the server's script (exactly as a model request would) or, with `batch_replies`, its
own reply. Each line is *done* `delay_s` seconds after the batch's creation (the line's reply's
`delay_s`, 0 by default); the batch ends once `batch_delay_s` has passed and every line is done
(a `batch_expired` line never is: it expires when the batch ends). The store moves a batch on
lazily, when a request reads it (a retrieve, a list, a cancel, Anthropic's results): the first
one at or after the end finds it ended, with its output written then. A cancel leaves the batch
`cancelling` (Anthropic: `canceling`); the next request reading it finds it cancelled, the lines
done before the cancel answered and the others not (OpenAI: in no file; Anthropic: `canceled`).

Every mutation holds the server's lock; answering the lines (which may call script callables)
happens outside it, before the batch is stored. File contents are kept as bytes, each batch's
lines rendered once; ending a batch is linear in its lines.
"""

from __future__ import annotations

import bisect
import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, TypeVar

from ._batch_lines import BatchReplies, Line, LineAnswerer, NextReply
from ._wire import batches as wire

__all__ = ["BatchReplies", "BatchStore", "ScriptedBatch", "ScriptedFile"]

Provider = Literal["openai", "anthropic"]

_Paged = TypeVar("_Paged", "_Batch", "_File")
_ENDED: Final = frozenset({"completed", "failed", "expired", "cancelled", "ended"})


@dataclass(frozen=True, slots=True)
class ScriptedBatch:
    """A batch as the server last showed it (`ScriptedServer.batches`).

    `status` is the provider's (OpenAI: `in_progress`, `cancelling`, `completed`, `failed`,
    `expired`, `cancelled`; Anthropic: its `processing_status`, `in_progress`, `canceling`,
    `ended`). `custom_ids` and `requests` (each line's `body`, or Anthropic's `params`) are in
    line order, empty for an OpenAI batch that failed validation; `outcomes` is each line's
    fate in the same order: `pending` until the batch ends, then `succeeded`, `errored`,
    `expired` or `canceled`. `cancelled` says whether a cancel was accepted.
    """

    id: str
    provider: Provider
    status: str
    custom_ids: tuple[str, ...]
    requests: tuple[dict[str, Any], ...]
    metadata: dict[str, str] | None
    cancelled: bool
    outcomes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ScriptedFile:
    """An OpenAI file the server holds: uploaded (`purpose` as sent) or a batch's output or
    error file (`batch_output`)."""

    id: str
    filename: str
    purpose: str
    content: bytes
    created_at: int


@dataclass(slots=True)
class _Batch:
    id: str
    provider: Provider
    lines: list[Line]
    created_at: float  # wall clock
    created: float  # monotonic
    ends: float  # monotonic: when it ends, unless cancelled first
    status: str
    metadata: dict[str, str] | None = None
    input_file_id: str = ""
    endpoint: str = wire.OPENAI_ENDPOINT  # OpenAI: the route its lines are answered by
    model: str | None = None
    base_url: str = ""  # Anthropic: the server's, for `results_url`
    stamps: dict[str, float] = field(default_factory=dict)  # wall-clock `*_at` times
    cancelled_at: float | None = None  # monotonic time of the accepted cancel
    errors: list[dict[str, Any]] | None = None
    done_ok: list[float] = field(default_factory=list)  # sorted done times (OpenAI counts)
    done_failed: list[float] = field(default_factory=list)
    counts: dict[str, int] | None = None  # once ended
    outcomes: list[str] | None = None  # once ended
    output_file_id: str | None = None
    error_file_id: str | None = None
    usage: dict[str, Any] | None = None
    results: bytes | None = None  # Anthropic's JSONL, once ended


@dataclass(slots=True)
class _File:
    id: str
    filename: str
    purpose: str
    content: bytes
    created_at: float


class BatchStore:
    """Files and batches of one `ScriptedServer`, guarded by its `lock`. Operations return the
    JSON object to send, or raise `wire.Refused` with the HTTP error the real service sends."""

    def __init__(
        self,
        lock: threading.Lock,
        next_reply: NextReply,
        model: Callable[[], str],
        base_url: Callable[[], str],
        *,
        delay_s: float = 0.0,
        replies: BatchReplies | None = None,
        max_requests: int | None = None,
        max_bytes: int | None = None,
    ) -> None:
        if not (isinstance(delay_s, int | float) and delay_s >= 0 and math.isfinite(delay_s)):
            raise ValueError(f"batch_delay_s must be a finite number >= 0, got {delay_s!r}")
        for name, limit in (("batch_max_requests", max_requests), ("batch_max_bytes", max_bytes)):
            if limit is not None and not (isinstance(limit, int) and limit >= 1):
                raise ValueError(f"{name} must be an int >= 1 or None, got {limit!r}")
        self._lock = lock
        self._lines = LineAnswerer(next_reply, model, replies)
        self._base_url = base_url
        self.delay_s = float(delay_s)
        self.max_requests = max_requests
        self.max_bytes = max_bytes
        self._files: dict[str, _File] = {}
        self._batches: dict[str, _Batch] = {}
        self._order: dict[Provider, list[_Batch]] = {"openai": [], "anthropic": []}
        self._numbers = {"file": 0, "openai": 0, "anthropic": 0}
        self._failing_reads: list[int] = []  # statuses for the next GET requests
        self.refusing: int | None = None  # every request's status (`refuse`), or None

    # -- transient failures ----------------------------------------------------------------

    def fail_reads(self, count: int, status: int) -> None:
        """Make the next `count` reads (GET requests) fail with HTTP `status` (instead of the
        failures still pending)."""
        if not (isinstance(count, int) and count >= 0):
            raise ValueError(f"count must be an int >= 0, got {count!r}")
        if not (isinstance(status, int) and 400 <= status <= 599):
            raise ValueError(f"status must be an HTTP error status, got {status!r}")
        with self._lock:
            self._failing_reads = [status] * count

    def refuse(self, status: int | None) -> None:
        """Refuse every request with HTTP `status` from now on (None: answer again)."""
        if status is not None and not (isinstance(status, int) and 400 <= status <= 499):
            raise ValueError(f"status must be an HTTP 4xx status or None, got {status!r}")
        self.refusing = status

    def failing_read(self) -> int | None:
        """The status the current read fails with (taking one), or None."""
        with self._lock:
            return self._failing_reads.pop(0) if self._failing_reads else None

    # -- inspection ------------------------------------------------------------------------

    def snapshots(self) -> list[ScriptedBatch]:
        """Every batch, both providers, in creation order, as last shown (no lifecycle step)."""
        with self._lock:
            batches = sorted(self._batches.values(), key=lambda batch: batch.created)
            return [_snapshot(batch) for batch in batches]

    def file_snapshots(self) -> list[ScriptedFile]:
        with self._lock:
            return [
                ScriptedFile(f.id, f.filename, f.purpose, f.content, int(f.created_at))
                for f in self._files.values()
            ]

    # -- OpenAI files ----------------------------------------------------------------------

    def upload(self, filename: str, purpose: str, content: bytes) -> dict[str, Any]:
        with self._lock:
            return self._file_object(self._add_file(filename, purpose, content))

    def file(self, file_id: str) -> dict[str, Any]:
        with self._lock:
            return self._file_object(self._get_file(file_id))

    def file_content(self, file_id: str) -> bytes:
        with self._lock:
            return self._get_file(file_id).content

    def delete_file(self, file_id: str) -> dict[str, Any]:
        with self._lock:
            self._get_file(file_id)
            del self._files[file_id]
        return wire.file_deleted(file_id)

    def list_files(self, purpose: str | None, limit: int, after: str | None) -> dict[str, Any]:
        with self._lock:
            files = [f for f in reversed(self._files.values()) if purpose in (None, f.purpose)]
            page, more = _page(files, limit, after=after)
            return wire.openai_list([self._file_object(f) for f in page], more)

    # -- OpenAI batches --------------------------------------------------------------------

    def create_openai(self, body: Mapping[str, Any]) -> dict[str, Any]:
        metadata = wire.check_batch_params(body)
        input_file_id = body["input_file_id"]
        with self._lock:
            source = self._get_file(input_file_id, param="input_file_id")
            number = self._count("openai")
        if source.purpose != "batch":
            raise wire.Refused(
                400,
                f"The input file {input_file_id} was uploaded with purpose "
                f"{source.purpose!r}; a batch's input file needs purpose 'batch'.",
                "input_file_id",
                "invalid_value",
            )
        batch_id = f"batch_scripted_{number}"
        endpoint = body["endpoint"]
        requests, errors = self._read_input(source.content, endpoint)
        lines = [
            self._lines.openai(number, index, custom_id, request, wire.OPENAI_FORMATS[endpoint])
            for index, (custom_id, request) in enumerate(requests, 1)
        ]
        models = {r.get("model") for _, r in requests if isinstance(r.get("model"), str)}
        now, clock = time.time(), time.monotonic()
        batch = self._new_batch(batch_id, "openai", lines, now, clock)
        batch.metadata, batch.input_file_id = metadata, input_file_id
        batch.endpoint = endpoint
        batch.model = next(iter(models)) if models else None
        if errors:  # no line was read, none answered
            batch.status, batch.errors = "failed", errors
            batch.stamps["failed_at"] = now
            batch.counts, batch.outcomes = {"completed": 0, "failed": 0}, []
        else:
            batch.stamps["in_progress_at"] = now
            batch.done_ok = sorted(line.done for line in lines if line.outcome == "succeeded")
            batch.done_failed = sorted(line.done for line in lines if line.outcome == "errored")
        with self._lock:
            self._store(batch)
            return self._openai_object(batch)

    def retrieve_openai(self, batch_id: str) -> dict[str, Any]:
        with self._lock:
            batch = self._observe(batch_id, "openai")
            return self._openai_object(batch)

    def cancel_openai(self, batch_id: str) -> dict[str, Any]:
        with self._lock:
            batch = self._observe(batch_id, "openai")
            if batch.status in _ENDED:
                raise wire.Refused(409, f"Cannot cancel a batch with status '{batch.status}'.")
            self._start_cancel(batch, "cancelling")
            return self._openai_object(batch)

    def list_openai(self, limit: int, after: str | None) -> dict[str, Any]:
        with self._lock:
            batches = self._observe_all("openai")
            page, more = _page(batches, limit, after=after)
            return wire.openai_list([self._openai_object(batch) for batch in page], more)

    # -- Anthropic Message Batches ---------------------------------------------------------

    def create_anthropic(self, body: Mapping[str, Any], size: int) -> dict[str, Any]:
        if self.max_bytes is not None and size > self.max_bytes:
            raise wire.Refused(
                413,
                f"Request body is {size} bytes, over this server's limit of {self.max_bytes} "
                "bytes for a Message Batch (ScriptedServer batch_max_bytes): split it.",
            )
        requests = wire.check_message_requests(body)
        if self.max_requests is not None and len(requests) > self.max_requests:
            raise wire.Refused(
                400,
                f"requests: a Message Batch holds at most {self.max_requests} requests on this "
                f"server (ScriptedServer batch_max_requests), got {len(requests)}: split it.",
            )
        with self._lock:
            number = self._count("anthropic")
        lines = [
            self._lines.anthropic(index, custom_id, params)
            for index, (custom_id, params) in enumerate(requests, 1)
        ]
        batch = self._new_batch(
            f"msgbatch_scripted_{number}", "anthropic", lines, time.time(), time.monotonic()
        )
        batch.base_url = self._base_url()
        with self._lock:
            self._store(batch)
            return self._anthropic_object(batch)

    def retrieve_anthropic(self, batch_id: str) -> dict[str, Any]:
        with self._lock:
            return self._anthropic_object(self._observe(batch_id, "anthropic"))

    def cancel_anthropic(self, batch_id: str) -> dict[str, Any]:
        with self._lock:
            batch = self._observe(batch_id, "anthropic")
            if batch.status == "ended":
                raise wire.Refused(
                    400, f"Message Batch {batch_id} has already ended and cannot be canceled."
                )
            self._start_cancel(batch, "canceling")
            return self._anthropic_object(batch)

    def list_anthropic(self, limit: int, after: str | None, before: str | None) -> dict[str, Any]:
        with self._lock:
            batches = self._observe_all("anthropic")
            page, more = _page(batches, limit, after=after, before=before)
            return wire.anthropic_list([self._anthropic_object(batch) for batch in page], more)

    def results_anthropic(self, batch_id: str) -> bytes:
        with self._lock:
            batch = self._observe(batch_id, "anthropic")
            if batch.results is None:
                raise wire.Refused(
                    400,
                    f"Message Batch {batch_id} is still {batch.status}: its results are "
                    "available once it has ended.",
                )
            return batch.results

    def delete_anthropic(self, batch_id: str) -> dict[str, Any]:
        with self._lock:
            batch = self._observe(batch_id, "anthropic")
            if batch.status != "ended":
                raise wire.Refused(
                    400,
                    f"Message Batch {batch_id} is still {batch.status}: cancel it and wait "
                    "for it to end before deleting it.",
                )
            del self._batches[batch_id]
            self._order["anthropic"].remove(batch)
        return wire.batch_deleted(batch_id)

    # -- creation (outside the lock) -------------------------------------------------------

    def _read_input(
        self, content: bytes, endpoint: str
    ) -> tuple[list[tuple[str, dict[str, Any]]], list[dict[str, Any]]]:
        """The input file's requests (each line's `url` the batch's `endpoint`), or the errors
        failing its batch (limits first)."""
        if self.max_bytes is not None and len(content) > self.max_bytes:
            return [], [wire.too_large("bytes", len(content), self.max_bytes)]
        requests, errors = wire.read_input_file(content, endpoint)
        if errors:
            return [], errors
        if self.max_requests is not None and len(requests) > self.max_requests:
            return [], [wire.too_large("requests", len(requests), self.max_requests)]
        return requests, []

    def _new_batch(
        self, batch_id: str, provider: Provider, lines: list[Line], now: float, clock: float
    ) -> _Batch:
        """A batch created at `now` (wall) / `clock` (monotonic); each line's delay becomes
        its done time."""
        answered = [line.done for line in lines if line.done != math.inf]
        ends = clock + max([self.delay_s, *answered])
        for line in lines:
            line.done += clock
        return _Batch(batch_id, provider, lines, now, clock, ends, "in_progress")

    # -- lifecycle (under the lock) --------------------------------------------------------

    def _count(self, kind: str) -> int:
        self._numbers[kind] += 1
        return self._numbers[kind]

    def _store(self, batch: _Batch) -> None:
        self._batches[batch.id] = batch
        self._order[batch.provider].append(batch)

    def _observe(self, batch_id: str, provider: Provider) -> _Batch:
        """The batch, moved on to now; `Refused` (404) when this provider has no such batch."""
        batch = self._batches.get(batch_id)
        if batch is None or batch.provider != provider:
            if provider == "openai":
                raise wire.Refused(404, f"No batch found with id '{batch_id}'.")
            raise wire.Refused(404, f"No Message Batch found with id '{batch_id}'.")
        self._advance(batch, time.monotonic())
        return batch

    def _observe_all(self, provider: Provider) -> list[_Batch]:
        """This provider's batches, newest first, moved on to now."""
        clock = time.monotonic()
        batches = self._order[provider][::-1]
        for batch in batches:
            self._advance(batch, clock)
        return batches

    def _start_cancel(self, batch: _Batch, status: str) -> None:
        if batch.cancelled_at is None:
            batch.cancelled_at = time.monotonic()
            stamp = "cancelling_at" if batch.provider == "openai" else "cancel_initiated_at"
            batch.stamps[stamp] = time.time()
        batch.status = status

    def _advance(self, batch: _Batch, clock: float) -> None:
        """End the batch if it is due: cancelled (a cancel came first) or at its end time."""
        if batch.status in _ENDED:
            return
        if batch.cancelled_at is not None:
            self._end(batch, batch.cancelled_at, cancelled=True)
        elif clock >= batch.ends:
            self._end(batch, batch.ends, cancelled=False)

    def _end(self, batch: _Batch, cutoff: float, *, cancelled: bool) -> None:
        """Write the batch's output: the lines done by `cutoff` answered, the others canceled
        (after a cancel) or expired (`batch_expired` lines, at the end)."""
        now = time.time()
        gone = "canceled" if cancelled else "expired"  # the fate of the lines not done
        batch.outcomes = [line.outcome if line.done <= cutoff else gone for line in batch.lines]
        if batch.provider == "anthropic":
            batch.counts = {name: batch.outcomes.count(name) for name in wire.ANTHROPIC_COUNTS}
            results = [
                line.result if line.done <= cutoff else wire.unanswered_line(line.custom_id, gone)
                for line in batch.lines
            ]
            batch.results = wire.jsonl(results)
            batch.status, batch.stamps["ended_at"] = "ended", now
            return
        output: list[bytes] = []
        errors: list[bytes] = []
        for line, outcome in zip(batch.lines, batch.outcomes, strict=True):
            if outcome != "canceled":  # an expired line's result is its error line
                (output if outcome == "succeeded" else errors).append(line.result)
        batch.counts = {"completed": len(output), "failed": len(errors)}
        batch.usage = wire.batch_usage(
            line.usage
            for line, outcome in zip(batch.lines, batch.outcomes, strict=True)
            if line.usage is not None and outcome == "succeeded"
        )
        if output:
            batch.output_file_id = self._add_output(batch, "output", output, now).id
        if errors:
            batch.error_file_id = self._add_output(batch, "error", errors, now).id
        if cancelled:
            batch.status, batch.stamps["cancelled_at"] = "cancelled", now
            return
        expired = "expired" in batch.outcomes
        batch.status = "expired" if expired else "completed"
        batch.stamps["finalizing_at"] = now
        batch.stamps["expired_at" if expired else "completed_at"] = now

    def _add_output(self, batch: _Batch, kind: str, lines: list[bytes], now: float) -> _File:
        return self._add_file(f"{batch.id}_{kind}.jsonl", "batch_output", wire.jsonl(lines), now)

    def _add_file(
        self, filename: str, purpose: str, content: bytes, now: float | None = None
    ) -> _File:
        file_id = f"file-scripted-{self._count('file')}"
        stored = _File(file_id, filename, purpose, content, time.time() if now is None else now)
        self._files[file_id] = stored
        return stored

    def _get_file(self, file_id: str, param: str | None = None) -> _File:
        stored = self._files.get(file_id)
        if stored is None:
            raise wire.Refused(404, f"No such File object: {file_id}", param)
        return stored

    # -- rendering (under the lock) --------------------------------------------------------

    def _file_object(self, stored: _File) -> dict[str, Any]:
        return wire.file_object(
            stored.id, stored.filename, stored.purpose, len(stored.content), stored.created_at
        )

    def _openai_object(self, batch: _Batch) -> dict[str, Any]:
        total = len(batch.lines)
        if batch.counts is not None:
            counts = (total, batch.counts["completed"], batch.counts["failed"])
        else:  # in progress: the lines done so far (as of the cancel, while cancelling)
            clock = batch.cancelled_at if batch.cancelled_at is not None else time.monotonic()
            done = bisect.bisect_right(batch.done_ok, clock)
            counts = (total, done, bisect.bisect_right(batch.done_failed, clock))
        return wire.openai_batch(
            batch.id,
            status=batch.status,
            input_file_id=batch.input_file_id,
            model=batch.model,
            created_at=batch.created_at,
            stamps=batch.stamps,
            counts=counts,
            metadata=batch.metadata,
            errors=batch.errors,
            output_file_id=batch.output_file_id,
            error_file_id=batch.error_file_id,
            usage=batch.usage,
            endpoint=batch.endpoint,
        )

    def _anthropic_object(self, batch: _Batch) -> dict[str, Any]:
        counts = batch.counts or {"processing": len(batch.lines)}
        results_url = f"{batch.base_url}/v1/messages/batches/{batch.id}/results"
        return wire.message_batch(
            batch.id,
            status=batch.status,
            counts=counts,
            created_at=batch.created_at,
            ended_at=batch.stamps.get("ended_at"),
            cancel_initiated_at=batch.stamps.get("cancel_initiated_at"),
            results_url=results_url if batch.status == "ended" else None,
        )


def _snapshot(batch: _Batch) -> ScriptedBatch:
    lines = batch.lines
    return ScriptedBatch(
        id=batch.id,
        provider=batch.provider,
        status=batch.status,
        custom_ids=tuple(line.custom_id for line in lines),
        requests=tuple(line.request for line in lines),
        metadata=dict(batch.metadata) if batch.metadata is not None else None,
        cancelled=batch.cancelled_at is not None,
        outcomes=tuple(batch.outcomes) if batch.outcomes is not None else ("pending",) * len(lines),
    )


def _page(
    items: list[_Paged], limit: int, *, after: str | None = None, before: str | None = None
) -> tuple[list[_Paged], bool]:
    """One page of `items` (newest first): the `limit` after the item `after`, or the `limit`
    just before the item `before`; and whether more follow in that direction."""
    ids = [item.id for item in items]
    if after is not None:
        if after not in ids:
            raise wire.Refused(400, f"after: no object with id {after!r} to page after.", "after")
        start = ids.index(after) + 1
        return items[start : start + limit], start + limit < len(items)
    if before is not None:
        if before not in ids:
            raise wire.Refused(400, f"before_id: no object with id {before!r}.", "before_id")
        end = ids.index(before)
        return items[max(0, end - limit) : end], end - limit > 0
    return items[:limit], limit < len(items)
