"""A work meter for L1: how many characters its passes examine for one reply.

Every pass over the reply (scanning, rewriting, strict and lenient parsing, validation) charges
the characters it is handed. Tests read the meter to prove the total stays linear in the reply's
size whatever its shape — a count, not a wall time, so the check is exact on any machine. When no
meter is running, `charge` is one global read.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = ["Meter", "charge", "metered"]


@dataclass
class Meter:
    """Characters charged while the meter ran."""

    chars: int = 0


class _Running:
    meter: Meter | None = None


def charge(chars: int) -> None:
    """Record that a pass examined `chars` characters (no-op unless a meter runs)."""
    meter = _Running.meter
    if meter is not None:
        meter.chars += chars


@contextlib.contextmanager
def metered() -> Iterator[Meter]:
    """Run a meter for the block (tests only: one meter at a time, not thread-aware)."""
    previous, meter = _Running.meter, Meter()
    _Running.meter = meter
    try:
        yield meter
    finally:
        _Running.meter = previous
