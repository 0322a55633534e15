"""Rounds through a provider's Batch API: heal every result locally, resubmit only repairs.

Round 0 sends every input row's first request. When a batch ends, each result goes through
L1 + L2 here (the engine, replayed from the row's stored results): a healed row, or a row that
degraded for good (refusal, content filter, an errored or expired line, attempts spent), is
written to the output file; a row that needs a repair gets its full-context repair request in
the next round's batch. The run ends when every row is written.

Every step is recorded in the ledger (`ledger.py`) before the next one starts, so the run can
be killed at any point and resumed by running it again: nothing is lost, no row is written
twice, no round is submitted twice. `wait=False` submits what can be submitted and returns (a
later call collects); `cancel` stops the batches in flight cleanly.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from healjson._batch.input_file import select
from healjson._batch.output_file import OutputFile
from healjson._batch.rows import Job, invalid_row, outcome_row, row_key
from healjson._core.effects import CallResult, ModelCall
from healjson._core.healer import Healer
from healjson._core.outcome import Outcome
from healjson._core.redact import redact_data, redact_text, secrets_scope
from healjson._core.replay import failed, replied
from healjson.adapters._format import JsonMode

from .ledger import Ledger, Part, Row
from .providers import Provider, Result
from .requests import custom_id, parse_custom_id, request_body

__all__ = ["BATCH_DISCOUNT", "Event", "RoundSummary", "RunReport", "Runner", "ledger_report"]

BATCH_DISCOUNT: Final = 0.5
"""OpenAI's and Anthropic's batch price: half the listed price."""
_DECIDE_CHUNK: Final = 500  # rows replayed and written per step (one fsync, one transaction)

Event = Callable[[str, Mapping[str, Any]], None]
"""`on_event(name, info)`: each step of the run as it happens (`uploading`, `submitting`,
`submitted`, `polled`, `collected`, `writing`, `written`, ...)."""


@dataclass
class RoundSummary:
    """One round: its batches, requests, answers and spend."""

    round: int
    batches: int = 0
    requests: int = 0
    answered: int = 0
    failed: int = 0
    in_flight: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float | None = 0.0


@dataclass
class RunReport:
    """Where a Batch API run stands (after `run`, or read from the ledger by `status`)."""

    total: int = 0
    done: int = 0
    pending: int = 0
    written: int = 0
    """Rows written to the output by this call."""
    healed: int = 0
    degraded: int = 0
    invalid: int = 0
    already_done: int = 0
    duplicates: int = 0
    rounds: list[RoundSummary] = field(default_factory=list)
    batch_ids: list[str] = field(default_factory=list)
    """The batches still in flight (submitted, not ended)."""

    @property
    def complete(self) -> bool:
        return self.pending == 0

    @property
    def calls(self) -> int:
        return sum(r.requests for r in self.rounds)

    @property
    def tokens(self) -> int:
        return sum(r.prompt_tokens + r.completion_tokens for r in self.rounds)

    @property
    def cost(self) -> float | None:
        costs = [r.cost for r in self.rounds]
        return None if any(c is None for c in costs) else sum(c or 0.0 for c in costs)


class Runner:
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
        on_event: Event | None = None,
        sleep: Callable[[float], None] = time.sleep,
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
        self.on_event = on_event
        self.sleep = sleep
        self.report = RunReport()
        self._lines: dict[int, list[bytes]] = {}  # a part's request lines, while in memory
        self._output: OutputFile | None = None
        self._written: set[str] = set()

    # -- the run ----------------------------------------------------------------------------

    def run(self, *, wait: bool = True, poll_interval_s: float = 15.0) -> RunReport:
        """Take the input in, then round after round until every row is written (`wait`), or
        until everything that can be submitted is (`wait=False`)."""
        with secrets_scope(self.secrets_of), self._opened():
            self._intake()
            while True:
                for part in self.ledger.parts("state = 'ended'"):  # killed before collecting
                    self._collect(part)
                self._advance()
                for part in self.ledger.in_flight():
                    self._send(part)
                flying = [p for p in self.ledger.in_flight() if p.state == "submitted"]
                if not flying or not wait:
                    break
                if not self._poll(flying):
                    self.sleep(poll_interval_s)
        return self.status()

    def cancel(self, *, poll_interval_s: float = 1.0) -> RunReport:
        """Cancel the batches in flight and keep what they answered; the rows they did not
        answer run again on the next `run`."""
        with secrets_scope(self.secrets_of), self._opened():
            for flying in self.ledger.in_flight():
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
                    self.provider.cancel(part.batch_id)
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
        known = self.ledger.keys()
        batch: list[tuple[str, str | int, int, Sequence[Mapping[str, Any]]]] = []
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
            elif job.key not in known:
                batch.append((job.key, job.id, job.line, job.messages))
            if len(batch) >= _DECIDE_CHUNK:
                self.ledger.add_rows(batch)
                batch.clear()
        self.ledger.add_rows(batch)
        if invalid:
            self._write(invalid)
            self.report.invalid += len(invalid)
        self.ledger.set_meta("intake", version)
        self._event("intake", rows=sum(self.ledger.counts().values()))

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
            else:
                finished.append((row, step))
        rows_out: list[dict[str, Any]] = []
        for row, outcome in finished:
            if outcome is _NO_OUTCOME:
                continue
            job = Job(row.ident, row.line, row.messages)
            rows_out.append(outcome_row(job, outcome, full=self.full))
            if outcome.ok:
                self.report.healed += 1
            else:
                self.report.degraded += 1
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
            file_id = self.provider.upload(self._part_lines(part), name)
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
            batch_id = self.provider.create(
                part.file_id, self._part_lines(part), self._metadata(part)
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
        return self.provider.find(self._metadata(part), part.requests, since, known)

    def _poll(self, parts: Iterable[Part], *, cancelled: bool = False) -> bool:
        """Check each batch; collect those that ended. True when any did."""
        any_ended = False
        for part in parts:
            assert part.batch_id is not None
            state = self.provider.retrieve(part.batch_id)
            self._event("polled", part=part.id, batch_id=part.batch_id, status=state.status)
            if not state.ended:
                continue
            any_ended = True
            self.ledger.update_part(part.id, state="ended", status=state.status)
            self._collect(self.ledger.part(part.id), cancelled=cancelled, error=state.error)
        return any_ended

    def _collect(self, part: Part, *, cancelled: bool = False, error: str | None = None) -> None:
        """Store an ended batch's results in its rows (one transaction)."""
        assert part.batch_id is not None
        if error is None and part.status == "failed":  # resumed: ask again why
            error = self.provider.retrieve(part.batch_id).error
        members = {row.seq for row in self.ledger.rows("part = ?", (part.id,))}
        took = max(time.time() - (part.submitted_at or time.time()), 0.0)
        results: dict[int, Result] = {}
        for name, result in self.provider.results(part.batch_id):
            found = parse_custom_id(name)
            if found is None or found[0] not in members or found[1] != part.round:
                continue
            results[found[0]] = _redacted(result, took)
        status = part.status or ""
        stopped = cancelled or status in ("cancelled", "canceled", "cancelling", "canceling")
        if not stopped:
            why = error or f"the batch ended ({status}) without a result for this request"
            for seq in members - results.keys():
                results[seq] = Result(failure="api_error", message=redact_text(why), elapsed_s=took)
        usage = _usage(results.values())
        state = "cancelled" if stopped else "collected"
        self.ledger.collect(part, results, usage, state=state)
        self._event("collected", part=part.id, round=part.round, results=len(results))

    # -- helpers ----------------------------------------------------------------------------

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
        step = self.healer._replay(
            row.messages, [_call_result(r) for r in row.results], **self.params
        )
        if not isinstance(step, ModelCall):
            return step
        body = request_body(self.provider.name, step, self.healer.target, self.json_mode)
        return self.provider.request_line(custom_id(row.seq, row.round), body)

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

    def _event(self, name: str, **info: Any) -> None:
        if self.on_event is not None:
            self.on_event(name, info)


def ledger_report(ledger: Ledger, report: RunReport | None = None) -> RunReport:
    """Where a run stands, from its ledger alone (no provider call); `report`: the counts of
    the current call, completed here."""
    report = RunReport() if report is None else report
    counts = ledger.counts()
    report.done, report.pending = counts.get("done", 0), counts.get("pending", 0)
    report.total = report.done + report.pending
    rounds: dict[int, RoundSummary] = {}
    report.batch_ids = []
    for part in ledger.parts():
        summary = rounds.setdefault(part.round, RoundSummary(part.round))
        if part.batch_id is not None:
            summary.batches += 1
        summary.requests += part.requests if part.state != "cancelled" else part.answered
        summary.answered += part.answered
        summary.failed += part.failed
        summary.prompt_tokens += part.prompt_tokens
        summary.completion_tokens += part.completion_tokens
        if part.state in ("submitting", "submitted", "ended"):
            summary.in_flight += 1
            if part.batch_id:
                report.batch_ids.append(part.batch_id)
        if summary.cost is not None and part.state in ("collected", "cancelled"):
            summary.cost = None if part.cost is None else summary.cost + part.cost
    report.rounds = [rounds[key] for key in sorted(rounds)]
    return report


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


def _key_of(row: Mapping[str, Any]) -> str:
    return row_key(row) or ""


def _call_result(result: Result) -> CallResult:
    if result.body is not None:
        return replied(dict(result.body), result.elapsed_s)
    if result.failure == "timeout":
        return failed("timeout", result.message, result.elapsed_s)
    return failed("api_error", result.message, result.elapsed_s)


def _redacted(result: Result, elapsed_s: float) -> Result:
    """A result as the ledger stores it (and the rows are replayed from): every string through
    the redactor, the model's text included (a key it echoed is stored redacted)."""
    if result.body is not None:
        body = redact_data(result.body, by_name=False)  # the body's own names are the provider's
        return Result(body=body, elapsed_s=elapsed_s)
    message = redact_text(result.message)
    return Result(failure=result.failure, message=message, elapsed_s=elapsed_s)


def _usage(results: Iterable[Result]) -> tuple[int, int, float | None]:
    prompt = completion = 0
    cost: float | None = 0.0
    for result in results:
        if result.body is None:
            continue
        usage = replied(dict(result.body)).reply
        if usage is None or usage.usage is None:
            cost = None
            continue
        prompt += usage.usage.prompt_tokens
        completion += usage.usage.completion_tokens
        spent = usage.usage.cost
        cost = None if spent is None or cost is None else cost + spent * BATCH_DISCOUNT
    return prompt, completion, cost
