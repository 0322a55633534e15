"""The healjson internals the contract-pack kit uses, imported in this one place.

`check_pack`, `valid`, `violating` and their helpers need a few of the core's own pieces (the
engine's judging of a value, `judge_value`, and of a fix's result, `correct`, so that the kit
gives every verdict a run would; the diagnostic shape, the sync driver, the target cache);
when the core's layout moves, this is the module to follow it.
"""

from __future__ import annotations

from healjson._core.diagnostic import (
    ROOT,
    Diagnostic,
    Source,
    describe_exception,
    format_path,
    short_repr,
)
from healjson._core.judge.contracts import Contract, ContractContext, value_at
from healjson._core.judge.judging import CHANGED_BY, judge_value
from healjson._core.judge.policies import correct
from healjson._core.observe.events import set_logger
from healjson._core.outcome.outcome import Reason
from healjson._core.run.drive import drive_sync, run_awaitables_sync
from healjson._core.run.healer import validate
from healjson._core.run.messages import make_context
from healjson._core.sentinels import MISSING, NOTHING
from healjson._core.target.target import Target, target_for
from healjson._packs import ContractPack

__all__ = [
    "CHANGED_BY",
    "MISSING",
    "NOTHING",
    "ROOT",
    "Contract",
    "ContractContext",
    "ContractPack",
    "Diagnostic",
    "Reason",
    "Source",
    "Target",
    "correct",
    "describe_exception",
    "drive_sync",
    "format_path",
    "judge_value",
    "make_context",
    "run_awaitables_sync",
    "set_logger",
    "short_repr",
    "target_for",
    "validate",
    "value_at",
]
