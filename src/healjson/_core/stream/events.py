"""What a streamed run hands its caller, in order: snapshots, items, text pieces, the outcome.

A reader (`reading`) turns each chunk of a streamed call into these; the driver (`run.drive`)
passes them on and ends with `Done`; the objects a caller iterates (`run.streams`) read them.
"""

from __future__ import annotations

from typing import Any

from healjson._core.outcome.outcome import Outcome

from .partial import Partial

__all__ = ["HELD", "Done", "Event", "Item", "Snapshot", "Text"]


class Snapshot:
    """A JSON answer as it stands after a chunk (a read-only partial view)."""

    __slots__ = ("attempt", "partial")

    def __init__(self, attempt: int, partial: Partial[Any]) -> None:
        self.attempt = attempt
        self.partial = partial


class Item:
    """An item of a list answer, complete and judged (`HELD` when it failed its checks)."""

    __slots__ = ("attempt", "index", "value")

    def __init__(self, attempt: int, index: int, value: Any) -> None:
        self.attempt = attempt
        self.index = index
        self.value = value


class Text:
    """A piece of a tool-call answer's message text."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class Done:
    """The run's outcome: the last event of every run."""

    __slots__ = ("outcome",)

    def __init__(self, outcome: Outcome[Any]) -> None:
        self.outcome = outcome


Event = Snapshot | Item | Text | Done

HELD: Any = object()
"""The value of an `Item` event for an item that failed its checks (held, not handed out)."""
