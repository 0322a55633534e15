"""The one place the MCP boundary imports healjson's core: the public names it uses
(`validate`, `Flag`, `Healed`, `Degraded`, `Reason`, `HealPolicy`, `MISSING`), taken from their
modules rather than from `healjson` (which imports `wrap`, which imports the MCP adapter), and the
internals it needs (targets, contracts' checks, the diagnostics' renderer, the events' logger)."""

from __future__ import annotations

from typing import Any

from healjson._core.diagnostic import format_path, value_data
from healjson._core.flags import Flag
from healjson._core.judge.contracts import as_contract, check_policies
from healjson._core.observe.events import about_run
from healjson._core.outcome.attempt import Reason
from healjson._core.outcome.outcome import Degraded, Healed
from healjson._core.repair.quote import render_diagnostics
from healjson._core.run.healer import validate
from healjson._core.run.policy import HealPolicy
from healjson._core.sentinels import MISSING
from healjson._core.target.target import Target, target_for

__all__ = [
    "MISSING",
    "Degraded",
    "Flag",
    "HealPolicy",
    "Healed",
    "Reason",
    "Target",
    "as_contract",
    "check_policies",
    "format_path",
    "integration_event",
    "render_diagnostics",
    "target_for",
    "validate",
    "value_data",
]


def integration_event(run_id: str, level: int, event: str, **fields: Any) -> None:
    """An event of the MCP boundary about a run that already happened (`events.about_run`)."""
    about_run(run_id, level, event, **fields)
