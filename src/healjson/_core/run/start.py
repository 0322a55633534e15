"""A run not yet driven: what `Healer.start` returns, and its quick start."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from healjson._core.judge.contracts import ContractContext
from healjson._core.judge.enforcement import Enforcement
from healjson._core.outcome.outcome import Healed
from healjson._core.wire.effects import CallResult
from healjson._core.wire.reply import Reply

from .engine import AnswerSpec, Flow, heal_flow, new_run_id

__all__ = ["Quick", "Run"]


class Run:
    """A run not yet driven (`Healer.start`): its `flow`, for a driver, and its `context`
    (what its contracts and pydantic's validators read; a stream's reader reads it too).

    A run that may start quick (`quick`: nothing listens, no response cache, no deadline, a
    model call to make) has no flow until one is asked for: the sync and async drivers make
    its first call themselves (`quick` describes it as a `ModelCall` would: the flow's own
    first call), and a first answer its answer kind accepts as it stands is the outcome at
    once (`quick.first`), with no flow built and no record of the call's effect or result;
    any other first result is handed to the flow (`quick.flow(result)`), which goes on from
    there exactly as if it had made that call."""

    __slots__ = ("_flow", "context", "quick")

    def __init__(self, flow: Flow | None, context: ContractContext, quick: Quick | None = None):
        self._flow = flow
        self.context = context
        self.quick = quick

    @property
    def flow(self) -> Flow:
        """The run's flow (built at the first read for a run that could start quick: it then
        makes its first call itself)."""
        flow = self._flow
        if flow is None:
            assert self.quick is not None
            flow = self._flow = self.quick.flow(None)
            self.quick = None
        return flow


class Quick:
    """What a quick start needs (see `Run`): the run's pieces, and its first call as the drivers
    read a `ModelCall` (`messages`, `params`, `shared_prefix`, `provider_errors`)."""

    __slots__ = ("context", "enforcement", "messages", "params", "run_id", "spec")

    shared_prefix = 0  # a first call: no repair's prefix

    def __init__(
        self,
        spec: AnswerSpec,
        messages: tuple[Mapping[str, Any], ...],
        params: Mapping[str, Any],
        context: ContractContext,
        enforcement: Enforcement | None,
    ) -> None:
        self.spec = spec
        self.messages = messages
        self.params = params
        self.context = context
        self.enforcement = enforcement
        self.run_id = new_run_id()

    @property
    def provider_errors(self) -> tuple[type[BaseException], ...]:
        """The exception types the caller counts as the provider's (read when a call fails)."""
        return self.spec.policy.provider_errors

    def first(self, reply: Reply, elapsed_s: float) -> Healed[Any] | None:
        """The run's outcome when its first call's whole `reply` (read in `elapsed_s`) is an
        answer its kind accepts as it stands (`AnswerSpec.first`); None: the flow judges it
        (`flow(result)`)."""
        return self.spec.first(
            reply, self.messages, self.params, elapsed_s, self.run_id, self.context
        )

    def flow(self, first: CallResult | None) -> Flow:
        """The run's flow; with `first`, the result of its first call, made already (its
        answer not accepted by `first`)."""
        return heal_flow(
            self.spec,
            self.messages,
            self.params,
            self.context,
            enforcement=self.enforcement,
            made=first,
            run_id=self.run_id,
        )
