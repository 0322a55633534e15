"""Benchmark a LangChain v1 agent alone against the same agent with `healjson.langchain`.

Run from the repository root:

    .venv/bin/python benchmarks/bench_agents_langchain.py [--runs 200] [--seed 25]

The workload is `agent_workload.generate(runs, seed)` (the one the pydantic-ai and Agents SDK
benchmarks run): runs of 3 to 6 tool calls (`search`, `get_weather`, `book_room`) and a
structured response (`Report`), a seeded mix of malformations, each call with its ticket. Both
arms are the same `create_agent(ChatOpenAI(...), tools=[...], response_format=ToolStrategy(Report))`
over real HTTP to a `ScriptedServer` whose one callable item is an `agent_workload.ChatResponder`
(the structured response is a call of LangChain's output tool `Report`; a re-asked turn is
answered with its clean call), driven by `agent.invoke`:

- A (LangChain alone): the tools return an error text when their rule breaks (the model then
  sends the call again); LangChain's own handling of everything else (`ToolStrategy`'s default
  `handle_errors=True`, its tool-argument validation errors);
- H (LangChain + healjson): the same agent with `middleware=[HealMiddleware(tool_contracts=...)]`
  (the same rules as healjson contracts).

Per arm: model calls, tokens, runs failed (an exception, or a run that ended without its
structured response), wrong values (executed tool calls and the response against their tickets:
`agent_workload.check_run`), wall time (indicative). Results are printed and written to
`benchmarks/results/agents_langchain.md`.
"""

from __future__ import annotations

import argparse
import logging
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any, Literal

import httpx
from langchain.agents import create_agent
from langchain.agents.structured_output import ToolStrategy
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

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
from healjson.langchain import HealMiddleware
from healjson.testing import ScriptedServer

RESULTS = ROOT / "benchmarks" / "results" / "agents_langchain.md"
TOOL_NAMES = ("search", "get_weather", "book_room")
OUTPUT_TOOL = "Report"  # LangChain's output tool for `ToolStrategy(Report)`


@dataclass
class Arm:
    """One contender: its agent, server, responder, HTTP client and what its tools executed."""

    name: str
    agent: Any
    server: ScriptedServer
    responder: ChatResponder
    http: httpx.Client
    executed: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failed: int = 0
    wrong: int = 0
    wall_s: float = 0.0
    failures: Counter[str] = field(default_factory=Counter)
    failed_runs: set[int] = field(default_factory=set)
    failed_on: Counter[str] = field(default_factory=Counter)  # by the turn's malformation
    extra_calls: Counter[str] = field(default_factory=Counter)  # by malformation
    calls_by_run: dict[int, int] = field(default_factory=dict)


def _rule(tool_name: str) -> healjson.Contract[Any]:
    @healjson.contract(name=f"{tool_name}_rule")
    def rule(args: Any) -> healjson.Violation | None:
        broken = breach(tool_name, args.model_dump())
        return healjson.Violation(broken) if broken else None

    return rule


def make_arm(name: Literal["A", "H"], first: Run) -> Arm:
    responder = ChatResponder(first, output_tool=OUTPUT_TOOL)
    server = ScriptedServer([responder], repeat=True).start()
    http = httpx.Client()
    model = ChatOpenAI(
        model="scripted-model",
        base_url=server.base_url,
        api_key="sk-test",
        max_retries=0,
        http_client=http,
    )
    executed: list[tuple[str, dict[str, Any]]] = []

    def run_tool(tool_name: str, args: dict[str, Any]) -> str:
        broken = breach(tool_name, args)
        if broken:
            return f"ERROR: {broken}"  # the model is told, and sends the call again
        executed.append((tool_name, args))
        return tool_result(tool_name, args)

    @tool
    def search(query: str, limit: int) -> str:
        """Search the catalogue."""
        return run_tool("search", {"query": query, "limit": limit})

    @tool
    def get_weather(city: str, days: int) -> str:
        """The forecast for a city."""
        return run_tool("get_weather", {"city": city, "days": days})

    @tool
    def book_room(guest: str, nights: int, room: Literal["single", "double", "suite"]) -> str:
        """Book a hotel room."""
        return run_tool("book_room", {"guest": guest, "nights": nights, "room": room})

    middleware = []
    if name == "H":
        rules = {tool_name: [_rule(tool_name)] for tool_name in TOOL_NAMES}
        middleware = [HealMiddleware(tool_contracts=rules)]
    agent = create_agent(
        model,
        tools=[search, get_weather, book_room],
        system_prompt="Plan the trip with the tools, then report.",
        response_format=ToolStrategy(Report),
        middleware=middleware,
    )
    return Arm(name, agent, server, responder, http, executed)


def run_one(arm: Arm, run: Run) -> None:
    arm.responder.set_run(run)
    arm.executed.clear()
    output: Mapping[str, Any] | None = None
    started = time.perf_counter()
    try:
        result = arm.agent.invoke(
            {"messages": [{"role": "user", "content": run.prompt}]},
            {"recursion_limit": 60},
        )
        found = result.get("structured_response")
        if found is None:
            arm.failed += 1
            arm.failures["no structured response"] += 1
            arm.failed_runs.add(run.index)
            last = arm.responder.served[-1].turn if arm.responder.served else 0
            arm.failed_on[run.turns[last].malformation] += 1
        else:
            output = found.model_dump()
    except Exception as exc:
        arm.failed += 1
        arm.failures[type(exc).__name__] += 1
        arm.failed_runs.add(run.index)
    arm.wall_s += time.perf_counter() - started
    arm.calls += arm.responder.calls
    arm.calls_by_run[run.index] = arm.responder.calls
    prompt, completion = arm.responder.tokens
    arm.prompt_tokens += prompt
    arm.completion_tokens += completion
    arm.wrong += check_run(run, arm.executed, output)
    attempts = Counter(served.turn for served in arm.responder.served)
    for index, count in attempts.items():
        arm.extra_calls[run.turns[index].malformation] += count - 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=25)
    args = parser.parse_args()
    logging.getLogger("healjson").setLevel(logging.CRITICAL)
    started = time.perf_counter()
    runs = generate(args.runs, args.seed)
    arms = [make_arm("A", runs[0]), make_arm("H", runs[0])]
    try:
        for run in runs:
            for arm in arms if run.index % 2 == 0 else arms[::-1]:
                run_one(arm, run)
    finally:
        for arm in arms:
            arm.http.close()
            arm.server.stop()
    elapsed = time.perf_counter() - started
    publish(report(runs, arms, args, elapsed), RESULTS, f" in {elapsed:.0f} s")
    alone, healed = arms
    both = paired(runs, arms)
    ok = both[1] < both[0] and healed.wrong == 0 and healed.failed < alone.failed
    return 0 if ok else 1


def paired(runs: list[Run], arms: list[Arm]) -> tuple[int, int, int]:
    """(calls alone, calls healjson, runs) over the runs both arms completed: the same work."""
    done = [run.index for run in runs if all(run.index not in a.failed_runs for a in arms)]
    alone, healed = arms
    return (
        sum(alone.calls_by_run[i] for i in done),
        sum(healed.calls_by_run[i] for i in done),
        len(done),
    )


def per_completed(arm: Arm, runs: int) -> str:
    completed = runs - arm.failed
    return f"{arm.calls / completed:.2f}" if completed else "-"


def tokens(arm: Arm) -> int:
    return arm.prompt_tokens + arm.completion_tokens


def report(runs: list[Run], arms: list[Arm], args: argparse.Namespace, elapsed: float) -> list[str]:
    alone, healed = arms
    turns = sum(len(run.turns) for run in runs)
    tool_calls = sum(len(run.tool_turns) for run in runs)
    mix = summary(runs)
    lost = len(healed.failed_runs - alone.failed_runs)
    calls_alone, calls_healed, both = paired(runs, arms)
    fewer = 1 - calls_healed / calls_alone if calls_alone else 0.0
    return [
        "# LangChain agent workload: LangChain alone vs LangChain + healjson",
        "",
        *stamp(),
        f"- healjson {version('healjson')}, langchain {version('langchain')}, "
        f"langchain-openai {version('langchain-openai')}, langgraph {version('langgraph')}, "
        f"openai {version('openai')}",
        *machine(),
        f"- run time: {elapsed:.0f} s",
        "",
        "## Targets",
        "",
        f"- model calls on the {both} runs both arms completed (the same work): LangChain + "
        f"healjson {calls_healed:,}, LangChain alone {calls_alone:,}: **{fewer:.1%} fewer** "
        "(target: fewer) — " + ("met" if calls_healed < calls_alone else "missed"),
        f"- model calls in all: healjson {healed.calls:,}, alone {alone.calls:,} (a failed run "
        "stops early: alone spends fewer calls in all and completes fewer runs); calls per "
        f"completed run: healjson {per_completed(healed, len(runs))}, alone "
        f"{per_completed(alone, len(runs))}",
        f"- tokens (prompt + completion): healjson {tokens(healed):,}, alone {tokens(alone):,}",
        f"- runs failed: healjson {healed.failed}, alone {alone.failed} (target: fewer) — "
        + ("met" if healed.failed < alone.failed else "missed")
        + f"; runs lost that LangChain alone completes: {lost}",
        f"- wrong values (executed tool arguments and responses against their tickets): "
        f"healjson {healed.wrong}, alone {alone.wrong} (target: 0) — "
        + ("met" if healed.wrong == 0 else "missed"),
        "",
        "## Workload",
        "",
        f"`agent_workload.generate(runs={args.runs}, seed={args.seed})`: {len(runs)} runs, "
        f"{tool_calls} tool calls and {len(runs)} structured responses ({turns} turns, the "
        "fewest model calls a run can make); turns by malformation: "
        + ", ".join(f"{name} {count}" for name, count in mix.items())
        + ". Both arms: `create_agent(ChatOpenAI(max_retries=0), tools=[...], "
        "response_format=ToolStrategy(Report))`, the tools answering an error text when their "
        "rule breaks; H adds `HealMiddleware(tool_contracts=...)` with the same rules. Arms "
        "alternate run by run.",
        "",
        "## Per arm",
        "",
        *arm_table(arms, len(runs), "LangChain alone", "LangChain + healjson"),
        "",
        "Failures: " + ", ".join(f"{arm.name}: {dict(arm.failures) or 'none'}" for arm in arms),
        "",
        "## By malformation",
        "",
        "Extra calls: calls beyond one per turn, by the malformation of the turn's first reply "
        "(a failed run stops counting); failed runs: by the malformation of the turn the run "
        "ended on.",
        "",
        *table(
            [
                "malformation",
                "turns",
                "extra calls alone",
                "extra calls healjson",
                "failed runs alone",
                "failed runs healjson",
            ],
            [
                [
                    name,
                    str(mix[name]),
                    str(alone.extra_calls[name]),
                    str(healed.extra_calls[name]),
                    str(alone.failed_on[name]),
                    str(healed.failed_on[name]),
                ]
                for name in MALFORMATIONS
            ],
        ),
        "",
        "Reading it: arguments LangChain's OpenAI model cannot parse as JSON (a trailing comma, "
        "a fence, single quotes, a string cut by the token limit) become `invalid_tool_calls`; "
        "a turn with no valid call ends LangChain's loop, so the run ends without its "
        "structured response (a failed run), whether the broken call was a tool's or the "
        "output tool's. healjson reads them locally (the cut one is asked again, alone). A key "
        "in the wrong case fails LangChain's validation (a tool error, or the output tool's "
        "error message, then the call again); healjson aligns it. A rule breach costs both arms "
        "one re-ask. Wall time: indicative only (a shared 2-core machine); the other figures "
        "are exact and the same on every run of this command.",
    ]


if __name__ == "__main__":
    raise SystemExit(main())
