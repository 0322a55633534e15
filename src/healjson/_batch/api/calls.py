"""The rounds runner's calls to a provider's Batch API, and what it does with their failures.

`ProviderCalls` is what `Runner` (`runner.py`) inherits for them: a call safe to repeat (a poll,
a download, a listing) is retried while the provider fails transiently (`patience`); one that is
not (an upload, a create) stops the run at the first failure. A final answer (an HTTP 4xx other
than 408, 409, 429; `ProviderRefused`) stops the run, except what it says about a submitted
batch: a refused key (401, 403) leaves the part as it was, any other answer about a poll, a
download or a cancel is final for that part (`_lose`): the provider no longer knows the batch
(another key or project, a deleted batch) or cannot give its results (an expired file). The part
is closed (`failed`, or `cancelled` by a cancel) and its rows are `lost`: they may have run and
been billed, so they are sent again only with `resubmit_lost=True`, at the risk of paying twice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, Final, TypeVar

from healjson._core.redact import redact_text

from .ledger import Ledger, Part
from .patience import (
    ProviderRefused,
    ProviderUnavailable,
    describe,
    is_transient,
    patiently,
    refused,
)
from .providers import Provider
from .report import RunReport

__all__ = ["CANCELLED_HERE", "LOST", "Event", "ProviderCalls"]

T = TypeVar("T")

Event = Callable[[str, Mapping[str, Any]], None]
"""`on_event(name, info)`: each step of the run as it happens (`uploading`, `submitting`,
`submitted`, `polled`, `retrying`, `collected`, `lost`, `writing`, `written`, ...), and at each
poll `progress` (the rows decided and waiting)."""

LOST: Final = (
    "the provider does not know this batch or cannot give its results: {count} row(s) marked "
    "lost; they may have run and been billed. Re-run with --resubmit-lost "
    "(resubmit_lost=True) to send them again, at the risk of paying twice"
)
CANCELLED_HERE: Final = (
    "the provider does not know this batch: it is cancelled here, and its {count} row(s) "
    "marked lost; they may have run and been billed. Re-run with --resubmit-lost "
    "(resubmit_lost=True) to send them again, at the risk of paying twice"
)


class ProviderCalls:
    """The provider calls of a run, for a class that has these attributes (`Runner`)."""

    provider: Provider
    ledger: Ledger
    report: RunReport
    on_event: Event | None
    sleep: Callable[[float], None]

    def _patiently(self, call: Callable[[], T], what: str) -> T:
        """`call()` (safe to repeat), retried while the provider fails transiently."""

        def retrying(exc: BaseException, delay: float) -> None:
            self._event("retrying", what=what, error=describe(exc), delay_s=round(delay, 3))

        return patiently(call, what, sleep=self.sleep, on_retry=retrying)

    def _about(
        self, part: Part, call: Callable[[], T], what: str, cancelled: bool = False
    ) -> T | None:
        """`call()` about `part`'s submitted batch, as `_patiently`; None when the provider's
        final answer made the part lost (`_lose`: in a cancel)."""
        try:
            return self._patiently(call, what)
        except ProviderRefused as final:
            self._lose(part, final, cancelled=cancelled)
            return None

    def _lose(self, part: Part, final: ProviderRefused, *, cancelled: bool = False) -> None:
        """The provider's final answer about `part`'s batch: a refused key stops the run (the
        part kept); any other closes the part and marks its rows lost, then stops a run (a
        cancel goes on: the part is cancelled here, and the report says so)."""
        if final.about_the_key:
            raise final
        state = "cancelled" if cancelled else "failed"
        count = self.ledger.lose(part, redact_text(final.fault.said()), state=state)
        fix = (CANCELLED_HERE if cancelled else LOST).format(count=count)
        said = ProviderRefused(final.what, final.fault, fix)
        self._event("lost", part=part.id, batch_id=part.batch_id, rows=count)
        if not cancelled:
            raise said from final
        self.report.notices.append(str(said))

    def _once(self, call: Callable[[], T], what: str) -> T:
        """`call()` (not safe to repeat): a transient failure stops the run, resumable; so does
        the provider's final answer (nothing was submitted)."""
        try:
            return call()
        except Exception as exc:
            if is_transient(exc):
                raise ProviderUnavailable(f"{what} failed with {describe(exc)}") from exc
            final = refused(exc, what)
            if final is not None:
                raise final.sending() from exc
            raise

    def _cancel(self, part: Part) -> None:
        """Ask the provider to cancel `part`'s batch. A batch that already ended is no failure,
        whatever the provider answers for it (a conflict, HTTP 409, or another refusal): a
        refused cancel of a batch the provider reports ended is taken as done, and the poll
        that follows collects it; a batch the provider does not know is cancelled here."""
        batch_id = part.batch_id
        assert batch_id is not None
        try:
            self.provider.cancel(batch_id)
        except Exception as exc:
            if getattr(exc, "status_code", None) == 409:
                return
            if is_transient(exc):
                raise ProviderUnavailable(f"cancelling failed with {describe(exc)}") from exc
            final = refused(exc, f"cancelling batch {batch_id}")
            if final is None:
                raise
            if final.about_the_key:
                raise final from exc
            retrieve = partial(self.provider.retrieve, batch_id)
            try:
                state = self._patiently(retrieve, f"checking batch {batch_id}")
            except ProviderRefused as unknown:
                self._lose(part, final if final.fault.status == 404 else unknown, cancelled=True)
                return
            if not state.ended:
                raise final from exc

    def _event(self, name: str, **info: Any) -> None:
        if self.on_event is not None:
            self.on_event(name, info)
