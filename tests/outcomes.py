"""Outcomes compared across runs: their records, less what differs from run to run."""

from __future__ import annotations

from typing import Any


def comparable(outcome: Any) -> dict[str, Any]:
    """`outcome.to_dict()` without its run id (checked present) and the attempts' latencies."""
    data = outcome.to_dict()
    assert data.pop("run_id")  # each run has its own
    for attempt in data["attempts"]:
        attempt.pop("latency_s", None)
    return data
