"""The MCP boundary healed: what the bare SDK raises, what healjson heals (and never gets wrong),
the model calls an agent saves, and what a healthy `call_tool` costs through the wrapper.

Run from the repository root:

    .venv/bin/python benchmarks/bench_mcp.py

Part 1 (the corpus): CASES tool calls drawn with a fixed seed (`--seed`) from the failure
families public trackers report — JSON only in a text block (bare, among prose, fenced), keys in
another case, numbers as strings, the result wrapped in one more object, JSON encoded in a
string, a required field missing, a value of the wrong type — beside conforming results and the
server's own error results; a fifth of the calls also send sloppy arguments (an object as a
JSON string, a key in another case). Each call goes through the real `mcp` SDK, in memory
(`Client(server)`), to `healjson.testing.ScriptedMCPServer`, whose tool answers the case the
call names; the server checks arguments against its input schema as real servers do. Each case
knows what the server meant: the value, or (missing field, wrong type) that no value can be read.

- bare SDK: the calls that raise (`RuntimeError` from the output-schema check, `MCPError`
  `-32602` for the arguments);
- healed (`healjson.wrap(client)`): right (the value meant; or, where none can be read, an error
  result naming the field; or the server's error result untouched), wrong (a value other than
  the one meant: must be 0), missed (an error result where the value could be read).

The model calls an agent spends on these calls, with pydantic-ai's MCP toolset as the anchor:
its `tool_error_behavior="retry"` (the default) turns a tool error result, and a protocol error,
into `ModelRetry`: one more model call for the model to try again. With the bare SDK the output
check's `RuntimeError` is not caught at all (the run fails); the remedy in the wild is to send it
back as an error, one model call each. Healed, only what cannot be healed costs that call.

Part 2 (overhead): a healthy `call_tool` (conforming structured content, clean arguments)
through the wrapper against the bare SDK (whose own output-schema check runs on every call; the
wrapper replaces it with healjson's own check), in memory on both SDK paths: `Client(server)`
(its direct 2026-07-28 path) and a `ClientSession` over memory streams (the 2025-11-25
handshake); with the `fast` extra (`jsonschema-rs` says "valid") and, in a child process,
without it (`jsonschema` alone, as the SDK's own check uses). CPU time
of the process (`time.process_time_ns`: client and in-process server alike) per batch of
BATCH calls, the contenders interleaved pair by pair (the order alternating); the verdict is the
median of the per-pair ratios, target <= 1.05x.

Results are printed and written to `benchmarks/results/mcp.md`.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import random
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp import Client, ClientSession, MCPError, types
from mcp.shared.memory import create_client_server_memory_streams

sys.path.insert(0, str(Path(__file__).resolve().parent))
if "--no-fast-rows" in sys.argv:
    sys.modules["jsonschema_rs"] = None  # type: ignore[assignment]  # the `fast` extra, absent

import healjson
from _machine import machine, publish, stamp, table
from healjson.testing import ScriptedMCPServer, ScriptedTool, ScriptedToolResult

RESULTS = Path(__file__).resolve().parent / "results" / "mcp.md"

OUTPUT = {
    "type": "object",
    "properties": {
        "temperature": {"type": "number"},
        "city": {"type": "string"},
        "humidity": {"type": "integer"},
        "conditions": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["temperature", "city"],
    "additionalProperties": False,
}
INPUT = {
    "type": "object",
    "properties": {
        "case": {"type": "integer"},
        "city": {"type": "string"},
        "options": {"type": "object", "properties": {"units": {"type": "string"}}},
    },
    "required": ["case", "city"],
    "additionalProperties": False,
}
CITIES = ("Oslo", "Lima", "Hanoi", "Accra", "Perth", "Quito", "Riga", "Dakar")
CONDITIONS = ("sunny", "rain", "wind", "fog", "snow", "hail")

# family -> weight in the corpus
FAMILIES = {
    "conforming": 25,
    "error_result": 5,
    "json_only_in_text": 10,
    "json_in_prose": 5,
    "json_fenced": 5,
    "keys_in_another_case": 10,
    "numbers_as_strings": 10,
    "wrapped_in_one_more_object": 10,
    "json_in_a_string": 5,
    "missing_required_field": 8,
    "wrong_type": 7,
}
UNHEALABLE = {"missing_required_field": "temperature", "wrong_type": "temperature"}


@dataclass(frozen=True)
class Case:
    """One tool call of the corpus: what the server sends, the value it meant (None: none can be
    read, `field` names what is missing or wrong), and the arguments the agent sends."""

    family: str
    sent: ScriptedToolResult
    meant: Any
    field: str | None
    arguments: dict[str, Any]
    sloppy_arguments: bool


def weather(rng: random.Random) -> dict[str, Any]:
    """A value the tool means to return."""
    value: dict[str, Any] = {
        "temperature": round(rng.uniform(-30, 45), 1),
        "city": rng.choice(CITIES),
    }
    if rng.random() < 0.5:
        value["humidity"] = rng.randint(0, 100)
    if rng.random() < 0.7:
        value["conditions"] = rng.sample(CONDITIONS, rng.randint(1, 3))
    return value


def mangled(family: str, value: dict[str, Any], rng: random.Random) -> ScriptedToolResult:
    """What a sloppy server sends for `value` in `family`."""
    text = json.dumps(value)
    if family == "conforming":
        return ScriptedToolResult(structured=value)
    if family == "error_result":
        return ScriptedToolResult(text=f"upstream {rng.randint(500, 504)}", is_error=True)
    if family == "json_only_in_text":
        return ScriptedToolResult(text=text)
    if family == "json_in_prose":
        return ScriptedToolResult(text=f"Here is the weather: {text}. Stay dry!")
    if family == "json_fenced":
        return ScriptedToolResult(text=f"```json\n{json.dumps(value, indent=2)}\n```")
    if family == "keys_in_another_case":
        style = rng.choice([str.upper, str.title, str.capitalize])
        return ScriptedToolResult(structured={style(k): v for k, v in value.items()}, text=())
    if family == "numbers_as_strings":
        stringified = {k: str(v) if isinstance(v, int | float) else v for k, v in value.items()}
        return ScriptedToolResult(structured=stringified, text=())
    if family == "wrapped_in_one_more_object":
        wrapper = rng.choice(["weather", "result", "data", "forecast"])
        return ScriptedToolResult(structured={wrapper: value}, text=())
    if family == "json_in_a_string":
        return ScriptedToolResult(structured=text, text=())
    if family == "missing_required_field":
        return ScriptedToolResult(structured={k: v for k, v in value.items() if k != "temperature"})
    if family == "wrong_type":
        return ScriptedToolResult(structured={**value, "temperature": rng.choice(["warm", "n/a"])})
    raise ValueError(family)


def corpus(size: int, seed: int) -> list[Case]:
    """`size` cases drawn with `seed`."""
    rng = random.Random(seed)
    names, weights = zip(*FAMILIES.items(), strict=True)
    cases = []
    for index in range(size):
        family = rng.choices(names, weights)[0]
        value = weather(rng)
        sloppy = rng.random() < 0.2
        city = value["city"]
        arguments: dict[str, Any] = {"case": index, "city": city, "options": {"units": "C"}}
        if sloppy:
            arguments = rng.choice(
                [
                    {"case": index, "City": city},
                    {"case": index, "city": city, "options": '{"units": "C"}'},
                ]
            )
        field = UNHEALABLE.get(family)
        meant = None if field or family == "error_result" else value
        cases.append(Case(family, mangled(family, value, rng), meant, field, arguments, sloppy))
    return cases


def server_for(cases: list[Case]) -> ScriptedMCPServer:
    """The scripted server: its tool answers the case each call names."""

    def answer(arguments: Any) -> ScriptedToolResult:
        return cases[int(arguments["case"])].sent

    return ScriptedMCPServer(
        [ScriptedTool("get_weather", INPUT, OUTPUT)], {"get_weather": [answer]}, repeat=True
    )


def text_of(result: Any) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


# ---------------------------------------------------------------------------------------------
# Part 1
# ---------------------------------------------------------------------------------------------


async def outcomes(cases: list[Case], *, heal: bool) -> list[Any]:
    """Each case's result (or the exception it raised), in order, on one session."""
    server = server_for(cases)
    found: list[Any] = []
    client = Client(server.server)
    async with healjson.wrap(client) if heal else client as session:
        for case in cases:
            try:
                found.append(await session.call_tool("get_weather", case.arguments))
            except (RuntimeError, MCPError) as exc:
                found.append(exc)
    return found


def judged(case: Case, result: Any) -> str:
    """right / wrong / missed / raised, for a healed call."""
    if isinstance(result, Exception):
        return "raised"
    if not result.is_error:
        return (
            "right"
            if case.meant is not None and result.structured_content == case.meant
            else "wrong"
        )
    if case.family == "error_result":
        return "right" if text_of(result) == case.sent.text else "wrong"
    if case.field is not None:
        return "right" if f"`{case.field}`" in text_of(result) else "wrong"
    return "missed"


def part1(cases: list[Case]) -> tuple[list[str], dict[str, Any]]:
    bare = anyio.run(lambda: outcomes(cases, heal=False))
    healed = anyio.run(lambda: outcomes(cases, heal=True))
    per_family: dict[str, Counter[str]] = {name: Counter() for name in FAMILIES}
    totals: Counter[str] = Counter()
    for case, raw, fixed in zip(cases, bare, healed, strict=True):
        counts = per_family[case.family]
        counts["n"] += 1
        counts["raised"] += isinstance(raw, RuntimeError)
        counts["protocol"] += isinstance(raw, MCPError)
        verdict = judged(case, fixed)
        counts[verdict] += 1
        totals[verdict] += 1
        totals["n"] += 1
        totals["raised"] += isinstance(raw, RuntimeError)
        totals["protocol"] += isinstance(raw, MCPError)
        nonconforming = case.family not in ("conforming", "error_result")
        # pydantic-ai's retry anchor: one model call per error sent back to the model
        totals["retries_sent_back"] += nonconforming + case.sloppy_arguments
        totals["retries_healed"] += case.field is not None or verdict in ("missed", "wrong")
        totals["runs_lost_bare"] += nonconforming  # its output check raises
        totals["retries_bare"] += case.sloppy_arguments  # `-32602` is a retry
        totals["sloppy_arguments"] += case.sloppy_arguments
    saved = totals["retries_sent_back"] - totals["retries_healed"]
    rows = [
        [
            name,
            str(c["n"]),
            str(c["raised"]),
            str(c["protocol"]),
            str(c["right"]),
            str(c["wrong"]),
            str(c["missed"]),
        ]
        for name, c in per_family.items()
    ]
    rows.append(
        [
            "**all**",
            str(totals["n"]),
            str(totals["raised"]),
            str(totals["protocol"]),
            str(totals["right"]),
            str(totals["wrong"]),
            str(totals["missed"]),
        ]
    )
    lines = [
        "## Part 1: the corpus through the real SDK (in memory)",
        "",
        f"{totals['n']} calls; {totals['sloppy_arguments']} of them with sloppy arguments. "
        "`raised`: the bare SDK raised `RuntimeError` (output check); `-32602`: the bare call's "
        "arguments were refused by the server (`MCPError`). Healed: `right` (the value meant; "
        "an error result naming the field where no value can be read; the server's error "
        "result untouched), `wrong` (a value other than the one meant), `missed` (an error "
        "result where the value could be read).",
        "",
        *table(
            ["family", "calls", "bare: raised", "bare: -32602", "healed: right", "wrong", "missed"],
            rows,
        ),
        "",
        "## Model calls an agent spends on them (pydantic-ai's `retry` as the anchor)",
        "",
        *table(
            ["client", "extra model calls", "runs lost"],
            [
                [
                    "bare SDK in pydantic-ai's MCP toolset",
                    f"{totals['retries_bare']} (the refused arguments)",
                    f"{totals['runs_lost_bare']} (the output check's `RuntimeError` ends the run)",
                ],
                [
                    "errors sent back to the model (one retry call each)",
                    str(totals["retries_sent_back"]),
                    "0",
                ],
                [
                    "healed (only what cannot be healed is sent back)",
                    str(totals["retries_healed"]),
                    "0",
                ],
            ],
        ),
        "",
        f"Model calls saved against sending the errors back: "
        f"**{saved}** of {totals['retries_sent_back']} "
        f"({saved / max(1, totals['retries_sent_back']):.0%}), over {totals['n']} tool calls.",
    ]
    return lines, {"wrong": 0, **totals}


# ---------------------------------------------------------------------------------------------
# Part 2
# ---------------------------------------------------------------------------------------------


@contextlib.asynccontextmanager
async def memory_session(server: Any) -> AsyncIterator[ClientSession]:
    async with (
        create_client_server_memory_streams() as (client_side, server_side),
        anyio.create_task_group() as group,
    ):
        group.start_soon(lambda: server.run(*server_side, server.create_initialization_options()))
        async with ClientSession(*client_side) as session:
            await session.initialize()
            yield session
        group.cancel_scope.cancel()


def healthy_server(size: int) -> ScriptedMCPServer:
    value = {
        "temperature": 21.5,
        "city": "Oslo",
        "humidity": 40,
        "conditions": [CONDITIONS[i % len(CONDITIONS)] for i in range(size)],
    }
    return ScriptedMCPServer(
        [ScriptedTool("get_weather", INPUT, OUTPUT)],
        {"get_weather": [ScriptedToolResult(structured=value)]},
        repeat=True,
    )


async def pairs(kind: str, size: int, count: int, batch: int) -> dict[str, Any]:
    """CPU per call of bare and healed, interleaved batch by batch."""
    bare_server, healed_server = healthy_server(size), healthy_server(size)
    arguments = {"case": 0, "city": "Oslo"}
    stack = contextlib.AsyncExitStack()
    async with stack:
        if kind == "client":
            bare: Any = await stack.enter_async_context(Client(bare_server.server))
            healed: Any = await stack.enter_async_context(
                healjson.wrap(Client(healed_server.server))
            )
        else:
            bare = await stack.enter_async_context(memory_session(bare_server.server))
            healed = healjson.wrap(
                await stack.enter_async_context(memory_session(healed_server.server))
            )

        async def timed(session: Any) -> int:
            started = time.process_time_ns()
            for _ in range(batch):
                await session.call_tool("get_weather", arguments)
            return time.process_time_ns() - started

        for _ in range(20):  # warm-up: listings, caches, validators
            await timed(bare)
            await timed(healed)
        gc.collect()
        bare_ns: list[int] = []
        healed_ns: list[int] = []
        for index in range(count):
            if index % 2:
                bare_ns.append(await timed(bare))
                healed_ns.append(await timed(healed))
            else:
                healed_ns.append(await timed(healed))
                bare_ns.append(await timed(bare))
    ratios = [h / b for h, b in zip(healed_ns, bare_ns, strict=True) if b]
    quartiles = statistics.quantiles(ratios, n=4)
    return {
        "bare": statistics.median(bare_ns) / batch,
        "healed": statistics.median(healed_ns) / batch,
        "ratio": statistics.median(ratios),
        "q1": quartiles[0],
        "q3": quartiles[2],
        "result_chars": len(json.dumps(healthy_server(size).results["get_weather"][0].structured)),
    }


def part2_rows(count: int, batch: int, fast: str) -> list[list[str]]:
    """The overhead rows, measured in this process (`fast`: what the row says of the extra)."""
    rows = []
    for kind in ("client", "session"):
        for size in (2, 200):
            found = anyio.run(pairs, kind, size, count, batch)
            rows.append(
                [
                    "`Client(server)` (direct, 2026-07-28)"
                    if kind == "client"
                    else "`ClientSession` over memory streams (handshake)",
                    f"{found['result_chars']:,} chars",
                    fast,
                    f"{found['bare'] / 1000:.1f} µs",
                    f"{found['healed'] / 1000:.1f} µs",
                    f"**{found['ratio']:.3f}x**",
                    f"{found['q1']:.3f}x to {found['q3']:.3f}x",
                ]
            )
            print(f"part 2 ({fast}): {kind}, {size} conditions done", file=sys.stderr)
    return rows


def part2(count: int, batch: int) -> tuple[list[str], list[float]]:
    rows = part2_rows(count, batch, "fast")
    child = subprocess.run(
        [sys.executable, __file__, "--no-fast-rows", "--pairs", str(count), "--batch", str(batch)],
        capture_output=True,
        text=True,
        check=True,
    )
    verdicts = [float(row[5].strip("*x")) for row in rows]  # `healjson[mcp]` brings `fast`
    rows += json.loads(child.stdout)
    lines = [
        "## Part 2: a healthy `call_tool`, through the wrapper vs bare (target <= 1.05x)",
        "",
        f"CPU time of the process per call (client and in-process server), {count} interleaved "
        f"pairs of {batch}-call batches after a warm-up, the order alternating; the ratio is the "
        "median of the per-pair ratios (healed / bare), with its interquartile range. The bare "
        "SDK runs its own output-schema check on every call (`jsonschema`); the wrapper skips it "
        "and checks the structured content and the arguments itself, a `validate` run only for "
        "what fails the check. The verdict is the `fast` rows: the `mcp` extra installs "
        "`jsonschema-rs`; without it (`jsonschema` alone, the last rows) healjson's check costs "
        "what the SDK's does, and the arguments' check comes on top.",
        "",
        *table(
            ["path", "result", "healjson's check", "bare", "healed", "ratio", "IQR of ratios"],
            rows,
        ),
    ]
    return lines, verdicts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=600)
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--batch", type=int, default=5)
    parser.add_argument("--results", type=Path, default=RESULTS)
    parser.add_argument("--no-fast-rows", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.no_fast_rows:  # the child: part 2 with `jsonschema` alone, rows as JSON on stdout
        print(json.dumps(part2_rows(args.pairs, args.batch, "`jsonschema` alone")))
        return 0
    started = time.perf_counter()
    header = [*stamp(), *machine()]
    cases = corpus(args.cases, args.seed)
    corpus_lines, totals = part1(cases)
    print("part 1 done", file=sys.stderr)
    overhead_lines, ratios = part2(args.pairs, args.batch)
    lines = [
        "# MCP: tool results and arguments healed at the boundary",
        "",
        *header,
        f"- corpus: {args.cases} calls, seed {args.seed}; mcp {_version('mcp')}",
        f"- run time: {time.perf_counter() - started:.0f} s",
        "",
        f"**Verdict:** wrong values {totals['wrong']} (target 0); overhead "
        + ", ".join(f"{ratio:.3f}x" for ratio in ratios)
        + f" (target <= 1.05x: {'met' if max(ratios) <= 1.05 else 'MISSED'}).",
        "",
        *corpus_lines,
        "",
        *overhead_lines,
    ]
    publish(lines, args.results)
    return 0 if totals["wrong"] == 0 else 1


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


if __name__ == "__main__":
    sys.exit(main())
