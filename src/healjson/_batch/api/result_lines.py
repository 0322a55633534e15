"""A provider's batch result file read line by line, whatever a line holds: each becomes a
`Result` for its request, never an exception.

A result line is read in bounded memory (`bounded_lines`: a line longer than
`MAX_RESULT_LINE_BYTES` is skipped on in chunks, only its head kept) and must be a JSON object
nested at most `MAX_RESULT_DEPTH` levels. A line that is not (too long, not UTF-8, not JSON,
nested too deeply) still names its request when its first bytes hold a `custom_id` this run
made (`row-<n>_r<round>`, as both providers write it first): that request's result is an
`api_error` saying why; a line naming no request is skipped (the request then has no result,
which the runner makes an `api_error` too). So one hostile line costs its own row, never the
run.

What a readable line means is its wire format's business (`healjson._providers.BATCH`, each
format's `batch_result`), as is which failures a later round resubmits (`Result.retry`): a
request the batch's window closed on, and one the provider failed with a transient HTTP status
(`TRANSIENT_STATUSES`: 408, 409, 429, 5xx) or error type. Any other failure is final. Nothing
here knows a provider's line shape.

A result is kept in the ledger redacted (`redacted`), and a row's results become the engine's
model calls when its run is replayed (`attempts`, `call_result`): the run is judged on what the
ledger keeps, on the first run and after a resume alike. A reply's answer (its text, its tool
calls) is the value's source, so an answer the redactor would change (the client's key, a
credential name or shape in it) cannot be kept as the model gave it: it is kept redacted and
marked (`ALTERED_KEY`), and replayed as an `api_error` saying so (`ALTERED`), costing what the
reply reported, never judged on text the model did not send (the rule of `healjson._durable`).

What a failed request cost (`spent`), by the rule the live path's calls follow
(`drive.call_failed`): an error answer from the provider (its `fault`: an HTTP status of 400 or
more, as its result line gives it or names it by an error type) is one request and no token
(the providers bill none); a request its batch never ran (it expired, `NOT_RUN`: canceled
before it ran, or in a batch that failed as a whole) is no request at all; a body that is no
reply of its format but says what it cost in its format's usage member is one request of that
usage, as the provider reported it (`call_result`); any other failure (no answer, or none that
can be read or told apart) may have run: one request, its prompt's tokens estimated from its
request (`estimated`), marked `estimated`. A request resubmitted as
it was is no model attempt and counts nothing, as an SDK's own retries count nothing on the
live path.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

from healjson._batch.request import deeper_than
from healjson._core.redact import redact_data, redact_text
from healjson._core.run.replay import replied
from healjson._core.wire.effects import CallFailure, CallResult, FailureKind, reported_usage
from healjson._core.wire.fault import ProviderFault
from healjson._core.wire.reply import Usage, call_usage, to_reply
from healjson._providers._batch_results import (
    EXPIRED_MESSAGE,
    TRANSIENT_STATUSES,
    Result,
    is_transient_status,
    unreadable,
)

__all__ = [
    "ALTERED",
    "ALTERED_KEY",
    "EXPIRED_MESSAGE",
    "MAX_RESULT_DEPTH",
    "MAX_RESULT_LINE_BYTES",
    "NOT_RUN",
    "TRANSIENT_STATUSES",
    "Result",
    "attempts",
    "bounded_lines",
    "call_result",
    "estimated",
    "is_transient_status",
    "not_run",
    "read_result_line",
    "redacted",
    "spent",
    "unreadable",
]

MAX_RESULT_LINE_BYTES = 32 * 1024 * 1024
"""Longest result line read (a model's answer is far shorter); a longer one is an `api_error`."""
MAX_RESULT_DEPTH: Final = 128
"""Deepest nesting accepted in a result line (a response needs about 10 levels)."""
NOT_RUN: Final = "not_run"
"""The `Result.failure` of a request its batch never ran (canceled before it ran, or in a batch
that failed as a whole): the row degrades with `api_error`, and the request counts nothing."""
ALTERED: Final = (
    "the model's answer held what healjson never records (the client's key, or a credential "
    "name or shape); the Batch API ledger keeps it redacted, and the row degrades rather than "
    "heal an answer the redaction changed"
)
"""The failure of a reply whose answer the redactor changed (see the module docstring)."""
ALTERED_KEY: Final = "healjson_altered"
"""The member marking a kept body whose answer the redactor changed."""
_HEAD_BYTES: Final = 4096
_CUSTOM_ID: Final = re.compile(rb'"custom_id"\s*:\s*"(row-\d{1,18}_r\d{1,6})"')


def bounded_lines(
    chunks: Iterable[bytes], limit: int | None = None
) -> Iterator[tuple[bytes, bool]]:
    """The lines of a byte stream as `(line, too_long)`, newline excluded, in memory bounded by
    `limit` (default `MAX_RESULT_LINE_BYTES`): a longer line is skipped up to its newline and
    kept as its first bytes only. Linear: each byte is searched for a newline once."""
    limit = MAX_RESULT_LINE_BYTES if limit is None else limit
    parts: list[bytes] = []
    size = 0  # bytes in `parts`: the line so far, or (skipping) its head so far
    skipping = False
    for chunk in chunks:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            if skipping:
                if size < _HEAD_BYTES:
                    parts.append(piece[: _HEAD_BYTES - size])
                    size += len(parts[-1])
            elif size + len(piece) > limit:
                head = (b"".join(parts) + piece[:_HEAD_BYTES])[:_HEAD_BYTES]
                parts, size, skipping = [head], len(head), True
            else:
                parts.append(piece)
                size += len(piece)
            if end < 0:
                break
            yield b"".join(parts), skipping
            parts, size, skipping = [], 0, False
            start = end + 1
    if skipping or size:
        yield b"".join(parts), skipping


def read_result_line(line: bytes, too_long: bool = False) -> tuple[str | None, Any, str | None]:
    """`(custom_id, line object, None)`, or `(custom_id or None, None, why the line cannot be
    read)`; never an exception. Blank lines give `(None, None, None)`."""
    if not too_long and not line.strip():
        return None, None, None
    head = _CUSTOM_ID.search(line[:_HEAD_BYTES])
    named = head[1].decode() if head is not None else None
    if too_long:
        return named, None, f"is longer than {MAX_RESULT_LINE_BYTES} bytes"
    try:
        data = json.loads(line.decode("utf-8"))
    except UnicodeDecodeError as exc:
        return named, None, f"is not UTF-8 ({exc.reason})"
    except RecursionError:
        return named, None, "is nested too deeply to read"
    except ValueError as exc:
        return named, None, f"is not valid JSON ({exc})"
    if not isinstance(data, dict):
        return None, None, "is not a JSON object"
    custom_id = data.get("custom_id")
    if not isinstance(custom_id, str):
        return named, None, "has no custom_id"
    if deeper_than(data, MAX_RESULT_DEPTH):
        return custom_id, None, f"nests deeper than {MAX_RESULT_DEPTH} levels"
    return custom_id, data, None


# -- results as the ledger keeps them, and as the engine replays them ----------------------


def attempts(
    results: Sequence[Result], resubmits: int, read: Sequence[CallResult | None] = ()
) -> list[CallResult]:
    """A row's results as the engine's model calls: the first `resubmits` transient failures
    left out (their requests were sent again as they were); a later one is a failed call that
    says how often it was resubmitted. `read[i]`, when set, is result `i` already read."""
    calls: list[CallResult] = []
    spent = 0
    for index, result in enumerate(results):
        known = read[index] if index < len(read) else None
        if known is not None and result.body is not None:
            calls.append(known)
            continue
        final = result
        if result.body is None and result.retry:
            if spent < resubmits:
                spent += 1
                continue
            if resubmits:
                note = f" (resubmitted {spent} time(s), the most allowed: resubmits={resubmits})"
                final = dataclasses.replace(result, message=result.message + note)
        calls.append(call_result(final))
    return calls


def not_run(message: str) -> Result:
    """The result of a request its batch never ran (see `NOT_RUN`)."""
    return Result(failure=NOT_RUN, message=message)


_ERROR_ANSWER: Final = Usage(requests=1)
_NOTHING: Final = Usage()


def spent(result: Result) -> Usage | None:
    """What a failed request cost (see the module docstring): one request and no token for an
    error answer, nothing for a request never run; None when it may have run without an answer
    (`estimated` makes its usage from its request)."""
    fault = result.fault
    if fault is not None and fault.status >= 400:
        return _ERROR_ANSWER
    if result.failure in ("timeout", NOT_RUN):  # expired, canceled: never sent to the model
        return _NOTHING
    return None


def call_result(result: Result) -> CallResult:
    """A result as the engine's model call: the reply, or the failure with what it cost (None
    when that is to be estimated from the request: `estimated`); a body that is no reply
    costs the usage it reported, if any (as `drive.call_failed` counts it)."""
    if result.body is not None:
        body = dict(result.body)
        altered = body.pop(ALTERED_KEY, None) is True
        call = replied(body, result.elapsed_s)
        if call.failure is None:
            if altered:  # judged on the model's answer or not at all: its reported cost counts
                assert call.reply is not None
                failure = CallFailure("api_error", ALTERED, usage=call.reply.usage)
                return CallResult(None, failure, result.elapsed_s)
            return call
        usage = _reported(body)  # the failure path only: read again for what it said
        if usage is None:
            return call
        return dataclasses.replace(call, failure=dataclasses.replace(call.failure, usage=usage))
    kind: FailureKind = "timeout" if result.failure == "timeout" else "api_error"
    failure = CallFailure(kind, result.message, fault=result.fault, usage=spent(result))
    return CallResult(None, failure, result.elapsed_s)


def _reported(body: Mapping[str, Any]) -> Usage | None:
    """What a body that is no reply said it cost (its format's usage member), if it said."""
    try:
        to_reply(dict(body))
    except TypeError as exc:
        usage = reported_usage(exc)
        return None if usage is None else call_usage(usage, (), 0)
    return None


def estimated(call: CallResult, sent: Sequence[Mapping[str, Any]]) -> CallResult:
    """A failed call that may have run without an answer, costing what the live path counts
    for one (`call_usage`): one request, the prompt of `sent` (its request's messages)
    estimated, nothing received, marked `estimated`."""
    assert call.failure is not None
    usage = call_usage(None, sent, 0)
    return dataclasses.replace(call, failure=dataclasses.replace(call.failure, usage=usage))


def redacted(result: Result, elapsed_s: float) -> Result:
    """A result as the ledger stores it (and the rows are replayed from): every string through
    the redactor, the model's text included (a key it echoed is stored redacted); a body whose
    answer that changed is marked `ALTERED_KEY` (replayed as a failure: see the module
    docstring)."""
    if result.body is not None:
        body = redact_data(result.body, by_name=False)  # the body's own names are the provider's
        if isinstance(body, dict) and _answer(body) != _answer(result.body):
            body = {**body, ALTERED_KEY: True}
        return Result(body=body, elapsed_s=elapsed_s)
    message = redact_text(result.message)
    fault = _redacted_fault(result.fault)
    return Result(
        failure=result.failure,
        message=message,
        elapsed_s=elapsed_s,
        retry=result.retry,
        fault=fault,
    )


def _answer(body: Mapping[str, Any]) -> list[str | None] | None:
    """The answer a body holds (its text and its tool calls), None for a body that is no reply."""
    body = {key: value for key, value in body.items() if key != ALTERED_KEY}
    try:
        reply = to_reply(body)
    except TypeError:
        return None
    calls = (part for call in reply.tool_calls for part in (call.name, call.arguments, call.id))
    return [reply.content, *calls]


def _redacted_fault(fault: ProviderFault | None) -> ProviderFault | None:
    if fault is None:
        return None
    code, message, param = (
        None if text is None else redact_text(text)
        for text in (fault.code, fault.message, fault.param)
    )
    return dataclasses.replace(fault, code=code, message=message, param=param)
