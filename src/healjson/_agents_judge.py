"""How `healjson.agents` judges a value the SDK has in hand (no model call of its own): a reply's
text through a healer of one attempt per target type (`judge`), or the final output itself
under contracts and their `on_fail` policies (`judge_output`, for the guardrail), and what of the
run the contracts see (`run_context_data`, `messages`)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from typing import Any

from ._agents_log import ContractReport
from ._core.diagnostic import Source
from ._core.judge.check import accepted_evaluations
from ._core.judge.contracts import ContractContext
from ._core.judge.judging import judge_value
from ._core.judge.policies import settle
from ._core.outcome.outcome import Healed, Outcome
from ._core.run.drive import drive_async
from ._core.run.healer import Healer
from ._core.run.policy import HealPolicy
from ._core.sentinels import NOTHING
from ._core.wire.reply import Reply, Usage

__all__ = ["Judges", "judge", "judge_output", "messages", "one_attempt", "run_context_data"]


def one_attempt(policy: HealPolicy | None) -> HealPolicy:
    """The caller's policy with one attempt (the model is the SDK's to call, never healjson's)."""
    if policy is None:
        return HealPolicy(max_attempts=1)
    if not isinstance(policy, HealPolicy):
        raise TypeError(f"policy must be a healjson.HealPolicy, got {type(policy).__name__}")
    return dataclasses.replace(policy, max_attempts=1)


class Judges:
    """The healers of one configuration, by target type (built once each; a target that cannot
    be hashed gets a fresh one)."""

    def __init__(self, contracts: tuple[Any, ...], policy: HealPolicy) -> None:
        self.contracts = contracts
        self.policy = policy
        self._by_type: dict[Any, Healer[Any]] = {}
        self._lock = threading.Lock()

    def for_type(self, target: Any) -> Healer[Any]:
        try:
            with self._lock:
                found = self._by_type.get(target)
        except TypeError:  # unhashable
            return Healer(target, contracts=self.contracts, policy=self.policy)
        if found is None:
            found = Healer(target, contracts=self.contracts, policy=self.policy)
            with self._lock:
                self._by_type[target] = found
        return found


_NO_USAGE = Usage()


async def judge(
    healer: Healer[Any], text: str, messages: Any = (), context: Any = None
) -> tuple[Outcome[Any], Any]:
    """healjson's verdict on a reply in hand, and the JSON data L1 read that a healed value is
    the validation of (NOTHING when none is: a `"fix"` or `"drop"` rule made the value)."""
    given = Reply(text, None, usage=_NO_USAGE)  # a reply in hand: no call, no tokens spent
    run = healer.start(messages, context=context, given=given)
    with accepted_evaluations() as accepted:
        outcome: Outcome[Any] = await drive_async(run.flow)
    if isinstance(outcome, Healed) and not (outcome.fixed or outcome.dropped):
        for evaluation in reversed(accepted):
            if evaluation.instance is outcome.value and not evaluation.fixed:
                return outcome, evaluation.data
    return outcome, NOTHING


async def judge_output(healer: Healer[Any], value: Any, extra: Mapping[str, Any] | None) -> Any:
    """The contracts (and their `on_fail` policies) on `value` itself, the output the SDK
    validated: never validated again (its JSON read back could be another value, a validator
    that is not idempotent running twice), as a run judges a reply's value."""
    rules, target = healer.contracts, healer.target
    ctx = ContractContext() if extra is None else ContractContext(extra=extra)
    timeout = healer.policy.contract_timeout_s
    # judged as a run judges: a contract that changed the value is a `contract_error` too
    groups = await drive_async(judge_value(target, rules, value, ctx, timeout_s=timeout))
    found = [d for group in groups for d in group]
    if any(d.source is Source.CONTRACT_ERROR for d in found):
        return ContractReport(False, tuple(found))
    rule_of = [(rule, d) for rule, group in zip(rules, groups, strict=True) for d in group]
    warned = tuple(d for rule, d in rule_of if rule.on_fail == "warn")
    blocking = tuple(d for rule, d in rule_of if rule.on_fail != "warn")
    if not blocking:
        return ContractReport(True, (), warned)
    settled = await drive_async(settle(target, rules, groups, value, ctx, timeout_s=timeout))
    if settled.error:
        return ContractReport(False, settled.error)
    fixed = None if settled.instance is NOTHING else settled.instance
    return ContractReport(False, blocking, warned, fixed)


def run_context_data(wrapper: Any) -> Mapping[str, Any] | None:
    """The run's own context, for the contracts' `ctx.extra` (and pydantic's validation
    context), when it is a mapping."""
    data = getattr(wrapper, "context", None)
    return data if isinstance(data, Mapping) else None


def messages(run_input: Any) -> tuple[dict[str, Any], ...]:
    """The run's input as chat messages for the contracts' `ctx.messages`: a prompt string, or
    its items that are messages with text content (tool calls and outputs left out)."""
    if isinstance(run_input, str):
        return ({"role": "user", "content": run_input},)
    out = []
    for item in run_input if isinstance(run_input, list) else ():
        if isinstance(item, Mapping) and isinstance(item.get("role"), str):
            content = item.get("content")
            if isinstance(content, str):
                out.append({"role": item["role"], "content": content})
    return tuple(out)
