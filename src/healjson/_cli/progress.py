"""The progress bars `batch` and `eval` draw on stderr (rich, imported only when shown)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .batch_run import BatchStats

__all__ = ["batch_progress", "eval_progress"]


@contextlib.contextmanager
def batch_progress(show: bool, total: int) -> Iterator[Callable[[BatchStats], None] | None]:
    """A rich progress bar on stderr; yields the per-row callback (None when hidden)."""
    if not show:
        yield None
        return
    from rich.progress import TextColumn, TimeElapsedColumn

    progress = _stderr_progress(  # fits 80 columns: bar, done/total, the counters, elapsed time
        TextColumn(
            "healed {task.fields[healed]} · degraded {task.fields[degraded]} · "
            "calls {task.fields[calls]} · tokens {task.fields[tokens]}"
        ),
        TimeElapsedColumn(),
    )
    task = progress.add_task("batch", total=total, healed=0, degraded=0, calls=0, tokens=0)

    def on_row(stats: BatchStats) -> None:
        progress.update(
            task,
            completed=stats.written,
            healed=stats.healed,
            degraded=stats.degraded + stats.invalid,
            calls=stats.calls,
            tokens=stats.tokens,
        )

    with progress:
        yield on_row


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


def _stderr_progress(*columns: Any) -> Any:
    """A rich progress display on stderr: a bar and done/total, then `columns`."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress

    return Progress(
        BarColumn(bar_width=16), MofNCompleteColumn(), *columns, console=Console(stderr=True)
    )
