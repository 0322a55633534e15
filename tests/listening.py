"""Runs with nothing listening, as in an application that configured no logging: pytest's own
log capture hangs handlers on the root logger, so a test's runs would otherwise always have
events (and never start quick)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from healjson._core.observe import events


@contextmanager
def nothing_listens() -> Iterator[None]:
    """The root logger without handlers for the block (checked: `events.quiet()`)."""
    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers.clear()
    try:
        assert events.quiet(), "a logger or tracer still listens"
        yield
    finally:
        root.handlers[:] = saved
