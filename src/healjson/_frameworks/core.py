"""healjson's internals as the framework integrations use them, imported in this one place.

The integrations drive healjson's own loops: a JSON answer through `Healer.run` / `arun`
(public), a set of tool calls through the core's tool-call flow, which has no public entry
point over an arbitrary call yet. `heal_tool_calls` / `aheal_tool_calls` below are that entry
point, kept as small as can be so that it can move into the core as it is.

Moving to the core (what the integrations needed and did not find public):

1. A tool-call run over any call, as `Healer.run` is for a JSON answer: the declared tools (a
   name and a target each, and their contracts), the policy, the messages, the run's context
   and a `call`, giving `Outcome[ToolCalls]` (`wrap(client)`'s `heal_tools=True` does this for
   SDK clients only). Here: `tool_spec` + `heal_tool_calls` / `aheal_tool_calls`.
2. A run whose first reply is already in hand (the framework made the call before healjson
   could tell which answer kind it is) and whose later calls go through `call`: the engine's
   `given=` reply, public. Here the integrations' `call` serves that first reply itself
   (`FirstFromHand`).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from healjson._core.contracts import ContractContext, Rule, as_contract, check_policies
from healjson._core.drive import drive_async, drive_sync
from healjson._core.messages import make_context, normalise_messages
from healjson._core.outcome import Outcome
from healjson._core.policy import HealPolicy
from healjson._core.repair import quote_answer, render_diagnostics
from healjson._core.target import Target, target_for
from healjson._core.tools import Tool, ToolCalls, ToolSpec, tools_flow
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


def _flow(spec: ToolSpec, messages: Any, context: Mapping[str, Any] | None) -> Any:
    original = normalise_messages(messages)
    contracts = any(tool.contracts for tool in spec.tools.values())
    ctx = make_context(context, original) if context is not None or contracts else ContractContext()
    return tools_flow(spec, original, {}, ctx, started=time.monotonic())


def heal_tool_calls(
    spec: ToolSpec, call: Callable[..., Any], messages: Any, context: Mapping[str, Any] | None
) -> Outcome[ToolCalls]:
    """The tool-call loop over `call` (blocking): each call judged against its tool, the broken
    ones asked again alone (healjson's repair request), `Healed` or `Degraded`."""
    outcome: Outcome[ToolCalls] = drive_sync(_flow(spec, messages, context), call)
    return outcome


async def aheal_tool_calls(
    spec: ToolSpec,
    call: Callable[..., Awaitable[Any]],
    messages: Any,
    context: Mapping[str, Any] | None,
) -> Outcome[ToolCalls]:
    """`heal_tool_calls`, awaiting `call` on the running loop."""
    outcome: Outcome[ToolCalls] = await drive_async(_flow(spec, messages, context), call)
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
