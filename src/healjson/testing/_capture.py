"""`capture_events`: healjson's events collected as dicts while a block runs, for tests.

structlog's `structlog.testing.capture_logs` is the model: a context manager that yields a list
and fills it. The difference is the scope. `capture_logs` configures structlog for the whole
process while it runs; `capture_events` changes nothing process-wide: it is a
`with healjson.set_logger(...)` block underneath, so it collects the events of the runs started
in its thread or asyncio task (and in what inherits that context: tasks created inside it,
`asyncio.to_thread`, healjson's own worker threads), and two blocks in concurrent tests never
see each other's events.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["capture_events"]

# the fields an event carries only with `include_content=True`, by event
_CONTENT = {
    "healjson.attempt": ("raw_text",),
    "healjson.diagnostic": ("value",),
    "healjson.repair_request": ("prompt",),
}


class _Collector:
    """A structlog-style logger (`.debug` / `.info` / `.warning(event, **fields)`) that appends
    each event to its list as a dict, and hands it on to the block it is nested in."""

    __slots__ = ("events", "include_content", "outer")

    def __init__(self, include_content: bool, outer: _Collector | None) -> None:
        self.events: list[dict[str, Any]] = []
        self.include_content = include_content
        self.outer = outer

    def _collect(self, level: str, event: str, fields: dict[str, Any]) -> None:
        collector: _Collector | None = self
        while collector is not None:
            entry = {"event": event, "log_level": level, **fields}
            if not collector.include_content:
                for name in _CONTENT.get(event, ()):
                    entry.pop(name, None)
            collector.events.append(entry)  # one `append`: safe from several threads
            collector = collector.outer

    def debug(self, event: str, **fields: Any) -> None:
        self._collect("debug", event, fields)

    def info(self, event: str, **fields: Any) -> None:
        self._collect("info", event, fields)

    def warning(self, event: str, **fields: Any) -> None:
        self._collect("warning", event, fields)

    @property
    def wants_content(self) -> bool:
        """Whether this block or one it is nested in asked for the model's text."""
        return self.include_content or (self.outer is not None and self.outer.wants_content)


_ACTIVE: ContextVar[_Collector | None] = ContextVar("healjson_capture_events", default=None)


@contextmanager
def capture_events(*, include_content: bool = False) -> Iterator[list[dict[str, Any]]]:
    """Collect healjson's events while the block runs, each as a dict, in the order sent.

    ```python
    with healjson.testing.capture_events() as events:
        healjson.Healer(Ticket).run(call, "triage this")
    assert "healjson.healed" == events[-1]["event"]
    ```

    Each dict has `event` (`healjson.attempt`, `healjson.healed`, ...), `log_level` (`"debug"`,
    `"info"` or `"warning"`), `run_id` (every event of a run has it) and the event's own fields,
    redacted as every emitted field is. `include_content=True` adds the model's text
    (`raw_text`, `prompt`, a diagnostic's `value`), as `set_logger(..., include_content=True)`
    does.

    The scope is the current thread or asyncio task, like `with healjson.set_logger(...)`:
    runs started inside the block are collected, in this thread, in tasks created inside it, in
    `asyncio.to_thread` and in healjson's own threads (they carry the caller's context). A plain
    `threading.Thread` (or a `ThreadPoolExecutor` worker) started inside the block does not
    carry it: start its target through `contextvars.copy_context().run` to collect its runs too.
    Nothing is configured process-wide, so concurrent tests each see their own events, and
    after the block the previous logger is back.

    Blocks nest: an event is collected by the innermost block and by every block around it,
    each with the content it asked for. A `with healjson.set_logger(...)` block inside this
    one takes the events for its own span instead.
    """
    import healjson

    outer = _ACTIVE.get()
    collector = _Collector(include_content, outer)
    token = _ACTIVE.set(collector)
    try:
        with healjson.set_logger(collector, include_content=collector.wants_content):
            yield collector.events
    finally:
        _ACTIVE.reset(token)
