"""healjson's internals as the framework integrations use them, imported in this one place.

The integrations drive healjson's own loop: a JSON answer through `Healer.run` / `arun`, a set
of tool calls through the same loop's tool-call answer kind (`start_tools`, driven by the
core's drivers): `heal_tool_calls` / `aheal_tool_calls` below. A framework that made the first
call before healjson could tell which answer kind it is hands that reply in as the run's first
call (`FirstFromHand`), so the loop's judging, repairs and record are the ordinary ones.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from healjson._core.judge.contracts import Rule, as_contract, check_policies
from healjson._core.outcome.calls import ToolCalls
from healjson._core.outcome.outcome import Outcome
from healjson._core.repair.quote import quote_answer, render_diagnostics
from healjson._core.run.drive import drive_async, drive_sync
from healjson._core.run.policy import HealPolicy
from healjson._core.run.tools import Tool, ToolSpec, start_tools
from healjson._core.target.target import Target, target_for
from healjson._extras import missing_extra

__all__ = [
    "FirstFromHand",
    "Target",
    "ToolCalls",
    "ToolSpec",
    "aheal_tool_calls",
    "checked_policy",
    "heal_tool_calls",
    "missing_extra",
    "quote_answer",
    "render_diagnostics",
    "rules_of",
    "target_for",
    "tool_spec",
]


def checked_policy(policy: HealPolicy | None) -> HealPolicy:
    """`policy`, or the default one; anything else is a configuration mistake."""
    if policy is None:
        return HealPolicy()
    if not isinstance(policy, HealPolicy):
        raise TypeError(f"policy must be a healjson.HealPolicy, got {type(policy).__name__}")
    return policy


def rules_of(rules: Iterable[Rule[Any]]) -> tuple[Any, ...]:
    """Contracts (`@healjson.contract` rules or plain functions), checked as `Healer` checks
    them (a rule policy only a list target can have raises here)."""
    found = tuple(as_contract(rule) for rule in rules)
    check_policies(found, items=False)
    return found


def tool_spec(
    targets: Mapping[str, Target[Any]],
    tool_contracts: Mapping[str, tuple[Any, ...]],
    policy: HealPolicy,
) -> ToolSpec:
    """The tools one request declares, as the tool-call flow judges their calls."""
    declared = {
        name: Tool(name, target, tool_contracts.get(name, ())) for name, target in targets.items()
    }
    return ToolSpec(declared, policy)


def heal_tool_calls(
    spec: ToolSpec, call: Callable[..., Any], messages: Any, context: Mapping[str, Any] | None
) -> Outcome[ToolCalls]:
    """The tool-call loop over `call` (blocking): each call judged against its tool, the broken
    ones asked again alone (healjson's repair request), `Healed` or `Degraded`."""
    outcome: Outcome[ToolCalls] = drive_sync(
        start_tools(spec, messages, context=context).flow, call
    )
    return outcome


async def aheal_tool_calls(
    spec: ToolSpec,
    call: Callable[..., Awaitable[Any]],
    messages: Any,
    context: Mapping[str, Any] | None,
) -> Outcome[ToolCalls]:
    """`heal_tool_calls`, awaiting `call` on the running loop."""
    outcome: Outcome[ToolCalls] = await drive_async(
        start_tools(spec, messages, context=context).flow, call
    )
    return outcome


class FirstFromHand:
    """A run's `call` whose first model call is the reply already in hand: the framework made
    it before healjson could judge it. Later calls go to `ask(messages)`, with the messages the
    loop added past `prefix` (the request's own messages)."""

    __slots__ = ("_ask", "_first", "_prefix", "calls")

    def __init__(self, first: Any, prefix: int, ask: Callable[[list[dict[str, Any]]], Any]):
        self._first = first
        self._prefix = prefix
        self._ask = ask
        self.calls = 0

    def __call__(self, messages: list[dict[str, Any]], **params: Any) -> Any:
        self.calls += 1
        if self.calls == 1:
            return self._first
        return self._ask(messages[self._prefix :])
