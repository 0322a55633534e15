"""What a type checker sees at `healjson.agents`' entry points (checked by mypy in CI, never
run)."""

from __future__ import annotations

from typing import Any, assert_type

from agents import Agent, FunctionTool, OutputGuardrail, RunErrorHandlers, Tool

from healjson import Diagnostic, Violation, contract
from healjson.agents import (
    ContractReport,
    FinalOutputHandler,
    HealLog,
    contract_guardrail,
    heal_final_output,
    heal_tools,
)


@contract(fields=("limit",))
def limit_in_range(args: Any) -> Violation | None:
    return None


def check(agent: Agent[dict[str, int]], tools: list[Tool], tool: FunctionTool) -> None:
    log = HealLog()
    assert_type(heal_tools(agent, {"search": [limit_in_range]}, log=log), Agent[dict[str, int]])
    assert_type(heal_tools(tools), list[Tool])
    assert_type(heal_tools([tool]), list[Tool])
    handler = heal_final_output([limit_in_range], log=log)
    assert_type(handler, FinalOutputHandler)
    handlers: RunErrorHandlers[dict[str, int]] = {"invalid_final_output": handler}
    assert_type(contract_guardrail([limit_in_range]), OutputGuardrail[Any])
    assert_type(ContractReport(ok=True).diagnostics, tuple[Diagnostic, ...])
    assert_type(log.entries[0].flags, tuple[str, ...])
    heal_tools(agent, policy="strict")  # type: ignore[call-overload]
    del handlers
