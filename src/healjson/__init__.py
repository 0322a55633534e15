"""healjson: a value that passed the schema and the business contracts, or an explicit `Degraded`.

Never an exception at call time, never silently wrong data.
"""

from __future__ import annotations

from typing import Any

# the wire formats, registered before any reply is read (the package imports no SDK)
from . import _providers  # noqa: F401
from ._attached import outcome_of
from ._core.contracts import Contract, ContractContext, Violation, contract
from ._core.diagnostic import Diagnostic, Source
from ._core.effects import ProviderError
from ._core.events import set_logger
from ._core.flags import Flag
from ._core.healer import Healer, validate
from ._core.outcome import (
    Attempt,
    Degraded,
    DegradedError,
    Healed,
    Outcome,
    Reason,
    outcome_from_dict,
)
from ._core.parse import ParseResult, parse
from ._core.policy import HealPolicy
from ._core.repair import RepairPrompt, Strategy
from ._core.reply import Reply, ToolCall, Usage
from ._core.sentinels import MISSING
from ._core.stream.chunks import Delta
from ._core.stream.partial import Partial
from ._core.stream.run import AsyncHealStream, HealStream
from ._core.tools import HealedCall, ToolCalls
from ._decorator import heal
from ._judge import judge
from ._packs import ContractPack, load_contracts
from ._wrap import wrap, wrap_callable

__all__ = [
    "MISSING",
    "AsyncHealStream",
    "Attempt",
    "Contract",
    "ContractContext",
    "ContractPack",
    "Degraded",
    "DegradedError",
    "Delta",
    "Diagnostic",
    "Flag",
    "HealPolicy",
    "HealStream",
    "Healed",
    "HealedCall",
    "Healer",
    "Outcome",
    "ParseResult",
    "Partial",
    "ProviderError",
    "Reason",
    "RepairPrompt",
    "Reply",
    "Source",
    "Strategy",
    "ToolCall",
    "ToolCalls",
    "Usage",
    "Violation",
    "contract",
    "heal",
    "judge",
    "load_contracts",
    "outcome_from_dict",
    "outcome_of",
    "parse",
    "set_logger",
    "validate",
    "wrap",
    "wrap_callable",
]


def __getattr__(name: str) -> Any:
    if name == "__version__":
        from importlib.metadata import version

        return version("healjson")
    raise AttributeError(f"module 'healjson' has no attribute {name!r}")
