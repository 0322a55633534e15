"""Outcomes compared across runs: their records, less what differs from run to run."""

from __future__ import annotations

import json
from typing import Any

from healjson import Degraded, Healed


def comparable(outcome: Any) -> dict[str, Any]:
    """`outcome.to_dict()` without its run id (checked present) and the attempts' latencies."""
    data = outcome.to_dict()
    assert data.pop("run_id")  # each run has its own
    for attempt in data["attempts"]:
        attempt.pop("latency_s", None)
    return data


def said(outcome: Any) -> tuple[Any, ...]:
    """What an outcome says, for comparing a streamed run with the same reply unstreamed: its
    kind, value or reason with its errors' sources, flags, and the first attempt's flags and
    calls (id, name, arguments read)."""
    assert isinstance(outcome, Healed | Degraded)
    first = outcome.attempts[0]
    calls = [(c.id, c.name, json.loads(c.arguments)) for c in first.tool_calls]
    if isinstance(outcome, Healed):
        kind: tuple[Any, ...] = ("healed", outcome.value, outcome.flags)
    else:
        kind = ("degraded", outcome.reason, tuple(e.source for e in outcome.errors))
    return (*kind, first.flags, calls)
