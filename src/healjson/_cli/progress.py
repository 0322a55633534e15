"""The progress bars `batch` and `eval` draw on stderr (rich, imported only when shown)."""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from healjson._batch.run import BatchStats

__all__ = ["PLAIN_INTERVAL_S", "batch_counts", "batch_progress", "eval_progress"]


PLAIN_INTERVAL_S = 2.0
"""How often `batch --progress` writes a plain progress line when stderr is no terminal."""


def batch_counts(stats: BatchStats) -> str:
    """The row counts, as both the progress and the summary show them."""
    return f"healed {stats.healed}, degraded {stats.degraded}, invalid input {stats.invalid}"


@contextlib.contextmanager
def batch_progress(
    show: bool, total: int, *, terminal: bool | None = None
) -> Iterator[Callable[[BatchStats], None] | None]:
    """Progress on stderr; yields the per-row callback (None when hidden).

    On a terminal: a rich bar with the counts, rows per second and the time left. Elsewhere (a
    file, a pipe): one plain line every `PLAIN_INTERVAL_S` seconds and one at the end."""
    if not show:
        yield None
        return
    if terminal is None:
        terminal = sys.stderr.isatty()
    if not terminal:
        with _plain_batch_progress(total, PLAIN_INTERVAL_S) as on_plain_row:
            yield on_plain_row
        return
    from rich.progress import TextColumn, TimeRemainingColumn

    progress = _stderr_progress(  # fits 80 columns: bar, done/total, counts, rate, time left
        TextColumn(
            "healed {task.fields[healed]} · degraded {task.fields[degraded]} · "
            "invalid {task.fields[invalid]}"
        ),
        TextColumn("{task.fields[rate]} rows/s"),
        TextColumn("ETA"),
        TimeRemainingColumn(),
        bar_width=10,
    )
    task = progress.add_task("batch", total=total, healed=0, degraded=0, invalid=0, rate="0.0")
    started = time.monotonic()

    def on_row(stats: BatchStats) -> None:
        progress.update(
            task,
            completed=stats.written,
            healed=stats.healed,
            degraded=stats.degraded,
            invalid=stats.invalid,
            rate=f"{_rate(stats.written, time.monotonic() - started):.1f}",
        )

    with progress:
        yield on_row


@contextlib.contextmanager
def _plain_batch_progress(total: int, interval: float) -> Iterator[Callable[[BatchStats], None]]:
    """A plain progress line on stderr every `interval` seconds (from a thread, so it keeps
    coming while rows are slow) and once at the end."""
    stream = sys.stderr
    started = time.monotonic()
    latest: list[BatchStats] = []
    stop = threading.Event()

    def line() -> str:
        elapsed = time.monotonic() - started
        if not latest:
            return f"healjson batch: 0/{total} row(s), {_clock(elapsed)} elapsed"
        stats = latest[0]
        rate = _rate(stats.written, elapsed)
        left = total - stats.written
        eta = _clock(left / rate) if rate > 0 else "unknown"
        return (
            f"healjson batch: {stats.written}/{total} row(s) ({batch_counts(stats)}), "
            f"{rate:.1f} rows/s, ETA {eta}"
        )

    def tick() -> None:
        while not stop.wait(interval):
            print(line(), file=stream, flush=True)

    def on_row(stats: BatchStats) -> None:
        if not latest:
            latest.append(stats)

    ticker = threading.Thread(target=tick, name="healjson-progress", daemon=True)
    ticker.start()
    try:
        yield on_row
    finally:
        stop.set()
        ticker.join()
        print(line(), file=stream, flush=True)


def _rate(done: int, elapsed: float) -> float:
    return done / elapsed if elapsed > 0 else 0.0


def _clock(seconds: float) -> str:
    whole = int(seconds + 0.5)
    return f"{whole // 3600}:{whole // 60 % 60:02d}:{whole % 60:02d}"


@contextlib.contextmanager
def eval_progress(show: bool, total: int, configs: Sequence[Any]) -> Iterator[Any]:
    """A rich progress bar on stderr with each configuration's passes so far (None: hidden)."""
    if not show:
        yield None
        return
    from rich.progress import TextColumn

    names = [config.name for config in configs]
    passed = dict.fromkeys(names, 0)
    done = dict.fromkeys(names, 0)

    def tally() -> str:
        return " · ".join(f"{n} {passed[n]}/{done[n]} passed" for n in names)

    bar = _stderr_progress(TextColumn("{task.fields[tally]}"))
    task = bar.add_task("eval", total=total, tally=tally())

    def on_unit(unit: Any) -> None:
        done[unit.config] += 1
        passed[unit.config] += unit.passed
        bar.update(task, advance=1, tally=tally())

    with bar:
        yield on_unit


def _stderr_progress(*columns: Any, bar_width: int = 16) -> Any:
    """A rich progress display on stderr: a bar and done/total, then `columns`."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress

    return Progress(
        BarColumn(bar_width=bar_width),
        MofNCompleteColumn(),
        *columns,
        console=Console(stderr=True),
    )
