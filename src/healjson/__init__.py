"""healjson: a value that passed the schema and the business contracts, or an explicit `Degraded`.

Never an exception at call time, never silently wrong data.
"""

from __future__ import annotations

from typing import Any

# the wire formats, registered before any reply is read (the package imports no SDK)
from . import _providers  # noqa: F401
from ._attached import outcome_of
from ._core.diagnostic import Diagnostic, Source
from ._core.flags import Flag
from ._core.judge.contracts import Contract, ContractContext, Violation, contract
from ._core.observe.events import set_logger
from ._core.outcome.calls import HealedCall, ToolCalls
from ._core.outcome.outcome import (
    Attempt,
    Degraded,
    DegradedError,
    Healed,
    Outcome,
    Reason,
    outcome_from_dict,
)
from ._core.parse import ParseResult, parse
from ._core.repair.prompt import RepairPrompt, Strategy
from ._core.run.healer import Healer, validate
from ._core.run.policy import HealPolicy
from ._core.run.streams import AsyncHealStream, HealStream
from ._core.sentinels import MISSING
from ._core.stream.partial import Partial
from ._core.wire.delta import Delta
from ._core.wire.effects import ProviderError
from ._core.wire.reply import Reply, ToolCall, Usage
from ._decorator import heal
from ._durable import RetryableError
from ._judge import judge
from ._packs import ContractPack, load_contracts
from ._response_cache import ResponseCache, ResponseStore
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
    "ResponseCache",
    "ResponseStore",
    "RetryableError",
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
