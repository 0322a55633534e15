"""A run not yet driven: what `Healer.start` returns, and its quick start."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from healjson._core.judge.contracts import ContractContext
from healjson._core.judge.enforcement import Enforcement
from healjson._core.wire.effects import CallResult

from .engine import AnswerSpec, Flow, heal_flow, new_run_id

__all__ = ["HandOver", "Quick", "Run"]


class Run:
    """A run not yet driven (`Healer.start`): its `flow`, for a driver, and its `context`
    (what its contracts and pydantic's validators read; a stream's reader reads it too), and the
    schema its client's requests ask the endpoint to enforce (`enforcement`, or None).
    `built`: the flow, once there is one (a `Quick` run has none until it is asked for)."""

    __slots__ = ("built", "context", "enforcement")

    def __init__(
        self, flow: Flow, context: ContractContext, enforcement: Enforcement | None = None
    ) -> None:
        self.built: Flow | None = flow
        self.context = context
        self.enforcement = enforcement

    @property
    def flow(self) -> Flow:
        """The run's flow."""
        assert self.built is not None
        return self.built

    @property
    def starts_quick(self) -> bool:
        """True while a driver may make the run's first call itself (a `Quick` run whose flow
        has not been asked for)."""
        return False


class Quick(Run):
    """A run that may start quick (nothing listens, no response cache, no deadline, a model call
    to make): it has no flow until one is asked for. The sync and async drivers make its first
    call themselves (the run describes that call as a `ModelCall` would: `messages`, `params`,
    `shared_prefix`, `provider_errors`), and a first answer its answer kind accepts as it
    stands is the outcome at once (`spec.first`), with no flow built and no record of the
    call's effect or result; any other first result is handed to the flow (`flow_after`),
    which goes on from there exactly as if it had made that call. Read `flow` instead, and the
    flow makes its first call itself."""

    __slots__ = ("messages", "params", "run_id", "spec")

    shared_prefix = 0  # a first call: no repair's prefix

    def __init__(
        self,
        spec: AnswerSpec,
        messages: tuple[Mapping[str, Any], ...],
        params: Mapping[str, Any],
        context: ContractContext,
        enforcement: Enforcement | None,
    ) -> None:
        self.built = None
        self.context = context
        self.spec = spec
        self.messages = messages
        self.params = params
        self.enforcement = enforcement
        self.run_id = new_run_id()

    @property
    def flow(self) -> Flow:
        """The run's flow, built at the first read (it then makes its first call itself)."""
        return self.flow_after(None) if self.built is None else self.built

    @property
    def starts_quick(self) -> bool:
        """True while no flow was asked for."""
        return self.built is None

    @property
    def provider_errors(self) -> tuple[type[BaseException], ...]:
        """The exception types the caller counts as the provider's (read when a call fails)."""
        return self.spec.policy.provider_errors

    def flow_after(self, first: CallResult | None) -> Flow:
        """The run's flow (kept as `built`); with `first`, the result of its first call, made
        already (its answer not accepted by `spec.first`)."""
        flow = self.built = heal_flow(
            self.spec,
            self.messages,
            self.params,
            self.context,
            enforcement=self.enforcement,
            made=first,
            run_id=self.run_id,
        )
        return flow


class HandOver(Exception):
    """Raised by a call to hand the run's answer to another run (an integration's union step):
    the driver leaves the run's flow suspended, for `observe.telemetry.handed_on` to close with
    its spans parked for the run that takes the answer up. Any other exception the caller's
    code raises out of a driver ends the run first (its flow closed: spans ended, the caller's
    context restored) and then goes on unchanged."""
