"""The items of a streamed list on the caller's side: which are handed out, and what became of
each (`item_status`).

A list target's items are handed out in index order (`Tracker.took`): an item waits for every
item before it, and a held item stops the rest of that answer's items (they come after the
run, from the final value: `Tracker.final_items`). At the end every index handed out or seen
has exactly one final `ItemStatus`, computed from the items handed out and the final value:

- a healed list: an item handed out that is not the final one at its index is `retracted` (a
  whole-list repair rewrote the list: the final item there, if the new list has one, is
  handed out after it), whether the final list holds another item there or is shorter; any
  other index of the final list is `streamed` when its item is the first answer's (as it
  arrived, or healed locally without another call), else `repaired`; an index never handed
  out and beyond the final list (an item held, then a shorter list) is `held`;
- no list value (the run degraded): every index is `held`, even an item handed out.

Whether a final item is the first answer's is read, in order, from what is known of it: the
first answer's own items judged during its stream (handed out or waiting: their validated
values, compared), the calls the final value came from (`sources`: an item repair spliced
into a list keeps the rest of it), and, for an item a later call's whole list holds, the first
answer's text when it is JSON (its item at that index, validated as the final item was).
"""

from __future__ import annotations

import json
import re
from typing import Any, Final, Literal

from pydantic import BaseModel
from pydantic_core import to_json

from healjson._core.flags import Flag
from healjson._core.outcome.attempt import Attempt
from healjson._core.outcome.outcome import Healed, Outcome
from healjson._core.repair.items import NOT_SPLICED
from healjson._core.repair.prompt import Strategy

from .events import HELD, Item

__all__ = ["ItemStatus", "Tracker", "sources"]

ItemStatus = Literal["streamed", "repaired", "held", "retracted"]
"""What became of one item of a streamed list: in the final value as the first answer had it
(`streamed`: as it arrived, or healed locally without another call), valid only in a repaired
answer (`repaired`), never handed out and in no value (`held`: never valid, or beyond a shorter
list that replaced it), or handed out and then not at its index in the healed value, because a
repair's answer rewrote the whole list (`retracted`: the final value's item at that index, if
it has one, was handed out after it). In a run that ends `Degraded` every item is `held`, even
one handed out (the outcome says why)."""

_ITEM_PATH: Final = re.compile(r"\[(\d{1,9})\]")
_UNKNOWN: Any = object()


class Tracker:
    """The caller-side state both stream objects share: the outcome and the items' fate."""

    __slots__ = ("first", "given", "item_status", "outcome", "ready", "stopped")

    def __init__(self) -> None:
        self.outcome: Outcome[Any] | None = None
        self.given: list[Any] = []
        """The items handed out, by index."""
        self.ready: dict[int, Any] = {}
        self.stopped: set[int] = set()
        """Attempts in which an item was held: the rest of their items wait for the end."""
        self.first: dict[int, Any] = {}
        """The first answer's items judged valid during its stream, by index."""
        self.item_status: dict[int, ItemStatus] = {}

    def final_items(self) -> list[Any]:
        """At the end: the items of the final value not yet handed out, and the replacements
        of items a whole-list repair rewrote; every index gets its final status (module)."""
        outcome = self.outcome
        self.ready.clear()
        seen = set(self.item_status) | set(range(len(self.given)))
        value = outcome.value if isinstance(outcome, Healed) else None
        if outcome is None or not isinstance(value, list | tuple):
            self.item_status = dict.fromkeys(sorted(seen), "held")  # in no value
            return []
        first_of = _first_items(outcome, self.first)
        status: dict[int, ItemStatus] = {}
        rest = []
        for index, item in enumerate(value):
            if index < len(self.given) and not _equal(self.given[index], item):  # replaced
                status[index] = "retracted"
                self.given[index] = item
                rest.append(item)
                continue
            if index >= len(self.given):
                self.given.append(item)
                rest.append(item)
            status[index] = "streamed" if first_of(index, item) else "repaired"
        for index in sorted(seen):  # beyond the final list (a shorter one replaced it)
            if index >= len(value):
                status[index] = "retracted" if index < len(self.given) else "held"
        self.item_status = status
        return rest

    def took(self, event: Item) -> list[Any]:
        """Note a streamed item; the items it lets out, in index order (none while an earlier
        one is missing, and none after a held one in the same answer)."""
        index, attempt = event.index, event.attempt
        if any(number != attempt for number, _ in self.ready.values()):
            self.ready.clear()  # an earlier answer's items, still waiting: never handed out
        if event.value is HELD:
            self.stopped.add(attempt)
            self.ready.clear()
            if index >= len(self.given):
                self.item_status.setdefault(index, "held")
            return []
        if attempt == 1:
            self.first[index] = event.value
        if index < len(self.given):
            if event.value != self.given[index]:  # this answer replaces one handed out: the
                self.stopped.add(attempt)  # rest of it comes at the end, after the replacement
                self.ready.clear()
            return []
        self.item_status.setdefault(index, "held")  # until it is handed out
        if attempt in self.stopped:
            return []
        self.ready[index] = (attempt, event.value)
        out = []
        while len(self.given) in self.ready:
            number, value = self.ready.pop(len(self.given))
            self.item_status[len(self.given)] = "streamed" if number == 1 else "repaired"
            self.given.append(value)
            out.append(value)
        return out


def _first_items(outcome: Outcome[Any], judged: dict[int, Any]) -> Any:
    """Whether the item at an index of the healed list is the first answer's (module)."""
    first, base, spliced = sources(outcome)
    text: list[Any] | None = None

    def first_of(index: int, item: Any) -> bool:
        nonlocal text
        known = judged.get(index, _UNKNOWN)
        if known is not _UNKNOWN:
            return _equal(known, item)
        if spliced.get(index, base) == first:
            return True
        if text is None:
            text = _first_text(outcome)
        failed = _failed_items(outcome.attempts[0]) if outcome.attempts else ()
        return index < len(text) and index not in failed and _same(text[index], item)

    return first_of


def sources(outcome: Outcome[Any]) -> tuple[int, int, dict[int, int]]:
    """Which call each item of a healed list came from: (`first`, `base`, `spliced`), the
    first call's number, and item i came from call `spliced.get(i, base)`. Calls in order: an
    item repair's answer spliced in (flag `items_merged`) gives the items asked for (those the
    list as it stood failed on) and keeps the rest; one not spliced (its note says nothing was
    replaced), or a call that failed, keeps the list as it stood; any other answer is the whole
    list anew (a whole-value repair, or an item repair answered with the whole list)."""
    attempts = outcome.attempts
    first = base = attempts[0].number if attempts else 1
    spliced: dict[int, int] = {}
    asked: tuple[int, ...] = ()
    for attempt in attempts:
        if attempt.error is not None:
            continue  # no answer: the list as it stood
        if attempt.strategy is Strategy.ITEMS and Flag.ITEMS_MERGED in attempt.flags:
            spliced |= dict.fromkeys(asked, attempt.number)
        elif attempt is not attempts[0] and not _kept(attempt):
            base, spliced = attempt.number, {}
        asked = _failed_items(attempt)
    return first, base, spliced


def _kept(attempt: Attempt) -> bool:
    """An item repair whose answer was not spliced: the list as it stood was judged again."""
    if attempt.strategy is not Strategy.ITEMS or not attempt.diagnostics:
        return False
    return attempt.diagnostics[0].extra.get(NOT_SPLICED) is True


def _failed_items(attempt: Attempt) -> tuple[int, ...]:
    """The items the list `attempt` judged failed on, by index (none when a failure was not in
    an item: no item repair follows it)."""
    found: set[int] = set()
    for diagnostic in attempt.diagnostics:
        match = _ITEM_PATH.match(diagnostic.path)
        if match is None:
            return ()
        found.add(int(match.group(1)))
    return tuple(sorted(found))


def _first_text(outcome: Outcome[Any]) -> list[Any]:
    """The first answer's items when its text is a JSON list (or an object holding one list,
    the strict format's envelope); else none known."""
    raw = outcome.attempts[0].raw_text if outcome.attempts else None
    try:
        data = json.loads(raw) if raw else None
    except (ValueError, RecursionError):
        return []
    if isinstance(data, dict) and len(data) == 1:
        (data,) = data.values()
    return data if isinstance(data, list) else []


def _equal(a: Any, b: Any) -> bool:
    """Whether two items are the same: equal, or with equal JSON dumps (a NaN is not equal to
    itself, and an item holding one is still the same item)."""
    if a == b:
        return True
    try:
        return bool(to_json(a, inf_nan_mode="constants") == to_json(b, inf_nan_mode="constants"))
    except Exception:  # no JSON dump: only `==` tells
        return False


def _same(data: Any, item: Any) -> bool:
    """Whether the first answer's `data` at an index is `item` (a model's, validated as it)."""
    if not isinstance(item, BaseModel):
        return _equal(data, item)
    try:
        return _equal(type(item).model_validate(data), item)
    except Exception:  # a validator that fails, or fails oddly: not the same item
        return False
