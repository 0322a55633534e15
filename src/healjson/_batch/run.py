"""Run a batch: heal every pending job, some at a time, while one writer appends the rows.

Rows are written in the order they finish, not in input order. This module does no terminal
output: the command line passes a callback for its progress bar.

`stop_after=N` ends a run once N rows in a row (in the order they finish) failed on the endpoint
(`ENDPOINT_FAILURES`): the rows in flight are cancelled and the rest never start, so none of
them is written and a re-run picks them up. A row that had finished when a run stopped is
written all the same (it was paid for), unless it failed on the endpoint too.

A provider error that every row would get as well (`every_row_error`: the key refused, HTTP 401
or 403; the model or the endpoint not found, HTTP 404) ends a run at the first row that gets it,
`stop_after` or not: that row is not written either, so every row the run did not finish is one
a re-run sends (`stats.stopped_by` says what the provider answered).
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from healjson._core.diagnostic import Diagnostic, Source
from healjson._core.outcome.attempt import Reason
from healjson._core.outcome.outcome import Degraded, Outcome

from .input_file import check_ids, input_keys, select
from .output_file import OutputFile
from .rows import BatchError, Job, invalid_row, outcome_row

__all__ = [
    "ENDPOINT_FAILURES",
    "Batch",
    "BatchStats",
    "Heal",
    "every_row_error",
    "most_common_provider_error",
    "openai_healer",
    "provider_error",
]

ENDPOINT_FAILURES = frozenset({"api_error", "timeout"})
"""The degraded reasons that mean the endpoint failed (not the model's answer)."""

Heal = Callable[[Job], Awaitable[Outcome[Any]]]


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
    cost: float | None = 0.0
    """USD over the written rows; None once a row's cost could not be known."""
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
    endpoint_failed: int = 0
    """Written rows degraded because the endpoint failed (`ENDPOINT_FAILURES`)."""
    failing_in_a_row: int = 0
    """Endpoint failures since the last row the endpoint answered."""
    stopped: bool = False
    """True when `stop_after` ended the run early, or a provider error every row would get."""
    stopped_by: str | None = None
    """The provider's error (with its fix) that every row would get, when it ended the run."""
    provider_errors: Counter[str] = field(default_factory=Counter)
    """The provider's error answers the written rows degraded with (`provider_error`)."""

    @property
    def complete(self) -> bool:
        """True when every row this run owed was written."""
        return self.written == self.total

    @property
    def endpoint_down(self) -> bool:
        """True when rows went to the endpoint and every one of them failed there."""
        sent = self.written - self.invalid
        return sent > 0 and self.endpoint_failed == sent


@dataclass
class Batch:
    """An input file and an output file, opened for one run (the output is locked meanwhile).

    `Batch.open` reads what the output already holds, so `stats.total` is known before
    `run` starts (for a progress bar); call `close` (or use `with`) when done.
    """

    input_path: Path
    out_path: Path
    stats: BatchStats = field(default_factory=BatchStats)
    _output: OutputFile | None = None
    _done: set[str] = field(default_factory=set)

    @classmethod
    def open(
        cls, input_path: Path, out_path: Path, *, retry: frozenset[str] = frozenset()
    ) -> Batch:
        """Lock and recover the output, take out the rows to `retry` (degraded reasons), then
        count the input (raises `BatchError`, before the output is touched when two input lines
        would give rows the same id)."""
        if not input_path.is_file():
            raise BatchError(f"no input file at {input_path}")
        check_ids(input_path)
        wanted = input_keys(input_path) if retry else frozenset()
        output = OutputFile(out_path, retry, wanted)
        batch = cls(input_path, out_path, _output=output, _done=set(output.recovered.keys))
        batch.stats.retried = output.retried
        batch.stats.torn_line_dropped = output.recovered.torn
        batch.stats.unreadable_rows = output.recovered.unreadable
        try:
            for status, _ in select(input_path, batch._done):
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
        stop_after: int | None = None,
    ) -> BatchStats:
        """Heal every pending job, `concurrency` at a time; one writer appends the rows.

        With `stop_after`, stop once that many rows in a row failed on the endpoint
        (`stats.stopped`); the rows not finished by then are not written."""
        if self._output is None:
            raise RuntimeError("this batch is closed")
        output = self._output
        jobs = (job for status, job in select(self.input_path, self._done) if status == "todo")
        queue: asyncio.Queue[tuple[dict[str, Any], Outcome[Any] | None] | None] = asyncio.Queue(
            maxsize=2 * concurrency
        )

        async def work() -> None:
            for job in jobs:  # one shared iterator: each job goes to exactly one worker
                if self.stats.stopped:
                    return
                row = await self._row(job, heal, full)
                said = None if row is None or row[1] is None else every_row_error(row[1])
                if said is not None:  # every other row would get it too: send no more
                    self.stats.stopped, self.stats.stopped_by = True, said
                    return  # not written: a re-run after the fix sends it again
                if row is not None:
                    await queue.put(row)

        async def produce() -> None:
            try:
                async with asyncio.TaskGroup() as workers:
                    for _ in range(max(1, concurrency)):
                        workers.create_task(work())
            finally:
                await queue.put(None)

        async def write(producer: asyncio.Task[None]) -> None:
            while (item := await queue.get()) is not None:
                row, outcome = item
                if self.stats.stopped and _failed_on_the_endpoint(outcome):
                    continue  # what the stop is about: not written, a re-run sends it
                # any other row finished before or after the stop is written: it was paid for
                await asyncio.to_thread(output.write, row)
                self._count(outcome, row.get("ok") is True)
                if on_row is not None:
                    on_row(self.stats)
                if stop_after is not None and self.stats.failing_in_a_row >= stop_after:
                    self.stats.stopped = True
                    producer.cancel()  # its `finally` still ends the queue

        async with asyncio.TaskGroup() as group:
            producer = group.create_task(produce())
            group.create_task(write(producer))
        return self.stats

    async def _row(
        self, job: Job, heal: Heal, full: bool
    ) -> tuple[dict[str, Any], Outcome[Any] | None] | None:
        if job.problem is not None:
            return invalid_row(job), None
        try:
            outcome = await heal(job)
        except RecursionError:  # an answer nested past every reader: a row all the same
            outcome = unreadable_outcome()
        except Exception as exc:  # healjson never raises at call time: this is a bug
            self.stats.failed += 1
            if self.stats.first_failure is None:
                self.stats.first_failure = f"id {job.id!r}: {type(exc).__name__}: {exc}"
            return None
        return outcome_row(job, outcome, full=full), outcome

    def _count(self, outcome: Outcome[Any] | None, ok: bool) -> None:
        """Count a written row: healed when the row is `ok` (a healed value that could not be
        written as it is counts as degraded, as its row says)."""
        stats = self.stats
        stats.written += 1
        if outcome is None:
            stats.invalid += 1
            return
        if ok:
            stats.healed += 1
            stats.failing_in_a_row = 0
        else:
            stats.degraded += 1
            if str(getattr(outcome, "reason", "")) in ENDPOINT_FAILURES:
                stats.endpoint_failed += 1
                stats.failing_in_a_row += 1
                said = provider_error(outcome)
                if said is not None:
                    stats.provider_errors[said] += 1
            else:
                stats.failing_in_a_row = 0
        stats.calls += outcome.calls
        stats.tokens += outcome.usage.total_tokens
        cost = outcome.usage.cost
        stats.cost = None if cost is None or stats.cost is None else stats.cost + cost


def _failed_on_the_endpoint(outcome: Outcome[Any] | None) -> bool:
    return outcome is not None and str(getattr(outcome, "reason", "")) in ENDPOINT_FAILURES


def unreadable_outcome() -> Outcome[Any]:
    """The outcome of a row whose answer could not be read at all (nested past the readers'
    bound): degraded as `invalid_output`, so its row is written like any other."""
    problem = Diagnostic(
        path="<root>",
        value=None,
        constraint="the answer nests too deep to be read",
        prescription="Answer with the JSON value asked for, nested as its schema says.",
        source=Source.SYNTAX,
    )
    return Degraded(reason=Reason.INVALID_OUTPUT, raw_text=None, errors=(problem,))


def provider_error(outcome: Outcome[Any]) -> str | None:
    """What the provider answered when it refused the outcome's last call, with the fix:
    `HTTP 404 (model_not_found): The model ... - Check the model name: ...`; None when the run
    did not end on an HTTP error answer (it healed, or the connection failed)."""
    if outcome.ok:
        return None
    for diagnostic in getattr(outcome, "errors", ()):
        if diagnostic.source is Source.API and diagnostic.rule:
            said = diagnostic.constraint.removeprefix("the provider refused the call: ")
            return f"{said} - {diagnostic.prescription}"
    return None


_EVERY_ROW_STATUSES = frozenset({401, 403, 404})
"""HTTP statuses about the key, the model or the endpoint, not the row: every row gets them."""


def every_row_error(outcome: Outcome[Any]) -> str | None:
    """The provider's error (as `provider_error` says it) when the outcome's last call got
    an answer every other row would get too: the key refused (401, 403), the model or the
    endpoint not found (404); else None."""
    for diagnostic in getattr(outcome, "errors", ()):
        if diagnostic.source is Source.API and diagnostic.rule:
            status = diagnostic.rule.removeprefix("HTTP ").split(" ", 1)[0]
            if status.isdigit() and int(status) in _EVERY_ROW_STATUSES:
                return provider_error(outcome)
    return None


def most_common_provider_error(errors: Counter[str]) -> str | None:
    """`N row(s): <the provider's error and its fix>` for the most frequent one, or None."""
    if not errors:
        return None
    said, count = errors.most_common(1)[0]
    more = f" ({len(errors) - 1} other kind(s))" if len(errors) > 1 else ""
    return f"the provider's most common error, {count} row(s){more}: {said}"


def openai_healer(
    client: Any,
    *,
    model: str,
    response_model: Any,
    contracts: tuple[Any, ...] = (),
    examples: tuple[Any, ...] = (),
    policy: Any = None,
) -> Heal:
    """A `heal(job)` that sends the job's request (its messages, context and own parameters)
    through a `healjson.wrap`-ped async client.

    The healer is built once here, so a bad model or contract raises before any row is written.
    """
    client.healer(response_model, contracts, policy, None, examples)

    async def heal(job: Job) -> Outcome[Any]:
        outcome: Outcome[Any] = await client.chat.completions.create(
            model=model,
            messages=[dict(message) for message in job.messages],
            response_model=response_model,
            contracts=contracts,
            examples=examples,
            policy=policy,
            context=job.context,
            **job.params,
        )
        return outcome

    return heal
