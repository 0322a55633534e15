"""`Healer`: the provider-agnostic entry point: configure once, then `run` or `arun` a request."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Generic, TypeVar, overload

from pydantic_core import to_json

from .check import make_context
from .contracts import Contract, as_contract
from .drive import ModelCall, call_async, call_sync, drive_async, drive_sync
from .engine import HealSpec, clean_first_reply, heal_flow
from .example import golden_example
from .outcome import Outcome
from .policy import HealPolicy
from .repair import normalise_messages
from .target import Target, target_for

__all__ = ["Healer"]

T = TypeVar("T")


class Healer(Generic[T]):
    """Heal one kind of answer: a target type, its contracts, a policy and a fallback.

    `call` (for `run`) takes the chat messages plus any keyword parameters and returns a string,
    an OpenAI `ChatCompletion` (or anything shaped like one) or a `healjson.Reply`; it may raise.
    Whatever happens at call time, `run` returns `Healed` or `Degraded`. Mistakes in the
    configuration itself (an unknown contract field, an example that does not validate) raise here.
    """

    @overload
    def __init__(
        self: Healer[T],
        model: type[T],
        *,
        contracts: Iterable[Contract | Callable[..., Any]] = (),
        policy: HealPolicy | None = None,
        fallback: Any = None,
        examples: Iterable[Any] = (),
    ) -> None: ...
    @overload
    def __init__(
        self: Healer[Any],
        model: Any,
        *,
        contracts: Iterable[Contract | Callable[..., Any]] = (),
        policy: HealPolicy | None = None,
        fallback: Any = None,
        examples: Iterable[Any] = (),
    ) -> None: ...
    def __init__(
        self,
        model: Any,
        *,
        contracts: Iterable[Contract | Callable[..., Any]] = (),
        policy: HealPolicy | None = None,
        fallback: Any = None,
        examples: Iterable[Any] = (),
    ) -> None:
        policy = HealPolicy() if policy is None else policy
        if not isinstance(policy, HealPolicy):
            raise TypeError(f"policy must be a healjson.HealPolicy, got {type(policy).__name__}")
        target = target_for(model)
        rules = tuple(as_contract(rule) for rule in contracts)
        _check_fields(target, rules)
        checked = [_checked_example(target, index, ex) for index, ex in enumerate(examples)]
        self.target: Target[T] = target
        self.contracts = rules
        self.policy = policy
        self.fallback = fallback
        self.examples = tuple(checked)
        self._spec = HealSpec(
            target, rules, policy, fallback, golden_example(target, checked, rules)
        )

    def run(
        self,
        call: Callable[..., Any],
        messages: Any,
        *,
        context: Mapping[str, Any] | None = None,
        **params: Any,
    ) -> Outcome[T]:
        """Call the model through `call` and heal its answer (blocking)."""
        original = normalise_messages(messages)
        first = None
        started = time.monotonic()
        if not self.contracts:  # the happy path skips the loop (same outcome, less work)
            first = call_sync(call, ModelCall(1, original, params, self.policy.deadline_s))
            healed = clean_first_reply(self._spec, original, params, first)
            if healed is not None:
                return healed
        context_ = make_context(context, original)
        flow = heal_flow(self._spec, original, params, context_, first, started=started)
        return drive_sync(flow, call)

    async def arun(
        self,
        call: Callable[..., Awaitable[Any]] | Callable[..., Any],
        messages: Any,
        *,
        context: Mapping[str, Any] | None = None,
        **params: Any,
    ) -> Outcome[T]:
        """Like `run`, awaiting `call` (and any async contracts) on the running loop."""
        original = normalise_messages(messages)
        first = None
        started = time.monotonic()
        if not self.contracts:
            first = await call_async(call, ModelCall(1, original, params, self.policy.deadline_s))
            healed = clean_first_reply(self._spec, original, params, first)
            if healed is not None:
                return healed
        context_ = make_context(context, original)
        flow = heal_flow(self._spec, original, params, context_, first, started=started)
        return await drive_async(flow, call)

    def _with_fallback(self, fallback: Any) -> Healer[T]:
        """A copy that differs only in its fallback: it shares the target, contracts, policy,
        examples and golden example, so it costs no synthesis and no contract checks."""
        import dataclasses

        twin = object.__new__(type(self))  # a shallow copy, without copy.copy's generic path
        twin.__dict__.update(self.__dict__)
        twin.fallback = fallback
        twin._spec = dataclasses.replace(self._spec, fallback=fallback)
        return twin

    def __repr__(self) -> str:
        return (
            f"Healer({self.target.name}, contracts={len(self.contracts)}, "
            f"max_attempts={self.policy.max_attempts})"
        )


def _check_fields(target: Target[Any], rules: tuple[Contract, ...]) -> None:
    names = target.field_names
    if names is None:
        return
    for rule in rules:
        for name in rule.fields:
            head = name.split(".", 1)[0].split("[", 1)[0]
            if head not in names:
                raise ValueError(
                    f"contract {rule.name!r} names field {name!r}, which {target.name} does not "
                    f"have; its fields are: {', '.join(sorted(names))}"
                )


def _checked_example(target: Target[Any], index: int, example: Any) -> Any:
    try:
        if isinstance(example, str | bytes):
            return target.adapter.validate_json(example)
        return target.adapter.validate_json(to_json(example))
    except Exception as exc:
        raise ValueError(
            f"examples[{index}] does not validate against {target.name}; golden examples must be "
            f"valid answers. pydantic said: {exc}"
        ) from exc
