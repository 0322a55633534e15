"""Benchmark an OpenAI Agents SDK agent alone against the same agent with `healjson.agents`.

Run from the repository root:

    .venv/bin/python benchmarks/bench_agents_openai.py [--runs 200] [--seed 25]

The workload is `agent_workload.generate(runs, seed)`: runs of 3 to 6 tool calls (`search`,
`get_weather`, `book_room`) and a final output (`Report`), a seeded mix of malformations (clean,
trailing comma, fenced, single quotes, a quoted integer, a key in the wrong case, a string cut by
the token limit, a value breaking the tool's rule), each call with its ticket (the intended
arguments). Both arms are the same `Agent` (`OpenAIChatCompletionsModel` on the real openai
`AsyncOpenAI(max_retries=0)`, over real HTTP to a `ScriptedServer` whose one callable item is an
`agent_workload.ChatResponder`: a re-asked turn is answered with its clean call; the final output
is the reply's content, validated against `output_type=Report`), with the SDK's defaults
(function tools' default failure function, tracing disabled), driven by `Runner.run`:

- A (the SDK alone): `@function_tool` tools, each raising `ValueError` when its rule breaks (the
  SDK answers the model with its generic tool error, and the model sends the call again);
- H (the SDK + healjson): the same agent through `heal_tools(agent, tool_contracts=...)` (the
  same rules as healjson contracts) and `Runner.run(..., error_handlers={"invalid_final_output":
  heal_final_output()})`.

Per arm: model calls (the responder's, the server's requests), tokens (the responder's: request
messages and tools as JSON / 4, reply text / 4), runs that failed (an exception out of
`Runner.run`), wrong values (each executed tool call and each returned output against its
ticket: `agent_workload.check_run`), and wall time (sum over runs; the arms alternate run by run).
Calls, tokens, failures and wrong values are exact and deterministic; wall time is indicative (a
shared machine). Results are printed and written to `benchmarks/results/agents_openai.md`.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any, Literal

import agents
from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool
from openai import AsyncOpenAI
from pydantic import BaseModel

import healjson
from _machine import ROOT, machine, publish, stamp, table
from agent_workload import (
    MALFORMATIONS,
    OUTPUT_NAME,
    ChatResponder,
    Report,
    Run,
    arm_table,
    breach,
    check_run,
    generate,
    summary,
    tool_result,
)
from healjson.agents import HealLog, heal_final_output, heal_tools
from healjson.testing import ScriptedServer

RESULTS = ROOT / "benchmarks" / "results" / "agents_openai.md"
TOOL_NAMES = ("search", "get_weather", "book_room")


@dataclass
class Arm:
    """One contender: its agent, server, responder and what its tools executed."""

    name: str
    agent: Agent[Any]
    server: ScriptedServer
    responder: ChatResponder
    client: AsyncOpenAI
    log: HealLog | None = None
    run_options: dict[str, Any] = field(default_factory=dict)
    executed: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failed: int = 0
    wrong: int = 0
    wall_s: float = 0.0
    failures: Counter[str] = field(default_factory=Counter)  # by exception
    failed_runs: set[int] = field(default_factory=set)
    failed_on: Counter[str] = field(default_factory=Counter)  # invalid outputs, by malformation
    extra_calls: Counter[str] = field(default_factory=Counter)  # by malformation
    healed: Counter[str] = field(default_factory=Counter)  # by malformation


def _rule(tool: str) -> healjson.Contract[Any]:
    @healjson.contract(name=f"{tool}_rule")
    def rule(args: BaseModel) -> healjson.Violation | None:
        broken = breach(tool, args.model_dump())
        return healjson.Violation(broken) if broken else None

    return rule


def make_arm(name: Literal["A", "H"], first: Run) -> Arm:
    responder = ChatResponder(first)
    server = ScriptedServer([responder], repeat=True).start()
    client = AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    model = OpenAIChatCompletionsModel(model="scripted-model", openai_client=client)
    executed: list[tuple[str, dict[str, Any]]] = []

    def run_tool(tool: str, args: dict[str, Any]) -> str:
        broken = breach(tool, args)
        if broken:
            raise ValueError(broken)  # the SDK tells the model its generic tool error
        executed.append((tool, args))
        return tool_result(tool, args)

    @function_tool
    def search(query: str, limit: int) -> str:
        """Search the catalogue."""
        return run_tool("search", {"query": query, "limit": limit})

    @function_tool
    def get_weather(city: str, days: int) -> str:
        """The forecast for a city."""
        return run_tool("get_weather", {"city": city, "days": days})

    @function_tool
    def book_room(guest: str, nights: int, room: Literal["single", "double", "suite"]) -> str:
        """Book a hotel room."""
        return run_tool("book_room", {"guest": guest, "nights": nights, "room": room})

    agent: Agent[Any] = Agent(
        name="planner",
        instructions="Plan the trip with the tools, then report.",
        tools=[search, get_weather, book_room],
        model=model,
        output_type=Report,
    )
    if name == "A":
        return Arm(name, agent, server, responder, client, executed=executed)
    log = HealLog()
    rules = {tool: [_rule(tool)] for tool in TOOL_NAMES}
    healed = heal_tools(agent, tool_contracts=rules, log=log)
    options = {"error_handlers": {"invalid_final_output": heal_final_output(log=log)}}
    return Arm(name, healed, server, responder, client, log, options, executed)


async def run_one(arm: Arm, run: Run) -> None:
    arm.responder.set_run(run)
    arm.executed.clear()
    logged = len(arm.log) if arm.log is not None else 0
    output: Mapping[str, Any] | None = None
    started = time.perf_counter()
    try:
        result = await Runner.run(arm.agent, run.prompt, **arm.run_options)
        output = result.final_output.model_dump()
    except Exception as exc:
        arm.failed += 1
        arm.failures[type(exc).__name__] += 1
        arm.failed_runs.add(run.index)
        if isinstance(exc, agents.ModelBehaviorError):  # the final output did not validate
            arm.failed_on[run.output.malformation] += 1
    arm.wall_s += time.perf_counter() - started
    arm.calls += arm.responder.calls
    prompt, completion = arm.responder.tokens
    arm.prompt_tokens += prompt
    arm.completion_tokens += completion
    arm.wrong += check_run(run, arm.executed, output)
    attempts = Counter(served.turn for served in arm.responder.served)
    for index, count in attempts.items():
        arm.extra_calls[run.turns[index].malformation] += count - 1
    if arm.log is not None:
        turns = {f"call_{run.index}_{i}_0": turn for i, turn in enumerate(run.turns)}
        for entry in arm.log.entries[logged:]:
            if not entry.healed:
                continue
            turn = run.output if entry.where == "final_output" else turns.get(entry.call_id or "")
            if turn is not None:
                arm.healed[turn.malformation] += 1


async def drive(runs: list[Run], arms: list[Arm]) -> None:
    try:
        for run in runs:
            for arm in arms if run.index % 2 == 0 else arms[::-1]:
                await run_one(arm, run)
    finally:
        for arm in arms:
            await arm.client.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=25)
    args = parser.parse_args()
    logging.getLogger("healjson").setLevel(logging.CRITICAL)
    logging.getLogger("openai.agents").setLevel(logging.CRITICAL)  # the SDK logs tool errors
    agents.set_tracing_disabled(True)  # no trace export: nothing leaves the machine
    started = time.perf_counter()
    runs = generate(args.runs, args.seed)
    arms = [make_arm("A", runs[0]), make_arm("H", runs[0])]
    try:
        asyncio.run(drive(runs, arms))
    finally:
        for arm in arms:
            arm.server.stop()
    elapsed = time.perf_counter() - started
    publish(report(runs, arms, args, elapsed), RESULTS, f" in {elapsed:.0f} s")
    alone, healed = arms
    ok = (
        healed.calls < alone.calls
        and healed.wrong == 0
        and healed.failed <= alone.failed
        and not healed.failed_runs - alone.failed_runs
    )
    return 0 if ok else 1


def tokens(arm: Arm) -> int:
    return arm.prompt_tokens + arm.completion_tokens


def report(runs: list[Run], arms: list[Arm], args: argparse.Namespace, elapsed: float) -> list[str]:
    alone, healed = arms
    turns = sum(len(run.turns) for run in runs)
    tool_calls = sum(len(run.tool_turns) for run in runs)
    mix = summary(runs)
    outputs = Counter(run.output.malformation for run in runs)
    fewer = 1 - healed.calls / alone.calls if alone.calls else 0.0
    lost = len(healed.failed_runs - alone.failed_runs)
    return [
        "# OpenAI Agents SDK agent workload: the SDK alone vs the SDK + healjson",
        "",
        *stamp(),
        f"- healjson {version('healjson')}, openai-agents {version('openai-agents')}, "
        f"openai {version('openai')}, pydantic {version('pydantic')}",
        *machine(),
        f"- run time: {elapsed:.0f} s",
        "",
        "## Targets",
        "",
        f"- model calls: the SDK + healjson {healed.calls:,}, the SDK alone {alone.calls:,}: "
        f"**{fewer:.1%} fewer** (target: fewer) — "
        + ("met" if healed.calls < alone.calls else "missed"),
        f"- tokens (prompt + completion): healjson {tokens(healed):,}, alone {tokens(alone):,} "
        f"({1 - tokens(healed) / max(tokens(alone), 1):.1%} fewer)",
        f"- runs failed: healjson {healed.failed}, alone {alone.failed}; runs lost that the SDK "
        f"alone completes: {lost} (target: 0) — " + ("met" if lost == 0 else "missed"),
        f"- wrong values (executed tool arguments and outputs against their tickets): healjson "
        f"{healed.wrong}, alone {alone.wrong} (target: 0) — "
        + ("met" if healed.wrong == 0 else "missed"),
        f"- healed locally: {sum(healed.healed.values())} tool calls and outputs, each then "
        "validated by the SDK and checked against its ticket",
        "",
        "## Workload",
        "",
        f"`agent_workload.generate(runs={args.runs}, seed={args.seed})`: {len(runs)} runs, "
        f"{tool_calls} tool calls and {len(runs)} outputs ({turns} turns, the fewest model calls "
        "a run can make); turns by malformation: "
        + ", ".join(f"{name} {count}" for name, count in mix.items())
        + "; of them, outputs: "
        + ", ".join(f"{name} {outputs[name]}" for name in MALFORMATIONS if outputs[name])
        + ". A re-asked tool call is answered with its clean call. Both arms: the same `Agent` "
        "(`OpenAIChatCompletionsModel`, openai `AsyncOpenAI(max_retries=0)`, "
        "`output_type=Report`), the same `@function_tool` tools (each raises `ValueError` when "
        "its rule breaks), `Runner.run`; H adds `heal_tools(agent, tool_contracts=...)` with the "
        "same rules and the `invalid_final_output` handler `heal_final_output()`. Arms "
        "alternate run by run.",
        "",
        "## Per arm",
        "",
        *arm_table(arms, len(runs), "the SDK alone", "the SDK + healjson"),
        "",
        "## By malformation",
        "",
        "Extra calls: calls beyond one per turn, by the malformation of the turn's first reply "
        "(a run that failed stops counting); *healed* = the turns healjson repaired locally (no "
        "call); *failed runs*: runs that ended in `ModelBehaviorError` (a final output that does "
        "not validate), by the malformation of that output.",
        "",
        *table(
            [
                "malformation",
                "turns",
                "extra calls alone",
                "extra calls healjson",
                "healed",
                "failed runs alone",
                "failed runs healjson",
            ],
            [
                [
                    name,
                    str(mix[name]),
                    str(alone.extra_calls[name]),
                    str(healed.extra_calls[name]),
                    str(healed.healed[name]),
                    str(alone.failed_on[name]),
                    str(healed.failed_on[name]),
                ]
                for name in MALFORMATIONS
            ],
        ),
        "",
        "Reading it: a trailing comma, a fence, single quotes and a key in the wrong case in a "
        "tool call's arguments cost the SDK alone one call each (its generic tool error, then "
        "the model's call again); healjson repairs them before the SDK validates. A quoted "
        "integer in a tool call costs neither arm a call (the SDK validates arguments in lax "
        "mode). A string cut by the token limit and a value breaking a rule cost both arms the "
        f"same re-ask; healjson's answer to the model then carries the diagnostic (value, rule, "
        "fix) where the SDK alone says 'An error occurred while running the tool'. A final "
        "output that does not validate (strictly: a quoted integer too) ends the SDK's run with "
        "`ModelBehaviorError` — it never asks again — so there the SDK alone loses the run; "
        "the handler heals it in place, except a cut output (nothing local may finish it), "
        f"which fails in both arms ({OUTPUT_NAME!r} turns). The SDK's `max_turns` (10 by "
        "default) ends a run whose re-asks use up its turns (`MaxTurnsExceeded`): a run of 6 "
        "tool calls has 4 turns to spare, and every call healed locally keeps one.",
        "",
        "Wall time is the sum of the runs' `Runner.run` times on a loaded 2-core machine shared "
        "with other work: indicative only. Calls, tokens, failures and wrong values are exact "
        "(the same on every run of this command).",
    ]


if __name__ == "__main__":
    raise SystemExit(main())
