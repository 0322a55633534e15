"""The one place the MCP boundary imports healjson's core: the public names it uses
(`validate`, `Flag`, `Healed`, `Degraded`, `HealPolicy`, `MISSING`), taken from their modules
rather than from `healjson` (which imports `wrap`, which imports the MCP adapter), and the
internals it needs (targets, contracts' checks, the diagnostics' renderer, the events' logger)."""

from __future__ import annotations

from typing import Any

from healjson._core import events as _events
from healjson._core.contracts import as_contract, check_policies
from healjson._core.flags import Flag
from healjson._core.healer import validate
from healjson._core.outcome import Degraded, Healed
from healjson._core.policy import HealPolicy
from healjson._core.repair import render_diagnostics
from healjson._core.sentinels import MISSING
from healjson._core.target import Target, target_for

__all__ = [
    "MISSING",
    "Degraded",
    "Flag",
    "HealPolicy",
    "Healed",
    "Target",
    "as_contract",
    "check_policies",
    "integration_event",
    "render_diagnostics",
    "target_for",
    "validate",
]


def integration_event(run_id: str, level: int, event: str, **fields: Any) -> None:
    """An event of the MCP boundary about a run that already happened (its own events and spans
    were sent by the run): to the logger that run's events went to, with its `run_id`, and no
    span of its own (`events.for_run` would open one for a run starting now)."""
    settings = _events._SCOPED.get() or _events._Default.settings
    logger, floor = _events._logger(settings)
    if logger is None or level < floor:
        return
    sink = _events.RunEvents(run_id, logger, settings.include_content, None, floor)
    sink.event(level, event, **fields)
