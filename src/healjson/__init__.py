"""healjson: a value that passed the schema and the business contracts, or an explicit `Degraded`.

Never an exception at call time, never silently wrong data.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Final

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
from ._core.repair.prompt import RepairPrompt, Strategy
from ._core.run.policy import HealPolicy
from ._core.sentinels import MISSING
from ._core.stream.partial import Partial
from ._core.wire.delta import Delta
from ._core.wire.effects import ProviderError
from ._core.wire.reply import Reply, ToolCall, Usage

if TYPE_CHECKING:
    from ._core.parse import ParseResult, parse
    from ._core.run.answers import ReadReply
    from ._core.run.healer import Healer, validate
    from ._core.run.streams import AsyncHealStream, HealStream
    from ._decorator import heal
    from ._durable import RetryableError
    from ._judge import judge
    from ._packs import ContractPack, load_contracts
    from ._response_cache import ResponseCache, ResponseStore
    from ._typing.face import wrap, wrap_callable  # the generated typed face

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
    "ReadReply",
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


# the names whose modules bring the engine (the parser, the judge, the run loop and the
# drivers) or an entry point above it: imported when first read, so `import healjson` costs
# what it uses (`from healjson import Healer` reads the name at once)
_LAZY: Final = {
    "AsyncHealStream": "._core.run.streams",
    "ContractPack": "._packs",
    "HealStream": "._core.run.streams",
    "Healer": "._core.run.healer",
    "ParseResult": "._core.parse",
    "ReadReply": "._core.run.answers",
    "ResponseCache": "._response_cache",
    "ResponseStore": "._response_cache",
    "RetryableError": "._durable",
    "heal": "._decorator",
    "judge": "._judge",
    "load_contracts": "._packs",
    "parse": "._core.parse",
    "validate": "._core.run.healer",
    "wrap": "._wrap",
    "wrap_callable": "._wrap",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is not None:
        value = getattr(importlib.import_module(module, __name__), name)
        globals()[name] = value  # read once: the next read is a plain attribute
        return value
    if name == "__version__":
        from importlib.metadata import version

        return version("healjson")
    raise AttributeError(f"module 'healjson' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
