"""The outcome behind an object healjson handed back: `attach(obj, outcome)`, `outcome_of(obj)`.

Where healjson returns an SDK's own object (an MCP `CallToolResult`, an SDK's parsed
completion), the `Outcome` of the heal cannot ride on it: the SDK's type has no field for it,
and a field added to its data would change how it serialises and compares. So the outcome is
kept beside the object, keyed by the object's identity:

- an object that can be weakly referenced (pydantic models, most class instances) keeps its
  outcome for exactly as long as it lives: the entry goes when the object is collected, so
  nothing grows with the number of objects handed out;
- an object that cannot (a `dict`, a `list`, a slotted instance without `__weakref__`) is held
  with its outcome among the newest `PINNED` such objects; older ones are forgotten (bounded
  memory, at the price of a strong reference to each of those few).

A copy (`model_copy()`, `copy.copy`, a value rebuilt from JSON) is a new object: it has no
outcome; ask the object healjson returned. An object's identity is checked on every lookup, so
an outcome is never reported for a later object that happens to get a collected one's `id`.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from ._core.outcome.outcome import Outcome

__all__ = ["PINNED", "attach", "outcome_of"]

PINNED: Final = 256
"""How many objects that cannot be weakly referenced keep their outcome (the newest)."""

# id(obj) -> (weak reference to obj, its outcome). Plain dict operations, atomic under the GIL:
# the weak reference's callback runs while the object is being freed, at any moment (garbage
# collection included), so it must not take a lock the interrupted code may hold. The id cannot
# be reused while that callback runs: the object's memory is freed after it returns.
_WEAK: dict[int, tuple[weakref.ReferenceType[Any], Outcome[Any]]] = {}
_PINNED: OrderedDict[int, tuple[object, Outcome[Any]]] = OrderedDict()
_PINNED_LOCK = threading.Lock()


def attach(obj: object, outcome: Outcome[Any]) -> None:
    """Keep `outcome` as the outcome of `obj` (replacing any it had), for `outcome_of`."""
    key = id(obj)
    try:
        ref = weakref.ref(obj, _forgetter(key))
    except TypeError:  # cannot be weakly referenced: held among the newest few
        with _PINNED_LOCK:
            _PINNED[key] = (obj, outcome)
            _PINNED.move_to_end(key)
            while len(_PINNED) > PINNED:
                _PINNED.popitem(last=False)
        return
    _WEAK[key] = (ref, outcome)


def outcome_of(obj: object) -> Outcome[Any] | None:
    """The `Outcome` (flags, diagnostics, raw text, run id, trace) healjson recorded for an
    object it returned — an MCP `CallToolResult` from a wrapped session, for one — or None when
    it recorded none (nothing was checked, or `obj` is a copy or healjson's caller's own)."""
    key = id(obj)
    weak = _WEAK.get(key)
    if weak is not None and weak[0]() is obj:
        return weak[1]
    pinned = _PINNED.get(key)
    if pinned is not None and pinned[0] is obj:
        return pinned[1]
    return None


def _forgetter(key: int) -> Any:
    def forget(ref: weakref.ReferenceType[Any]) -> None:
        entry = _WEAK.get(key)
        if entry is not None and entry[0] is ref:
            _WEAK.pop(key, None)

    return forget
