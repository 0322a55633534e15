"""`healjson batch --batch-api` progress on stderr, from the runner's events.

What it shows, refreshed at each poll: the round, each batch in flight and the provider's status
for it, the rows decided so far by verdict, the rows still waiting, the time elapsed and an
estimate of the time left (from the rate rows were decided at in this run). On a terminal: a
rich live display. Elsewhere (a file, a pipe): a plain line (and one per batch in flight) at a
poll that changed something, or when nothing did for `PLAIN_QUIET_S` seconds.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

__all__ = ["PLAIN_QUIET_S", "ApiProgress", "batch_api_progress"]

PLAIN_QUIET_S: Final = 60.0
"""When nothing changed, the longest a plain display stays silent."""

Event = Callable[[str, Mapping[str, Any]], None]


class ApiProgress:
    """The state a Batch API run's events describe, as text."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.started = clock()
        self.batches: dict[str, tuple[int, str]] = {}  # batch id: (round, provider status)
        self.parts: dict[int, str] = {}  # a part's batch id
        self.counts: dict[str, int] = {}
        self.decided_at_start: int | None = None

    def update(self, name: str, info: Mapping[str, Any]) -> bool:
        """Take one event in; True when it brings new counts (a moment to show them)."""
        batch_id = info.get("batch_id")
        if name == "submitted" and isinstance(batch_id, str):
            self.parts[int(info.get("part", -1))] = batch_id
            self.batches[batch_id] = (int(info.get("round", 0)), "submitted")
        elif name == "polled" and isinstance(batch_id, str):
            round_ = self.batches.get(batch_id, (0, ""))[0]
            self.batches[batch_id] = (round_, str(info.get("status")))
        elif name == "collected":
            self.batches.pop(self.parts.pop(int(info.get("part", -1)), ""), None)
        elif name == "progress":
            self.counts = {k: int(v) for k, v in info.items() if isinstance(v, int)}
            if self.decided_at_start is None:
                self.decided_at_start = self.counts.get("done", 0)
            return True
        return False

    def lines(self) -> list[str]:
        """The display: the rows and times, then one line per batch in flight."""
        counts = self.counts
        done, pending = counts.get("done", 0), counts.get("pending", 0)
        rounds = sorted({round_ for round_, _ in self.batches.values()})
        where = f"round {', '.join(map(str, rounds))}" if rounds else "no batch in flight"
        elapsed = self.clock() - self.started
        head = (
            f"healjson batch --batch-api: {where}; {done}/{done + pending} row(s) decided "
            f"(healed {counts.get('healed', 0)}, degraded {counts.get('degraded', 0)}, "
            f"invalid input {counts.get('invalid', 0)} this run), {pending} waiting; "
            f"{_clock(elapsed)} elapsed, ETA {self.eta(elapsed)}"
        )
        batches = [
            f"  round {round_}: batch {batch_id} {status}"
            for batch_id, (round_, status) in sorted(self.batches.items(), key=lambda b: b[1])
        ]
        return [head, *batches]

    def eta(self, elapsed: float) -> str:
        """The time left at the rate rows were decided in this run ("unknown" before any)."""
        pending = self.counts.get("pending", 0)
        if pending == 0:
            return _clock(0.0)
        decided = self.counts.get("done", 0) - (self.decided_at_start or 0)
        if decided <= 0 or elapsed <= 0:
            return "unknown"
        return _clock(elapsed * pending / decided)


@contextlib.contextmanager
def batch_api_progress(
    show: bool,
    *,
    terminal: bool | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[Event | None]:
    """Progress on stderr for a Batch API run; yields the runner's `on_event` (None: hidden)."""
    if not show:
        yield None
        return
    if terminal is None:
        terminal = sys.stderr.isatty()
    state = ApiProgress(clock)
    if not terminal:
        with _plain(state, clock) as on_event:
            yield on_event
        return
    from rich.console import Console
    from rich.live import Live
    from rich.text import Text

    with Live(Text("healjson batch --batch-api: starting"), console=Console(stderr=True)) as live:

        def on_live_event(name: str, info: Mapping[str, Any]) -> None:
            if state.update(name, info):
                live.update(Text("\n".join(state.lines())))

        yield on_live_event


@contextlib.contextmanager
def _plain(state: ApiProgress, clock: Callable[[], float]) -> Iterator[Event]:
    shown: list[Any] = [None, -PLAIN_QUIET_S]  # what was last shown, and when

    def on_event(name: str, info: Mapping[str, Any]) -> None:
        if not state.update(name, info):
            return
        now = clock()
        seen = (state.counts, sorted(state.batches.items()))
        if seen != shown[0] or now - shown[1] >= PLAIN_QUIET_S:
            _print(state.lines())
            shown[:] = [seen, now]

    yield on_event


def _print(lines: list[str]) -> None:
    print("\n".join(lines), file=sys.stderr, flush=True)


def _clock(seconds: float) -> str:
    whole = int(seconds + 0.5)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"
