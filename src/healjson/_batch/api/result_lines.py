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

Which failures a later round resubmits (`Result.retry`): a request the batch's window closed on
(OpenAI `batch_expired`, Anthropic `expired`), and one the provider failed with a transient
HTTP status (`TRANSIENT_STATUSES`: 408, 409, 429, 5xx; Anthropic `api_error`,
`overloaded_error`, `rate_limit_error`, `timeout_error`). Any other failure is final.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from healjson._batch.request import deeper_than

__all__ = [
    "EXPIRED_MESSAGE",
    "MAX_RESULT_DEPTH",
    "MAX_RESULT_LINE_BYTES",
    "TRANSIENT_STATUSES",
    "Result",
    "anthropic_result",
    "bounded_lines",
    "is_transient_status",
    "openai_result",
    "read_result_line",
]

MAX_RESULT_LINE_BYTES = 32 * 1024 * 1024
"""Longest result line read (a model's answer is far shorter); a longer one is an `api_error`."""
MAX_RESULT_DEPTH: Final = 128
"""Deepest nesting accepted in a result line (a response needs about 10 levels)."""
TRANSIENT_STATUSES: Final = frozenset({408, 409, 429})
"""HTTP statuses besides 5xx that say "try again later"."""
EXPIRED_MESSAGE: Final = (
    "the provider's batch completion window ended before this request ran (batch_expired)"
)
_HEAD_BYTES: Final = 4096
_ANTHROPIC_TRANSIENT: Final = frozenset(
    {"api_error", "overloaded_error", "rate_limit_error", "timeout_error"}
)
_CUSTOM_ID: Final = re.compile(rb'"custom_id"\s*:\s*"(row-\d{1,18}_r\d{1,6})"')


@dataclass(frozen=True, slots=True)
class Result:
    """One request's result as the ledger keeps it: `body` (the provider's response: a chat
    completion or a message, as JSON data) or `failure` (`api_error`, `timeout`) with a
    message; `retry`: the failure is transient (the request may be sent again as it was)."""

    body: Mapping[str, Any] | None = None
    failure: str | None = None
    message: str = ""
    elapsed_s: float = 0.0
    """The batch's turnaround: from its submission to the moment its results were read."""
    retry: bool = False

    def to_json(self) -> Any:
        data: dict[str, Any]
        if self.body is not None:
            data = {"body": self.body}
        else:
            data = {"failure": self.failure, "message": self.message}
            if self.retry:
                data["retry"] = True
        return data | {"elapsed_s": self.elapsed_s}

    @classmethod
    def from_json(cls, data: Any) -> Result:
        elapsed = data.get("elapsed_s") if isinstance(data, dict) else None
        took = float(elapsed) if isinstance(elapsed, int | float) else 0.0
        if isinstance(data, dict) and isinstance(data.get("body"), dict):
            return cls(body=data["body"], elapsed_s=took)
        if isinstance(data, dict):
            failure = str(data.get("failure") or "api_error")
            retry = data.get("retry") is True
            return cls(
                failure=failure, message=str(data.get("message")), elapsed_s=took, retry=retry
            )
        return cls(failure="api_error", message=f"the ledger holds no result here: {data!r}")


def is_transient_status(status: object) -> bool:
    """True for an HTTP status worth trying again: 408, 409, 429 and 5xx."""
    return type(status) is int and (status in TRANSIENT_STATUSES or 500 <= status <= 599)


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


def unreadable(problem: str) -> Result:
    """The result of a request whose result line cannot be read."""
    return Result(
        failure="api_error",
        message=f"the provider's result line for this request {problem}: it cannot be used",
    )


def openai_result(line: Mapping[str, Any]) -> Result:
    """One line of an OpenAI batch's output or error file as a `Result`."""
    response = line.get("response")
    error = line.get("error")
    if isinstance(response, dict):
        status = response.get("status_code")
        body = response.get("body")
        if status == 200 and isinstance(body, dict):
            return Result(body=body)
        message = _http_message(status, body)
        return Result(failure="api_error", message=message, retry=is_transient_status(status))
    if isinstance(error, dict) and error.get("code") == "batch_expired":
        return Result(failure="timeout", message=EXPIRED_MESSAGE, retry=True)
    said = error.get("message") if isinstance(error, dict) else None
    return Result(failure="api_error", message=str(said or "no response"))


def anthropic_result(line: Mapping[str, Any]) -> Result | None:
    """One line of a Message Batch's results as a `Result` (None: `canceled`, no result)."""
    result = line.get("result")
    kind = result.get("type") if isinstance(result, dict) else None
    if kind == "succeeded":
        assert isinstance(result, dict)
        message = result.get("message")
        if isinstance(message, dict):
            return Result(body=message)
        return unreadable("holds no message")
    if kind == "errored":
        assert isinstance(result, dict)
        error = result.get("error")
        inner = error.get("error", error) if isinstance(error, dict) else error
        if not isinstance(inner, dict):
            return Result(failure="api_error", message=str(inner))
        said = inner.get("message")
        text = str(said) if said else json.dumps(inner, ensure_ascii=False)[:500]
        retry = inner.get("type") in _ANTHROPIC_TRANSIENT
        return Result(failure="api_error", message=text, retry=retry)
    if kind == "expired":
        return Result(failure="timeout", message=EXPIRED_MESSAGE, retry=True)
    if kind == "canceled":
        return None  # the row runs again in a later batch
    return unreadable(f"has an unknown result type {str(kind)[:100]!r}")


def _http_message(status: Any, body: Any) -> str:
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return f"HTTP {status}: {message or json.dumps(body, ensure_ascii=False)[:500]}"
