"""Benchmark a pydantic-ai agent alone against the same agent with `healjson.pydantic_ai`.

Run from the repository root:

    .venv/bin/python benchmarks/bench_agents_pydantic_ai.py [--runs 200] [--seed 25]

The workload is `agent_workload.generate(runs, seed)`: runs of 3 to 6 tool calls (`search`,
`get_weather`, `book_room`, each with its pydantic argument model) and a final output (`Report`),
a seeded mix of malformations (clean, trailing comma, fenced, single quotes, a quoted integer, a
key in the wrong case, a string cut by the token limit, a value breaking the tool's rule), each
call with its ticket (the intended arguments). Both arms are the same `Agent` (pydantic-ai's
`OpenAIChatModel` through the real openai SDK, `max_retries=0`, over real HTTP to a
`ScriptedServer` whose one callable item is an `agent_workload.ChatResponder`: a re-asked turn
is answered with its clean call), pydantic-ai's defaults (`retries=1`, output tool mode):

- A (pydantic-ai alone): each tool checks its rule and raises `ModelRetry` when it breaks;
- H (pydantic-ai + healjson): the same tools and `HealCapability(tool_contracts=...)` with the
  same rules as healjson contracts.

Per arm: model calls (the server's requests), tokens (the responder's: request messages and
tools as JSON / 4, reply text / 4), runs that failed (an exception out of `run_sync`), wrong
values (each executed tool call and each returned output against its ticket:
`agent_workload.check_run`), and wall time (sum over runs; the arms alternate run by run). Calls,
tokens, failures and wrong values are exact and deterministic; wall time is indicative (a shared
machine). Results are printed and written to `benchmarks/results/agents_pydantic_ai.md`.
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

from openai import AsyncOpenAI
from pydantic_ai import Agent, ModelRetry
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

import healjson
from _machine import ROOT, machine, publish, stamp, table
from agent_workload import (
    MALFORMATIONS,
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
from healjson.pydantic_ai import HealCapability
from healjson.testing import ScriptedServer

RESULTS = ROOT / "benchmarks" / "results" / "agents_pydantic_ai.md"
OUTPUT_TOOL = "final_result"  # pydantic-ai's output tool


@dataclass
class Arm:
    """One contender: its agent, server, responder and what its tools executed."""

    name: str
    agent: Agent[None, Report]
    server: ScriptedServer
    responder: ChatResponder
    client: AsyncOpenAI
    capability: HealCapability[None] | None = None
    executed: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failed: int = 0
    wrong: int = 0
    wall_s: float = 0.0
    failures: Counter[str] = field(default_factory=Counter)
    completed: set[int] = field(default_factory=set)  # the indices of the runs that returned
    runs: int = 0  # runs made
    extra_calls: Counter[str] = field(default_factory=Counter)  # by malformation
    healed: Counter[str] = field(default_factory=Counter)  # by malformation


def _rule(tool: str) -> healjson.Contract[dict[str, Any]]:
    @healjson.contract(name=f"{tool}_rule")
    def rule(args: dict[str, Any]) -> healjson.Violation | None:
        broken = breach(tool, args)
        return healjson.Violation(broken) if broken else None

    return rule


def make_arm(name: Literal["A", "H"], first: Run, repeats: int) -> Arm:
    responder = ChatResponder(first, output_tool=OUTPUT_TOOL, repeats=repeats)
    server = ScriptedServer([responder], repeat=True).start()
    client = AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    model = OpenAIChatModel("scripted-model", provider=OpenAIProvider(openai_client=client))
    capability = None
    if name == "H":
        rules = {tool: [_rule(tool)] for tool in ("search", "get_weather", "book_room")}
        capability = HealCapability[None](tool_contracts=rules)
    agent = Agent(
        model,
        output_type=Report,
        capabilities=[capability] if capability is not None else [],
    )
    arm = Arm(name, agent, server, responder, client, capability)

    def run_tool(tool: str, args: dict[str, Any]) -> str:
        broken = breach(tool, args)
        if broken:
            raise ModelRetry(broken)
        arm.executed.append((tool, args))
        return tool_result(tool, args)

    @agent.tool_plain
    def search(query: str, limit: int) -> str:
        """Search the catalogue."""
        return run_tool("search", {"query": query, "limit": limit})

    @agent.tool_plain
    def get_weather(city: str, days: int) -> str:
        """The forecast for a city."""
        return run_tool("get_weather", {"city": city, "days": days})

    @agent.tool_plain
    def book_room(guest: str, nights: int, room: Literal["single", "double", "suite"]) -> str:
        """Book a hotel room."""
        return run_tool("book_room", {"guest": guest, "nights": nights, "room": room})

    return arm


def run_one(arm: Arm, run: Run) -> None:
    arm.responder.set_run(run)
    arm.executed.clear()
    heals_before = len(arm.capability.heals) if arm.capability else 0
    output: Mapping[str, Any] | None = None
    started = time.perf_counter()
    try:
        result = arm.agent.run_sync(run.prompt)
        output = result.output.model_dump()
        arm.completed.add(run.index)
    except Exception as exc:
        arm.failed += 1
        arm.failures[type(exc).__name__] += 1
    arm.wall_s += time.perf_counter() - started
    arm.runs += 1
    arm.calls += arm.responder.calls
    prompt, completion = arm.responder.tokens
    arm.prompt_tokens += prompt
    arm.completion_tokens += completion
    arm.wrong += check_run(run, arm.executed, output)
    attempts = Counter(served.turn for served in arm.responder.served)
    for index, count in attempts.items():
        arm.extra_calls[run.turns[index].malformation] += count - 1
    if arm.capability is not None:
        turns = {_call_key(run, i): t for i, t in enumerate(run.turns)}
        for record in arm.capability.heals[heals_before:]:
            turn = turns.get(record.tool_call_id or "")
            if turn is not None:
                arm.healed[turn.malformation] += 1


def _call_key(run: Run, turn: int) -> str:
    return f"call_{run.index}_{turn}_0"  # a heal is always of a turn's first reply


def measure(runs: list[Run], repeats: int) -> list[Arm]:
    """Both arms through every run (alternating run by run): [alone, healjson]."""
    arms = [make_arm("A", runs[0], repeats), make_arm("H", runs[0], repeats)]
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)  # run_sync runs on the thread's loop: one for the whole run
    try:
        for run in runs:
            for arm in arms if run.index % 2 == 0 else arms[::-1]:
                run_one(arm, run)
    finally:
        for arm in arms:
            loop.run_until_complete(arm.client.close())
            arm.server.stop()
        asyncio.set_event_loop(None)
        loop.close()
    return arms


def met(arms: list[Arm], *, fewer_calls: bool = True) -> bool:
    """The targets: fewer calls (when both arms finish their runs), no run lost that pydantic-ai
    alone completes, no wrong value."""
    alone, healed = arms
    calls_ok = healed.calls < alone.calls or not fewer_calls
    return calls_ok and healed.wrong == 0 and alone.completed <= healed.completed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument(
        "--stubborn-runs", type=int, default=100, help="runs of part 2 (the first N)"
    )
    args = parser.parse_args()
    logging.getLogger("healjson").setLevel(logging.CRITICAL)
    started = time.perf_counter()
    runs = generate(args.runs, args.seed)
    parts = {0: measure(runs, 0), 1: measure(runs[: args.stubborn_runs], 1)}
    elapsed = time.perf_counter() - started
    publish(report(runs, parts, args, elapsed), RESULTS, f" in {elapsed:.0f} s")
    return 0 if all(met(arms, fewer_calls=not r) for r, arms in parts.items()) else 1


PART_TITLES = {
    0: "1. A model that fixes what it is asked to fix",
    1: "2. A stubborn model (a re-ask is answered with the same malformed text once more)",
}


def report(
    runs: list[Run], parts: dict[int, list[Arm]], args: argparse.Namespace, elapsed: float
) -> list[str]:
    turns = sum(len(run.turns) for run in runs)
    tool_calls = sum(len(run.tool_turns) for run in runs)
    mix = summary(runs)
    lines = [
        "# pydantic-ai agent workload: pydantic-ai alone vs pydantic-ai + healjson",
        "",
        *stamp(),
        f"- healjson {version('healjson')}, pydantic-ai-slim {version('pydantic-ai-slim')}, "
        f"openai {version('openai')}, pydantic {version('pydantic')}",
        *machine(),
        f"- run time: {elapsed:.0f} s",
        "",
        "## Targets",
        "",
    ]
    for repeats, (alone, healed) in parts.items():
        fewer = 1 - healed.calls / alone.calls if alone.calls else 0.0
        lost = sorted(alone.completed - healed.completed)
        ok = met([alone, healed], fewer_calls=not repeats)
        per_run = " / ".join(
            f"{arm.calls / len(arm.completed):.2f}" if arm.completed else "-"
            for arm in (healed, alone)
        )
        calls = (
            f"model calls pydantic-ai + healjson {healed.calls:,}, alone {alone.calls:,}: "
            f"**{fewer:.1%} fewer** (target: fewer)"
            if not repeats
            else f"model calls {healed.calls:,} vs {alone.calls:,} (a failed run stops early: "
            f"no target), {per_run} per completed run"
        )
        lines.append(
            f"- part {PART_TITLES[repeats].split('.')[0]} ({alone.runs} runs): {calls}; runs "
            f"completed **{len(healed.completed)} vs {len(alone.completed)}**, runs lost that "
            f"pydantic-ai alone completes: {len(lost)} (target 0); wrong values {healed.wrong} "
            "(target 0; "
            f"alone {alone.wrong}); healed locally {sum(healed.healed.values())} — "
            + ("met" if ok else "missed")
        )
    lines += [
        "",
        "## Workload",
        "",
        f"`agent_workload.generate(runs={args.runs}, seed={args.seed})`: {len(runs)} runs, "
        f"{tool_calls} tool calls and {len(runs)} outputs ({turns} turns, the fewest model calls "
        "a run can make); turns by malformation: "
        + ", ".join(f"{name} {count}" for name, count in mix.items())
        + ". Both arms: the same `Agent` (`OpenAIChatModel`, openai "
        "`AsyncOpenAI(max_retries=0)`, pydantic-ai defaults: `retries=1`, output tool "
        "`final_result`), the same tools (each raises `ModelRetry` when its rule breaks); "
        "healjson's arm adds `HealCapability(tool_contracts=...)` with the same rules. Arms "
        "alternate run by run. *Wrong values*: each executed tool call's arguments and each "
        "returned output that differ from their tickets (`check_run`); every value healjson "
        "healed was executed or returned, so each was checked.",
    ]
    for repeats, arms in parts.items():
        done = runs[: arms[0].runs]
        intro = f"The first {len(done)} runs of the workload." if len(done) < len(runs) else ""
        lines += ["", f"## {PART_TITLES[repeats]}", ""]
        lines += [intro, ""] if intro else []
        lines += _part(done, summary(done), arms)
    lines += [
        "",
        "Reading it: a trailing comma, a fence, single quotes and a key in the wrong case cost "
        "pydantic-ai alone a re-ask each (a fenced *output* does not: pydantic-ai strips fences "
        "from output text itself); healjson repairs them before pydantic-ai validates. A quoted "
        "integer costs neither arm a call: pydantic-ai validates tool arguments in lax mode. A "
        "string cut by the token limit and a value breaking a rule cost both arms the same "
        "re-ask: nothing local can restore a cut value, and a rule's breach must go back to the "
        "model (healjson's retry prompt carries the diagnostic: value, rule, fix). With a "
        "stubborn model, pydantic-ai's one retry per tool is spent on the repeated malformation "
        "and the run fails (`UnexpectedModelBehavior`); healjson never spends it on what it "
        "repairs, so those runs complete; runs with a repeated cut or breach fail in both arms.",
        "",
        "Wall time is the sum of the runs' `run_sync` times on a loaded 2-core machine shared "
        "with other work: indicative only. Calls, tokens, failures and wrong values are exact "
        "(the same on every run of this command).",
    ]
    return lines


def _part(runs: list[Run], mix: Mapping[str, int], arms: list[Arm]) -> list[str]:
    alone, healed = arms
    return [
        *arm_table(arms, len(runs), "pydantic-ai alone", "pydantic-ai + healjson"),
        "",
        "Extra model calls (beyond one per turn) by the malformation of the turn's first reply; "
        "*healed*: the turns healjson repaired locally.",
        "",
        *table(
            ["malformation", "turns", "extra calls alone", "extra calls healjson", "healed"],
            [
                [
                    name,
                    str(mix[name]),
                    str(alone.extra_calls[name]),
                    str(healed.extra_calls[name]),
                    str(healed.healed[name]),
                ]
                for name in MALFORMATIONS
            ],
        ),
    ]


if __name__ == "__main__":
    raise SystemExit(main())
