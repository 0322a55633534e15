"""One healed `tools/call` on the client side: `CallHealer.call(name, arguments, send)`.

The flow: the tool's schemas from the index (listed once); the arguments normalised against
`inputSchema`; the call sent through the SDK (`send`, with the SDK's own result check left to
healjson: `seam`); the SDK's `CallToolResult` judged against `outputSchema` (`results`) and
handed back as the SDK's type:

- valid, or not judged (an error result, a tool without `outputSchema`): the very object the
  SDK returned;
- healed: a copy whose `structured_content` is the healed value (its `content` unchanged);
- not healable: `is_error=True`, its first text block the diagnostics, then the result's own
  content blocks as they were, then its structured content as a JSON text block (unless a
  block already holds it): nothing the tool gave is dropped. It does not stay structured
  content: a healed result's structured content is one that conforms to the tool's
  `outputSchema`, and the one it had did not.
- the tools cannot be listed (no `tools/list`, or it fails), or the server does not list the
  tool: no schema is known, so the call is sent and its result returned as the bare SDK
  returns them (the SDK's own checks included): not healed, nothing raised that the bare call
  would not raise. (A tool whose `outputSchema` is not usable is not healed either: its
  result is handed back as the server sent it.)
- a result healjson sent for judging but did not judge (too deep to judge whole, with no
  problem visible in the rest: `results`' rule 4) gets the SDK's own check, run then
  (`seam.Deferred`): what the bare SDK would raise, it raises.

`healjson.outcome_of(result)` is the run that judged the result (flag `structured_from_text`
when it was read from text; `arguments_normalised` when the arguments sent were not those
given), or the arguments' run alone when only they were changed; None when nothing was checked.
Transport and protocol failures (`MCPError`, timeouts) are the SDK's, raised as the SDK raises
them.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any, Final

from mcp import types
from pydantic_core import from_json, to_json

from healjson._attached import attach

from .arguments import Normalised, normalise_arguments
from .internals import (
    MISSING,
    Flag,
    Healed,
    HealPolicy,
    as_contract,
    check_policies,
    integration_event,
)
from .results import Verdict, judge_result
from .seam import bypassed
from .tools import ToolIndex, ToolSchemas

__all__ = ["CallHealer", "check_tool_contracts", "structured_of", "texts_of"]


def check_tool_contracts(tool_contracts: Any) -> dict[str, tuple[Any, ...]]:
    """`{tool name: [rules]}` as given, checked now: a rule that is not a function or
    `@contract`, or a policy a whole-value rule cannot have, raises here (TypeError)."""
    if tool_contracts is None:
        return {}
    if not isinstance(tool_contracts, Mapping):
        raise TypeError(
            "tool_contracts must map tool names to lists of rules: "
            f"{{'get_weather': [rule, ...]}}, got {type(tool_contracts).__name__}"
        )
    checked: dict[str, tuple[Any, ...]] = {}
    for name, rules in tool_contracts.items():
        if not isinstance(name, str) or isinstance(rules, str) or not isinstance(rules, Iterable):
            raise TypeError(f"tool_contracts[{name!r}] must be a list of rules for that tool")
        converted = tuple(as_contract(rule) for rule in rules)
        check_policies(converted, items=False)
        checked[name] = converted
    return checked


class CallHealer:
    """The healing of one client's tool calls: its tool index, its rules, its policy (only
    `on_ambiguity` applies: there is no model to ask again)."""

    __slots__ = ("index", "on_ambiguity", "rules")

    def __init__(
        self,
        index: ToolIndex,
        *,
        tool_contracts: Mapping[str, Iterable[Any]] | None = None,
        policy: HealPolicy | None = None,
    ) -> None:
        if policy is not None and not isinstance(policy, HealPolicy):
            raise TypeError(f"policy must be a healjson.HealPolicy, got {type(policy).__name__}")
        self.index = index
        self.rules = check_tool_contracts(tool_contracts)
        self.on_ambiguity = "reask" if policy is None else policy.on_ambiguity

    async def call(
        self,
        name: str,
        arguments: Any,
        send: Callable[[Any], Awaitable[Any]],
        *,
        tool_contracts: Mapping[str, Iterable[Any]] | None = None,
    ) -> Any:
        """`send(arguments)` makes the SDK's call; its result comes back healed."""
        rules = self.rules.get(name, ())
        if tool_contracts is not None:
            rules = check_tool_contracts(tool_contracts).get(name, ())
        try:
            schemas = await self.index.get(name)
        except Exception:  # the tools cannot be listed: no schema known, the bare SDK's call
            return await send(arguments)
        normalised = normalise_arguments(schemas, arguments, on_ambiguity=self.on_ambiguity)
        if schemas is None:  # the server does not list the tool: the SDK's own check stays on
            result = await send(normalised.arguments)
            return self.finish(name, schemas, result, normalised, rules)
        with bypassed() as deferred:
            result = await send(normalised.arguments)
        healed, verdict = self._judged(name, schemas, result, normalised, rules)
        if verdict.outcome is None and schemas.output is not None:
            await deferred.run()  # a schema, but healjson did not judge: the SDK's check does
        return healed

    def finish(
        self,
        name: str,
        schemas: ToolSchemas | None,
        result: Any,
        normalised: Normalised,
        rules: tuple[Any, ...] = (),
    ) -> Any:
        """The result as handed back (see the module's documentation)."""
        return self._judged(name, schemas, result, normalised, rules)[0]

    def _judged(
        self,
        name: str,
        schemas: ToolSchemas | None,
        result: Any,
        normalised: Normalised,
        rules: tuple[Any, ...],
    ) -> tuple[Any, Verdict]:
        """`finish`, with the verdict (its `outcome` None: healjson did not judge the result)."""
        if not isinstance(result, types.CallToolResult):
            return result, _NOT_JUDGED  # an input request or an extension's result
        verdict = judge_result(
            name,
            schemas,
            structured=structured_of(result),
            texts=texts_of(result),
            is_error=result.is_error,
            rules=rules,
            context={"tool": name, "arguments": normalised.arguments},
            on_ambiguity=self.on_ambiguity,
        )
        healed = healed_result(result, verdict)
        outcome = combined_outcome(verdict, normalised)
        if outcome is not None:
            attach(healed, outcome)
        report(name, verdict, normalised, side="client")
        return healed, verdict


_NOT_JUDGED: Final = Verdict(None)


def structured_of(result: Any) -> Any:
    """A result's structured content; `MISSING` when it has none (an explicit JSON `null` is a
    value: the spec allows any JSON value)."""
    value = result.structured_content
    if value is None and "structured_content" not in result.model_fields_set:
        return MISSING
    return value


def texts_of(result: Any) -> tuple[str, ...]:
    """A result's text blocks, in order."""
    return tuple(block.text for block in result.content if isinstance(block, types.TextContent))


def healed_result(result: Any, verdict: Verdict) -> Any:
    """The SDK's `CallToolResult` the verdict calls for (the same object when unchanged)."""
    if verdict.error is not None:
        diagnostics = types.TextContent(type="text", text=verdict.error)
        kept = [diagnostics, *result.content]
        structured = structured_of(result)
        if structured is not MISSING and not _held(structured, result.content):
            kept.append(types.TextContent(type="text", text=_json_text(structured)))
        return result.model_copy(
            update={"content": kept, "structured_content": None, "is_error": True}
        )
    if verdict.changed:
        return result.model_copy(update={"structured_content": verdict.value})
    return result


def _json_text(value: Any) -> str:
    """`value` as JSON text (its `repr` when it is not JSON data: nothing is dropped)."""
    try:
        return to_json(value).decode()
    except Exception:
        return repr(value)


def _held(value: Any, blocks: Iterable[Any]) -> bool:
    """Whether a text block among `blocks` is `value`'s JSON text already (what the spec asks
    a tool to send beside its structured content)."""
    for block in blocks:
        if isinstance(block, types.TextContent):
            try:
                if from_json(block.text) == value:
                    return True
            except ValueError:
                continue
    return False


def combined_outcome(verdict: Verdict, normalised: Normalised) -> Any:
    """The outcome `outcome_of` gives for the call (see the module's documentation): a healed
    one carries `arguments_normalised` when the arguments sent were not those given (a degraded
    one has no flags; its arguments' run has its own events)."""
    outcome = verdict.outcome
    if normalised.changed:
        if outcome is None:
            outcome = normalised.outcome
        if isinstance(outcome, Healed):
            flags = (*outcome.flags, Flag.ARGUMENTS_NORMALISED)
            outcome = dataclasses.replace(outcome, flags=flags)
    return outcome


def report(name: str, verdict: Verdict, normalised: Normalised, *, side: str) -> None:
    """One integration event when healjson changed something (`healjson.mcp.healed` at INFO)
    or turned a result into an error (`healjson.mcp.error_result` at WARNING); nothing for a
    call it let through unchanged. The run ids are the judging runs' (their own events and
    spans carry them)."""
    if verdict.outcome is None and not normalised.changed:
        return
    if verdict.error is None and not verdict.changed and not normalised.changed:
        return
    run_id = getattr(verdict.outcome or normalised.outcome, "run_id", "")
    fields: dict[str, Any] = {"tool": name, "side": side}
    if normalised.changed and normalised.outcome is not None:
        flags = getattr(normalised.outcome, "flags", ())
        fields["arguments_flags"] = [str(flag) for flag in flags]
        fields["arguments_run_id"] = normalised.outcome.run_id
    if verdict.error is not None and verdict.outcome is not None:
        errors = getattr(verdict.outcome, "errors", ())
        fields["errors"] = [f"{d.path}: {d.constraint}" for d in errors]
        integration_event(run_id, logging.WARNING, "healjson.mcp.error_result", **fields)
        return
    if verdict.outcome is not None:
        fields["flags"] = [str(flag) for flag in getattr(verdict.outcome, "flags", ())]
    integration_event(run_id, logging.INFO, "healjson.mcp.healed", **fields)
