"""Rounds through a provider's Batch API: heal every result locally, resubmit only repairs.

Round 0 sends every input row's first request. When a batch ends, each result goes through
L1 + L2 here (the engine, replayed from the row's stored results): a healed row, or a row that
degraded for good (refusal, content filter, an errored line, attempts spent), is written to the
output file; a row that needs a repair gets its full-context repair request in the next round's
batch. The run ends when every row is written.

Resubmits: a line that expired (the batch's window ended before it ran) or failed for a
transient reason (HTTP 408, 409, 429, 5xx; `result_lines`) is sent again as it was in the next
round: not a repair, and not a model attempt (the engine never sees that result). Each row is
resubmitted at most `resubmits` times (default `DEFAULT_RESUBMITS`); the next such failure
degrades it (`timeout` for an expired line, else `api_error`) with the provider's reason.

Every step is recorded in the ledger (`ledger.py`) before the next one starts, so the run can
be killed at any point and resumed by running it again: nothing is lost, no row is written
twice, no round is submitted twice. `wait=False` submits what can be submitted and returns (a
later call collects); `cancel` stops the batches in flight cleanly.

A provider failing transiently: polls and result downloads are retried with backoff for a
bounded time (`patience`); uploads and batch creations are not (a retried create could submit
a round twice: the next run looks the batch up instead). When the provider is still failing,
the call stops at a step boundary with `RunReport.stopped` saying why: nothing is lost, and
running it again resumes.

A provider's final answer (an HTTP 4xx other than 408, 409, 429) stops the run cleanly too,
saying what it answered and the fix; about a submitted batch it may make the batch's rows `lost`
(`calls.py`: the provider calls, and the rule).
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Final, TypeVar

from healjson._batch.input_file import check_ids, select
from healjson._batch.output_file import OutputFile
from healjson._batch.rows import Job, id_key, invalid_row, line_key, outcome_row, row_key
from healjson._batch.run import provider_error
from healjson._core.outcome.outcome import Outcome
from healjson._core.redact import redact_text, secrets_scope
from healjson._core.run.healer import Healer
from healjson._core.wire.effects import CallResult, ModelCall
from healjson._core.wire.reply import Usage
from healjson._providers.tiers import JsonMode

from .calls import Event, ProviderCalls
from .ledger import Ledger, NewRow, Part, Row
from .patience import ProviderRefused, Stoppable
from .providers import Provider
from .report import RoundSummary, RunReport, ledger_report
from .requests import custom_id, parse_custom_id, request_body
from .result_lines import (
    EXPIRED_MESSAGE,
    NOT_RUN,
    Result,
    attempts,
    call_result,
    estimated,
    not_run,
    redacted,
)
from .spend import BATCH_DISCOUNT, added, part_usage

__all__ = [
    "BATCH_DISCOUNT",
    "DEFAULT_RESUBMITS",
    "Event",
    "RoundSummary",
    "RunReport",
    "Runner",
    "ledger_report",
]

DEFAULT_RESUBMITS: Final = 3
"""How many times a row's request is sent again after it expired or failed transiently."""
_TWO_RESULTS: Final = (
    "the batch's results held two different results for this request: neither was taken"
)
_DECIDE_CHUNK: Final = 500  # rows replayed and written per step (one fsync, one transaction)

T = TypeVar("T")


class Runner(ProviderCalls):
    """One Batch API run: an input file, an output file, a ledger and a provider."""

    def __init__(
        self,
        *,
        input_path: Path,
        out_path: Path,
        ledger: Ledger,
        provider: Provider,
        healer: Healer[Any],
        model: str,
        json_mode: JsonMode = "json_schema",
        params: Mapping[str, Any] | None = None,
        full: bool = False,
        secrets_of: Any = None,
        max_requests: int | None = None,
        max_bytes: int | None = None,
        resubmits: int = DEFAULT_RESUBMITS,
        on_event: Event | None = None,
        sleep: Callable[[float], None] = time.sleep,
        resubmit_lost: bool = False,
    ) -> None:
        self.input_path = input_path
        self.out_path = out_path
        self.ledger = ledger
        self.provider = provider
        self.healer = healer
        self.params = {"model": model, **(params or {})}
        self.json_mode: JsonMode = json_mode
        self.full = full
        self.secrets_of = secrets_of
        self.max_requests = min(max_requests or provider.max_requests, provider.max_requests)
        self.max_bytes = min(max_bytes or provider.max_bytes, provider.max_bytes)
        self.resubmits = max(0, resubmits)
        self.on_event = on_event
        self.sleep = sleep
        self.resubmit_lost = resubmit_lost
        self.report = RunReport()
        self._lines: dict[int, list[bytes]] = {}  # a part's request lines, while in memory
        # the results collected since the last `_advance`, read once as replies: `_step` takes
        # them from here instead of reading them again, `_advance` drops what is left
        self._fresh: dict[tuple[int, int], CallResult] = {}
        self._output: OutputFile | None = None
        self._written: set[str] = set()

    # -- the run ----------------------------------------------------------------------------

    def run(self, *, wait: bool = True, poll_interval_s: float = 15.0) -> RunReport:
        """Take the input in, then round after round until every row is written (`wait`), or
        until everything that can be submitted is (`wait=False`)."""
        with secrets_scope(self.secrets_of), self._opened(), self._stoppable():
            self._intake()
            if self.resubmit_lost:
                self.report.resubmitted_lost = self.ledger.revive_lost()
            while True:
                for part in self.ledger.parts("state = 'ended'"):  # killed before collecting
                    self._collect(part)
                self._advance()
                for part in self.ledger.in_flight():
                    self._send(part)
                self._progress()
                flying = [p for p in self.ledger.in_flight() if p.state == "submitted"]
                if not flying or not wait:
                    break
                if not self._poll(flying):
                    self._progress()
                    self.sleep(poll_interval_s)
        return self.status()

    def cancel(self, *, poll_interval_s: float = 1.0) -> RunReport:
        """Cancel the batches in flight and keep what they answered; the rows they did not
        answer run again on the next `run`."""
        with secrets_scope(self.secrets_of), self._opened(), self._stoppable():
            failed: list[Exception] = []  # every part's cancel is attempted, then the first
            for flying in self.ledger.in_flight():  # failure is raised
                part = flying
                if part.state in ("planned", "uploaded"):
                    self.ledger.collect(part, {}, (0, 0, 0.0), state="cancelled")
                    continue
                if part.state == "submitting":
                    found = self._find(part)
                    if found is None:
                        self.ledger.collect(part, {}, (0, 0, 0.0), state="cancelled")
                        continue
                    part = self._submitted(part, found)
                if part.state == "submitted" and part.batch_id is not None:
                    self._event("cancelling", part=part.id, batch_id=part.batch_id)
                    try:
                        self._cancel(part)
                    except Exception as exc:
                        failed.append(exc)
            if failed:
                raise failed[0]
            while waiting := [p for p in self.ledger.in_flight() if p.state == "submitted"]:
                if not self._poll(waiting, cancelled=True):
                    self.sleep(poll_interval_s)
            for part in self.ledger.parts("state = 'ended'"):
                self._collect(part, cancelled=True)
        return self.status()

    def status(self) -> RunReport:
        """Counts and rounds, from the ledger alone (no provider call)."""
        return ledger_report(self.ledger, self.report)

    # -- steps ------------------------------------------------------------------------------

    def _opened(self) -> _Opened:
        return _Opened(self)

    def _intake(self) -> None:
        """Read the input into the ledger (an unreadable line is written at once as an
        `invalid_input` row). Done once per version of the input file: a resumed run skips it,
        a run after the input grew takes the new rows in (the rows already known are kept)."""
        stat = self.input_path.stat()
        version = f"{stat.st_size}:{stat.st_mtime_ns}"
        if self.ledger.meta("intake") == version:
            return
        check_ids(self.input_path)
        known = self.ledger.keys()
        batch: list[NewRow] = []
        invalid: list[dict[str, Any]] = []
        for status, job in select(self.input_path, set(self._written)):
            if status == "done":
                if job.key not in known:
                    self.report.already_done += 1
            elif status == "duplicate":
                self.report.duplicates += 1
            elif job.problem is not None:
                invalid.append(invalid_row(job))
                self._written.add(job.key)
            elif job.key not in known and not self._held_by_line_number(job, known):
                assert job.request is not None  # a job without a problem has one
                batch.append((job.key, job.id, job.line, job.request))
            if len(batch) >= _DECIDE_CHUNK:
                self.ledger.add_rows(batch)
                batch.clear()
        self.ledger.add_rows(batch)
        if invalid:
            self._write(invalid)
            self.report.invalid += len(invalid)
        self.ledger.set_meta("intake", version)
        self._event("intake", rows=sum(self.ledger.counts().values()))

    def _held_by_line_number(self, job: Job, known: set[str]) -> bool:
        """True for a line without an id that a ledger written before such lines had their own
        key holds under its line number's key (the row of that key is this very line)."""
        if not job.implicit:
            return False
        older = id_key(job.line)
        return older in known and self.ledger.line_of(older) == job.line

    def _advance(self) -> None:
        """Decide every row with no request in flight: write its outcome, or put its next
        request into a part of its round; a part is planned and sent as soon as it is full, so
        only one part per round is held in memory."""
        filling: dict[int, _Filling] = {}
        for chunk in self.ledger.unassigned(_DECIDE_CHUNK):
            for round_, seq, line in self._decide(chunk):
                fill = filling.setdefault(round_, _Filling())
                if fill.seqs and (
                    len(fill.seqs) >= self.max_requests or fill.size + len(line) > self.max_bytes
                ):
                    self._plan(round_, fill)
                    filling[round_] = fill = _Filling()
                fill.add(seq, line)
        for round_, fill in sorted(filling.items()):
            if fill.seqs:
                self._plan(round_, fill)
        self._fresh.clear()

    def _decide(self, rows: Sequence[Row]) -> list[tuple[int, int, bytes]]:
        """Write the outcomes of the rows that finished; the next requests of the others, as
        `(round, seq, request line)`."""
        requests: list[tuple[int, int, bytes]] = []
        finished: list[tuple[Row, Outcome[Any]]] = []
        for row in rows:
            if row.key in self._written:  # written before a kill: the output is the record
                finished.append((row, _NO_OUTCOME))
                continue
            step = self._step(row)
            if isinstance(step, bytes):
                requests.append((row.round, row.seq, step))
                if row.results and row.results[-1].retry:
                    self.report.resubmitted += 1
            else:
                finished.append((row, step))
        rows_out: list[dict[str, Any]] = []
        for row, outcome in finished:
            if outcome is _NO_OUTCOME:
                continue
            job = Job(row.ident, row.line, implicit=row.key == line_key(row.line))
            rows_out.append(outcome_row(job, outcome, full=self.full))
            if rows_out[-1]["ok"]:  # a value the redactor would change is written degraded
                self.report.healed += 1
            else:
                self.report.degraded += 1
                _count_provider_error(self.report, outcome)
        if rows_out:
            self._event("writing", rows=len(rows_out))
            self._write(rows_out)
            self._event("written", rows=len(rows_out))
        if finished:
            self.ledger.mark_done([row.seq for row, _ in finished])
        return requests

    def _plan(self, round_: int, fill: _Filling) -> None:
        """Record one part of `round_` (its rows chosen), then send it."""
        (part_id,) = self.ledger.plan(round_, [(fill.seqs, fill.size)], self._token())
        self._lines[part_id] = fill.lines
        self._event("planned", round=round_, parts=1, requests=len(fill.seqs))
        self._send(self.ledger.part(part_id))

    def _send(self, part: Part) -> None:
        """Move a part on: upload its file, then submit its batch (once)."""
        if part.state == "planned":
            self._event("uploading", part=part.id, round=part.round, requests=part.requests)
            name = f"healjson-{part.token}-part{part.id}.jsonl"
            lines = self._part_lines(part)
            file_id = self._once(lambda: self.provider.upload(lines, name), "uploading a batch")
            self.ledger.update_part(part.id, state="uploaded", file_id=file_id)
            part = self.ledger.part(part.id)
            self._event("uploaded", part=part.id, file_id=file_id)
        if part.state == "submitting":
            found = self._find(part)
            if found is not None:
                self._submitted(part, found)
                return
        if part.state in ("uploaded", "submitting"):
            self.ledger.update_part(part.id, state="submitting", submitted_at=time.time())
            self._event("submitting", part=part.id, round=part.round)
            lines, tags = self._part_lines(part), self._metadata(part)
            batch_id = self._once(
                lambda: self.provider.create(part.file_id, lines, tags), "creating a batch"
            )
            self._event("created", part=part.id, batch_id=batch_id)
            self._submitted(part, batch_id)

    def _submitted(self, part: Part, batch_id: str) -> Part:
        self.ledger.update_part(part.id, state="submitted", batch_id=batch_id)
        self._lines.pop(part.id, None)
        self._event("submitted", part=part.id, round=part.round, batch_id=batch_id)
        return self.ledger.part(part.id)

    def _find(self, part: Part) -> str | None:
        """The batch a killed run may have created for `part` before recording it."""
        known = frozenset(p.batch_id for p in self.ledger.parts() if p.batch_id)
        since = part.submitted_at or 0.0
        tags = self._metadata(part)
        try:
            return self._patiently(
                lambda: self.provider.find(tags, part.requests, since, known), "listing batches"
            )
        except ProviderRefused as final:
            raise final.sending() from final

    def _poll(self, parts: Iterable[Part], *, cancelled: bool = False) -> bool:
        """Check each batch; collect those that ended. True when any did."""
        any_ended = False
        for part in parts:
            batch_id = part.batch_id
            assert batch_id is not None
            retrieve = partial(self.provider.retrieve, batch_id)
            state = self._about(part, retrieve, f"checking batch {batch_id}", cancelled)
            if state is None:  # lost (by a cancel): no longer in flight
                any_ended = True
                continue
            self._event("polled", part=part.id, batch_id=part.batch_id, status=state.status)
            if not state.ended:
                continue
            any_ended = True
            self.ledger.update_part(part.id, state="ended", status=state.status)
            self._collect(self.ledger.part(part.id), cancelled=cancelled, error=state.error)
        return any_ended

    def _collect(self, part: Part, *, cancelled: bool = False, error: str | None = None) -> None:
        """Store an ended batch's results in its rows (one transaction)."""
        batch_id = part.batch_id
        assert batch_id is not None
        if error is None and part.status == "failed":  # resumed: ask again why
            retrieve = partial(self.provider.retrieve, batch_id)
            again = self._about(part, retrieve, f"checking batch {batch_id}", cancelled)
            if again is None:
                return
            error = again.error
        members = self.ledger.seqs(part.id)
        took = max(time.time() - (part.submitted_at or time.time()), 0.0)

        def download() -> dict[int, Result]:
            results: dict[int, Result] = {}
            differing: set[int] = set()
            for name, result in self.provider.results(batch_id):
                found = parse_custom_id(name)
                if found is None or found[0] not in members or found[1] != part.round:
                    continue
                seq, kept = found[0], redacted(result, took)
                known = results.get(seq)
                if known is not None and known != kept:
                    if kept.failure == NOT_RUN:  # a request's result outweighs its not-run line
                        continue
                    if known.failure != NOT_RUN:
                        differing.add(seq)
                results[seq] = kept
            for seq in differing:  # neither is the request's result more than the other
                results[seq] = Result(failure="api_error", message=_TWO_RESULTS, elapsed_s=took)
            return results

        results = self._about(part, download, f"reading the results of batch {batch_id}", cancelled)
        if results is None:
            return
        status = part.status or ""
        stopped = cancelled or status in ("cancelled", "canceled", "cancelling", "canceling")
        if stopped:  # the requests it did not run go into a later part
            results = {seq: r for seq, r in results.items() if r.failure != NOT_RUN}
        else:
            if status == "expired" and error is None:  # the window closed on these requests
                missing = Result(failure="timeout", message=EXPIRED_MESSAGE, retry=True)
            elif error is not None:  # the batch failed as a whole (its file refused): none ran
                missing = not_run(redact_text(error))
            else:
                why = f"the batch ended ({status}) without a result for this request"
                missing = Result(failure="api_error", message=redact_text(why))
            for seq in members - results.keys():
                results[seq] = dataclasses.replace(missing, elapsed_s=took)
        calls = {
            seq: call_result(result) for seq, result in results.items() if result.body is not None
        }
        usage = part_usage(self._spent(part, results, calls))
        state = "cancelled" if stopped else "collected"
        self.ledger.collect(part, results, usage, state=state)
        self._fresh.update(((seq, part.round), call) for seq, call in calls.items())
        self._event("collected", part=part.id, round=part.round, results=len(results))

    def _spent(
        self, part: Part, results: Mapping[int, Result], read: Mapping[int, CallResult]
    ) -> Iterable[Usage]:
        """What each of a part's results adds to its row's usage (`spend.added`): the part's
        spend is its rows' (the report counts what the rows count)."""
        for row in self.ledger.rows("part = ?", (part.id,)):
            result = results.get(row.seq)
            if result is None or row.round != part.round:  # as `Ledger.collect` stores them
                continue

            def sent(calls: Sequence[CallResult], row: Row = row) -> Any:
                step = self._replay(row, calls)
                return step.messages if isinstance(step, ModelCall) else None

            usage = added(row.results, result, self.resubmits, sent, read.get(row.seq))
            if usage is not None:
                yield usage

    # -- helpers ----------------------------------------------------------------------------

    def _stoppable(self) -> Stoppable:
        return Stoppable(self.report)

    def _part_lines(self, part: Part) -> list[bytes]:
        lines = self._lines.get(part.id)
        if lines is not None:
            return lines
        rebuilt: list[bytes] = []  # after a resume: the same requests, rebuilt from the results
        for row in self.ledger.rows("part = ?", (part.id,)):
            step = self._step(row)  # the row's round is the part's: its result is not in yet
            if not isinstance(step, bytes):  # cannot happen for a deterministic engine
                raise RuntimeError(f"row {row.ident!r} no longer needs a request")
            rebuilt.append(step)
        self._lines[part.id] = rebuilt
        return rebuilt

    def _step(self, row: Row) -> bytes | Outcome[Any]:
        """The row's run rebuilt from its results: its next request as a batch line, or its
        outcome."""
        fresh = [self._fresh.pop((row.seq, index), None) for index in range(len(row.results))]
        calls = attempts(row.results, self.resubmits, fresh)
        last = calls[-1].failure if calls else None
        if last is not None and last.usage is None:  # it may have run: its request estimated
            sent = self._replay(row, calls[:-1])
            if isinstance(sent, ModelCall):
                calls[-1] = estimated(calls[-1], sent.messages)
        step = self._replay(row, calls)
        if not isinstance(step, ModelCall):
            return step
        endpoint = getattr(self.provider, "endpoint", None)
        body = request_body(self.provider.name, step, self.healer.target, self.json_mode, endpoint)
        return self.provider.request_line(custom_id(row.seq, row.round), body)

    def _replay(self, row: Row, calls: Sequence[CallResult]) -> ModelCall | Outcome[Any]:
        """The row's run given the results of its first calls: its outcome, or its next call."""
        return self.healer.replay(
            row.messages, calls, context=row.context, **{**self.params, **row.params}
        )

    def _metadata(self, part: Part) -> dict[str, str]:
        return {"healjson_run": part.token, "healjson_part": str(part.id)}

    def _token(self) -> str:
        token = self.ledger.meta("token")
        if token is None:
            token = os.urandom(8).hex()
            self.ledger.set_meta("token", token)
        return token

    def _write(self, rows: Sequence[dict[str, Any]]) -> None:
        assert self._output is not None
        self._output.write_many(rows)
        for row in rows:
            self._written.add(_key_of(row))
        self.report.written += len(rows)

    def _progress(self) -> None:
        """The `progress` event, at each poll: the rows decided (`done`: in the ledger, every
        run's; `healed` / `degraded` / `invalid`: this call's) and waiting (`pending`)."""
        if self.on_event is None:
            return
        counts, report = self.ledger.counts(), self.report
        self._event(
            "progress",
            done=counts.get("done", 0),
            pending=counts.get("pending", 0),
            healed=report.healed,
            degraded=report.degraded,
            invalid=report.invalid,
        )


class _Filling:
    """The requests of a part being filled."""

    __slots__ = ("lines", "seqs", "size")

    def __init__(self) -> None:
        self.seqs: list[int] = []
        self.lines: list[bytes] = []
        self.size = 0

    def add(self, seq: int, line: bytes) -> None:
        self.seqs.append(seq)
        self.lines.append(line)
        self.size += len(line)


class _Opened:
    """The output file, locked and recovered, for the length of a run."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner

    def __enter__(self) -> None:
        output = OutputFile(self.runner.out_path)
        self.runner._output = output
        self.runner._written = set(output.recovered.keys)

    def __exit__(self, *exc_info: object) -> None:
        if self.runner._output is not None:
            self.runner._output.close()
            self.runner._output = None


_NO_OUTCOME: Any = object()


def _count_provider_error(report: RunReport, outcome: Outcome[Any]) -> None:
    said = provider_error(outcome)
    if said is not None:
        report.provider_errors[said] += 1


def _key_of(row: Mapping[str, Any]) -> str:
    return row_key(row) or ""
