"""Calls to a provider's Batch API that outlast its transient failures, for a bounded time.

Polling a batch and reading its results are safe to repeat, so a transient failure (HTTP 408,
409, 429, 5xx, a connection or timeout error), after the SDK's own retries, is retried here
with capped exponential backoff and jitter (`FIRST_DELAY_S` doubling up to `MOST_DELAY_S`, each
delay drawn from its upper half) until `RETRY_FOR_S` seconds of failures in a row have passed;
then `ProviderUnavailable` stops the run cleanly (the ledger is at a step boundary: running
the same command again resumes). A provider's final answer, an HTTP 4xx status other than 408,
409 and 429 (a refused key, no Batch API at this endpoint, a batch it does not know), is
`ProviderRefused`: retrying would get the same answer. Any other exception is raised as it is.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any, TypeVar

from healjson._core.redact import redact_text
from healjson._core.wire.fault import ProviderFault, fault_from_exception

from .result_lines import is_transient_status

__all__ = [
    "FIRST_DELAY_S",
    "MOST_DELAY_S",
    "NO_BATCH_API",
    "RETRY_FOR_S",
    "ProviderRefused",
    "ProviderUnavailable",
    "Stoppable",
    "is_transient",
    "patiently",
    "refused",
]

FIRST_DELAY_S = 1.0
MOST_DELAY_S = 60.0
RETRY_FOR_S = 900.0
"""How long transient failures in a row are retried before the run stops (15 minutes)."""

NO_BATCH_API = (
    "this endpoint has no Batch API; run without --batch-api (or check the base URL: the "
    "provider's Batch API is under /v1)"
)
"""The fix for a 404 on an upload, a create or a list of batches."""

_CONNECTION_ERRORS = frozenset({"APIConnectionError", "APITimeoutError", "TransportError"})

T = TypeVar("T")


class ProviderUnavailable(Exception):
    """The provider kept failing transiently for longer than `RETRY_FOR_S`: the run stops,
    resumable."""


class ProviderRefused(ProviderUnavailable):
    """The provider gave a final answer to a step (an HTTP 4xx other than 408, 409, 429): the
    run stops; running it again gets the same answer until what it says is fixed. `fault` is
    what it said; the message (redacted) names the step, the answer and the fix."""

    def __init__(self, what: str, fault: ProviderFault, fix: str | None = None) -> None:
        self.what, self.fault = what, fault
        said = redact_text(f"{what} was refused: {fault.said()}")
        super().__init__(f"{said} - {fix or fault.advice()}")

    @property
    def about_the_key(self) -> bool:
        """True for a refused key (HTTP 401, 403): an answer about the key, not the batch."""
        return self.fault.status in (401, 403)

    def sending(self) -> ProviderRefused:
        """This answer to a step that sends or looks for a batch (an upload, a create, a list):
        a 404 there means the endpoint has no Batch API (vLLM, Ollama, llama.cpp have none)."""
        if self.fault.status != 404:
            return self
        return ProviderRefused(self.what, self.fault, NO_BATCH_API)


def refused(exc: BaseException, what: str) -> ProviderRefused | None:
    """`exc` as the provider's final answer to `what` (an HTTP 4xx, not transient), or None."""
    fault = fault_from_exception(exc)
    if fault is None or not 400 <= fault.status < 500 or is_transient(exc):
        return None
    return ProviderRefused(what, fault)


def is_transient(exc: BaseException) -> bool:
    """True for a failure worth retrying: an HTTP status 408, 409, 429 or 5xx (an SDK's
    `status_code`), a connection or timeout error (the SDKs', httpx's, the OS's)."""
    if is_transient_status(getattr(exc, "status_code", None)):
        return True
    if isinstance(exc, ConnectionError | TimeoutError):
        return True
    return any(cls.__name__ in _CONNECTION_ERRORS for cls in type(exc).__mro__)


def patiently(
    call: Callable[[], T],
    what: str,
    *,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    on_retry: Callable[[BaseException, float], None] | None = None,
) -> T:
    """`call()`, retried after transient failures (see the module); `what` names it in the
    `ProviderUnavailable` raised once they have gone on for `RETRY_FOR_S` seconds."""
    start = clock()
    failures = 0
    while True:
        try:
            return call()
        except Exception as exc:
            if not is_transient(exc):
                final = refused(exc, what)
                if final is not None:
                    raise final from exc
                raise
            delay = min(MOST_DELAY_S, FIRST_DELAY_S * 2.0**failures) * (0.5 + random.random() / 2)
            failures += 1
            failing = clock() - start
            if failing + delay > RETRY_FOR_S:
                raise ProviderUnavailable(
                    f"{what} failed {failures} time(s) in a row for {failing:.0f} s, the last "
                    f"time with {describe(exc)}"
                ) from exc
            if on_retry is not None:
                on_retry(exc, delay)
            sleep(delay)


def describe(exc: BaseException) -> str:
    """A failure in one line: its HTTP status when it has one, its type and message."""
    status = getattr(exc, "status_code", None)
    head = f"HTTP {status} " if isinstance(status, int) else ""
    text = " ".join(str(exc).split())[:300]
    return f"{head}{type(exc).__name__}: {text}" if text else f"{head}{type(exc).__name__}"


class Stoppable:
    """Turns `ProviderUnavailable` into `report.stopped` (a `RunReport`; `report.refused` for a
    `ProviderRefused`): the call ends cleanly."""

    def __init__(self, report: Any) -> None:
        self.report = report

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: object, exc: object, traceback: object) -> bool:
        if isinstance(exc, ProviderUnavailable):
            self.report.stopped = str(exc)
            self.report.refused = isinstance(exc, ProviderRefused)
            return True
        return False
