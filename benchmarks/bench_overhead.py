"""Benchmark the client-side cost of `healjson.wrap` on the happy path, against the bare SDK.

Run from the repository root:

    .venv/bin/python benchmarks/bench_overhead.py

Every call goes over real HTTP to `healjson.testing._server` running in *separate processes*
(one replying a valid `Order` as message content, one replying it as a tool call), so the
client process measures only the client: the OpenAI SDK, its HTTP stack and whatever sits on
top of it. Contenders, all with `max_retries=0`, the same model name and the same messages:

- A (baseline): `OpenAI().chat.completions.create(..., response_format=<strict json_schema>)`
  then `Order.model_validate_json(content)`; the `response_format` is built with
  `healjson.adapters.strict_json_schema(Order).response_format()`, so A and B send byte-identical
  requests (checked before timing);
- B: `healjson.wrap(OpenAI()).chat.completions.create(response_model=Order, ...)`;
- C: `instructor.from_openai(OpenAI(), mode=Mode.JSON)` with `response_model=Order`;
- D: the same with `Mode.TOOLS` (against the tool-call server).

Part 1 (sync, per call): warm-up, then ROUNDS rounds of CALLS calls per contender, the order
rotating and reversing between rounds; `gc.collect()` before every batch. Each batch records the
client process's CPU time (`time.process_time_ns`) and wall time (`time.perf_counter_ns`). The
verdict uses the paired ratio: the median over rounds of (contender / baseline in that round).

Part 2 (async throughput): 1,000 calls at concurrency 50 (`asyncio.Semaphore`) with
`AsyncOpenAI` — bare + `model_validate_json` against `healjson.wrap(AsyncOpenAI())` — each run in
a fresh child process (so `ru_maxrss` is that run's own high-water mark), alternating, REPEATS
repeats each. A child runs 5 sequential warm-up calls, then the 1,000 timed calls (wall, CPU,
`ru_maxrss` delta), then another 1,000 under `tracemalloc` (traced peak above the start).

Part 3 (only when B misses the target, or with `--profile`): cProfile over PROFILE_CALLS calls of
A and of B in this process; where healjson's own time goes, per call.

Results are printed and written to `benchmarks/results/overhead.md`.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import datetime as dt
import gc
import json
import os
import platform
import pstats
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from importlib.metadata import version
from pathlib import Path
from typing import Any, Literal

import instructor
import openai
import pydantic
import pydantic_core
from pydantic import BaseModel

import healjson
from healjson.adapters import strict_json_schema

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "overhead.md"

TARGET_RATIO = 1.05  # issue target: healjson's client CPU per call <= 1.05x the bare client's
ROUNDS = int(os.environ.get("BENCH_ROUNDS", 15))
CALLS = 200
WARMUP_CALLS = 100
ASYNC_CALLS = 1_000
ASYNC_CONCURRENCY = 50
ASYNC_REPEATS = 2
PROFILE_CALLS = 2_000
MODEL_NAME = "gpt-4o-mini"


# --- the model, the reply and the request ---------------------------------------------------


class LineItem(BaseModel):
    sku: str
    quantity: int
    unit_price: float


class Order(BaseModel):
    order_id: str
    customer: str
    status: Literal["pending", "shipped", "delivered"]
    total: float
    express: bool
    items: list[LineItem]


EXPECTED = Order(
    order_id="ORD-204518",
    customer="Ada Lovelace",
    status="shipped",
    total=57.4,
    express=True,
    items=[
        LineItem(sku="SKU-1001", quantity=2, unit_price=12.5),
        LineItem(sku="SKU-2040", quantity=1, unit_price=24.9),
        LineItem(sku="SKU-3311", quantity=1, unit_price=7.5),
    ],
)
REPLY = EXPECTED.model_dump_json()
TOOL_REPLY = {
    "content": None,
    "finish_reason": "tool_calls",
    "tool_calls": [
        {
            "id": "call_scripted_1",
            "type": "function",
            "function": {"name": "Order", "arguments": REPLY},
        }
    ],
}
MESSAGES = [
    {"role": "system", "content": "You extract orders from customer e-mails."},
    {
        "role": "user",
        "content": (
            "Hi, this is Ada Lovelace. My order ORD-204518 (express) has shipped: two SKU-1001 "
            "at 12.50, one SKU-2040 at 24.90 and one SKU-3311 at 7.50, 57.40 in total. "
            "Please confirm the details."
        ),
    },
]
RESPONSE_FORMAT = strict_json_schema(Order).response_format()

BARE = "A. bare `OpenAI` + `model_validate_json` (baseline)"
HEALJSON = "B. `healjson.wrap(OpenAI())`"
INSTR_JSON = "C. instructor `Mode.JSON`"
INSTR_TOOLS = "D. instructor `Mode.TOOLS`"


# --- scripted servers in separate processes ---------------------------------------------------


# `python -m healjson.testing._server`, with one change: socketserver's default listen backlog
# (`request_queue_size = 5`) overflows when 50 async clients connect at once (the kernel drops
# the handshakes and the SDK sees `ReadError`/`APIConnectionError` after retransmit timeouts).
SERVER_LAUNCH = (
    "import sys, healjson.testing._server as s; "
    "s._HTTPServer.request_queue_size = 128; sys.exit(s.main())"
)


class ServerProcess:
    """The scripted server (`--replies FILE --repeat`) as a child process."""

    def __init__(self, replies: list[Any], workdir: Path, name: str) -> None:
        path = workdir / f"{name}.json"
        path.write_text(json.dumps(replies), encoding="utf-8")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVER_LAUNCH, "--replies", str(path), "--repeat"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("READY "):
            self.stop()
            raise RuntimeError(f"scripted server did not start: {line!r}")
        self.base_url = line.split(" ", 1)[1]

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def sync_client(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=base_url, api_key="sk-bench", max_retries=0)


def async_client(base_url: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench", max_retries=0)


# --- part 1: sync per-call cost ---------------------------------------------------------------


def make_contenders(content_url: str, tools_url: str) -> dict[str, Callable[[], Any]]:
    bare = sync_client(content_url)
    healed = healjson.wrap(sync_client(content_url))
    ins_json = instructor.from_openai(sync_client(content_url), mode=instructor.Mode.JSON)
    ins_tools = instructor.from_openai(sync_client(tools_url), mode=instructor.Mode.TOOLS)

    def run_bare() -> Order:
        completion = bare.chat.completions.create(
            model=MODEL_NAME, messages=MESSAGES, response_format=RESPONSE_FORMAT
        )
        return Order.model_validate_json(completion.choices[0].message.content)

    def run_healjson() -> Order:
        outcome = healed.chat.completions.create(
            model=MODEL_NAME, messages=MESSAGES, response_model=Order
        )
        return outcome.value

    def run_instructor_json() -> Order:
        return ins_json.chat.completions.create(
            model=MODEL_NAME, messages=MESSAGES, response_model=Order
        )

    def run_instructor_tools() -> Order:
        return ins_tools.chat.completions.create(
            model=MODEL_NAME, messages=MESSAGES, response_model=Order
        )

    return {
        BARE: run_bare,
        HEALJSON: run_healjson,
        INSTR_JSON: run_instructor_json,
        INSTR_TOOLS: run_instructor_tools,
    }


def check_same_request() -> list[str]:
    """A and B must send the same bytes: compare the two request bodies on an in-process server."""
    from healjson.testing import ScriptedServer

    with ScriptedServer([REPLY], repeat=True) as server:
        bare = sync_client(server.base_url)
        healed = healjson.wrap(sync_client(server.base_url))
        bare.chat.completions.create(
            model=MODEL_NAME, messages=MESSAGES, response_format=RESPONSE_FORMAT
        )
        outcome = healed.chat.completions.create(
            model=MODEL_NAME, messages=MESSAGES, response_model=Order
        )
        assert outcome.ok, outcome
        first, second = server.requests
    if first.raw != second.raw:
        raise AssertionError(
            f"A and B send different request bodies:\n{first.raw!r}\n{second.raw!r}"
        )
    return [
        f"A and B send byte-identical request bodies ({len(first.raw):,} bytes: the messages "
        "and the same strict `response_format`; checked on a recorded request before timing). "
        "C sends its schema in a system message with `response_format={type: json_object}`; "
        "D sends it as a `tools` entry with `tool_choice`.",
    ]


def rotations(names: Sequence[str], rounds: int) -> list[list[str]]:
    """A different order per round: rotate, and reverse every other round."""
    orders = []
    for r in range(rounds):
        k = r % len(names)
        order = [*names[k:], *names[:k]]
        if r % 2:
            order.reverse()
        orders.append(order)
    return orders


def time_sync(
    contenders: dict[str, Callable[[], Any]],
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Per-call CPU ns and wall ns per contender, one sample per round."""
    for name, fn in contenders.items():
        value = fn()
        if value.model_dump() != EXPECTED.model_dump():  # instructor returns a subclass
            raise AssertionError(f"{name} returned {value!r}")
        for _ in range(WARMUP_CALLS):
            fn()
    cpu: dict[str, list[float]] = {name: [] for name in contenders}
    wall: dict[str, list[float]] = {name: [] for name in contenders}
    for number, order in enumerate(rotations(list(contenders), ROUNDS), 1):
        for name in order:
            fn = contenders[name]
            gc.collect()
            cpu0, wall0 = time.process_time_ns(), time.perf_counter_ns()
            for _ in range(CALLS):
                fn()
            cpu1, wall1 = time.process_time_ns(), time.perf_counter_ns()
            cpu[name].append((cpu1 - cpu0) / CALLS)
            wall[name].append((wall1 - wall0) / CALLS)
        print(f"  sync round {number}/{ROUNDS} done", file=sys.stderr)
    return cpu, wall


def paired(values: Sequence[float], base: Sequence[float]) -> float:
    return statistics.median(v / b for v, b in zip(values, base, strict=True))


def us(ns: float) -> str:
    return f"{ns / 1e3:,.1f} µs"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


def report_sync(
    lines: list[str], cpu: dict[str, list[float]], wall: dict[str, list[float]]
) -> float:
    rows = []
    for name in cpu:
        cpu_med, wall_med = statistics.median(cpu[name]), statistics.median(wall[name])
        rows.append(
            [
                name,
                f"{us(cpu_med)} ({us(min(cpu[name]))})",
                f"{paired(cpu[name], cpu[BARE]):.3f}x",
                f"{(cpu_med - statistics.median(cpu[BARE])) / 1e3:+,.1f} µs",
                f"{us(wall_med)} ({us(min(wall[name]))})",
                f"{paired(wall[name], wall[BARE]):.3f}x",
            ]
        )
    lines += table(
        [
            "contender",
            "client CPU per call, median (min)",
            "CPU paired ratio",
            "CPU over baseline",
            "wall per call, median (min)",
            "wall paired ratio",
        ],
        rows,
    )
    return paired(cpu[HEALJSON], cpu[BARE])


# --- part 2: async throughput (child processes) -----------------------------------------------

ASYNC_DETECTION_NOTE = (
    "**`healjson.wrap(AsyncOpenAI())` did not detect the async client in this build**: "
    f"openai {openai.__version__} decorates `AsyncCompletions.create` with `required_args`, a "
    "plain-function wrapper, so `inspect.iscoroutinefunction(create)` is False, `is_async` is "
    "False, and every `create(response_model=...)` returns `Degraded(api_error, NotACompletion: "
    "the endpoint returned coroutine)` without awaiting the request. To measure the intended async "
    "path, the benchmark set `wrapped.is_async = True` after `wrap()`."
)


async def _async_batch(call: Callable[[], Any], n: int, concurrency: int) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            value = await call()
            if value != EXPECTED:
                raise AssertionError(f"unexpected value {value!r}")

    await asyncio.gather(*(one() for _ in range(n)))


async def _async_child(kind: str, base_url: str) -> dict[str, float]:
    forced = False
    if kind == "bare":
        client = async_client(base_url)

        async def call() -> Order:
            completion = await client.chat.completions.create(
                model=MODEL_NAME, messages=MESSAGES, response_format=RESPONSE_FORMAT
            )
            return Order.model_validate_json(completion.choices[0].message.content)

    else:
        healed = healjson.wrap(async_client(base_url))
        if not healed.is_async:  # see ASYNC_DETECTION_NOTE
            forced = True
            healed.is_async = True

        async def call() -> Order:
            outcome = await healed.chat.completions.create(
                model=MODEL_NAME, messages=MESSAGES, response_model=Order
            )
            return outcome.value

    for _ in range(5):
        assert await call() == EXPECTED
    gc.collect()
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    cpu0, wall0 = time.process_time_ns(), time.perf_counter_ns()
    await _async_batch(call, ASYNC_CALLS, ASYNC_CONCURRENCY)
    cpu1, wall1 = time.process_time_ns(), time.perf_counter_ns()
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    gc.collect()
    tracemalloc.start()
    start_current, _ = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    await _async_batch(call, ASYNC_CALLS, ASYNC_CONCURRENCY)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return {
        "wall_s": (wall1 - wall0) / 1e9,
        "cpu_s": (cpu1 - cpu0) / 1e9,
        "rss_before_kb": rss0,
        "rss_delta_kb": rss1 - rss0,
        "rss_after_kb": rss1,
        "traced_peak_bytes": peak - start_current,
        "forced_async": forced,
    }


def run_async_child(kind: str, base_url: str) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--async-child", kind, "--base-url", base_url],
        check=True,
        capture_output=True,
        text=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_async(lines: list[str], base_url: str) -> bool:
    """Part 2; returns whether `wrap` had to be told that the client is async."""
    kinds = {"bare": "bare `AsyncOpenAI` + `model_validate_json`", "healjson": "`healjson.wrap`"}
    samples: dict[str, list[dict[str, float]]] = {kind: [] for kind in kinds}
    for rep in range(ASYNC_REPEATS):
        order = ["bare", "healjson"] if rep % 2 == 0 else ["healjson", "bare"]
        for kind in order:
            samples[kind].append(run_async_child(kind, base_url))
            print(f"  async repeat {rep + 1}/{ASYNC_REPEATS}: {kind} done", file=sys.stderr)
    rows = []
    for kind, label in kinds.items():
        runs = samples[kind]

        def med(key: str, runs: list[dict[str, float]] = runs) -> float:
            return statistics.median(run[key] for run in runs)

        rows.append(
            [
                label,
                " / ".join(f"{run['wall_s']:.2f} s" for run in runs),
                f"{ASYNC_CALLS / med('wall_s'):,.0f}",
                " / ".join(f"{run['cpu_s']:.2f} s" for run in runs),
                " / ".join(f"{run['traced_peak_bytes'] / 2**20:.2f} MiB" for run in runs),
                " / ".join(f"{run['rss_delta_kb'] / 1024:+.1f} MiB" for run in runs),
                " / ".join(f"{run['rss_after_kb'] / 1024:.1f} MiB" for run in runs),
            ]
        )
    forced = any(run.get("forced_async") for run in samples["healjson"])
    base_wall = [run["wall_s"] for run in samples["bare"]]
    heal_wall = [run["wall_s"] for run in samples["healjson"]]
    base_cpu = [run["cpu_s"] for run in samples["bare"]]
    heal_cpu = [run["cpu_s"] for run in samples["healjson"]]
    lines += table(
        [
            "contender",
            "wall (each repeat)",
            "calls/s (median)",
            "client CPU",
            "tracemalloc peak",
            "ru_maxrss delta",
            "ru_maxrss after",
        ],
        rows,
    )
    lines += [
        "",
        f"healjson / bare, paired per repeat: wall {paired(heal_wall, base_wall):.3f}x, client "
        f"CPU {paired(heal_cpu, base_cpu):.3f}x.",
    ]
    if forced:
        lines += ["", ASYNC_DETECTION_NOTE]
    return forced


# --- part 3: profile --------------------------------------------------------------------------

Key = tuple[str, int, str]
HTTP_MODULES = ("/openai/", "/httpx", "/httpcore", "/h11/", "/anyio/", "/ssl.py", "/socket.py")


def _label(key: Key) -> str:
    path, line, name = key
    if "/healjson/" in path:
        path = "healjson/" + path.rsplit("/healjson/", 1)[1]
    elif "site-packages/" in path:
        path = path.rsplit("site-packages/", 1)[1]
    elif path.startswith("~"):
        return f"`{name}` (built-in)"
    else:
        path = Path(path).name
    return f"`{name}` ({path}:{line})"


def _profile(fn: Callable[[], Any], calls: int) -> pstats.Stats:
    for _ in range(50):
        fn()
    gc.collect()
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(calls):
        fn()
    profiler.disable()
    return pstats.Stats(profiler)


def _is_openai_create(key: Key) -> bool:
    return key[2] == "create" and key[0].endswith("openai/resources/chat/completions/completions.py")


def _ancestors(stats: dict[Key, Any], targets: set[Key]) -> set[Key]:
    seen: set[Key] = set()
    todo = list(targets)
    while todo:
        key = todo.pop()
        for caller in stats[key][4]:
            if caller not in seen:
                seen.add(caller)
                todo.append(caller)
    return seen


def bench_profile(lines: list[str], contenders: dict[str, Callable[[], Any]]) -> None:
    results = {}
    for name in (BARE, HEALJSON):
        stats = _profile(contenders[name], PROFILE_CALLS).stats  # type: ignore[attr-defined]
        sdk = {key for key in stats if _is_openai_create(key)}
        sdk_ct = sum(stats[key][3] for key in sdk)
        results[name] = (stats, sdk, sdk_ct)
    stats, sdk, sdk_ct = results[HEALJSON]
    bare_stats, bare_sdk, bare_sdk_ct = results[BARE]
    outer = {key: value for key, value in stats.items() if key[2] == "run_healjson"}
    bare_outer = {key: value for key, value in bare_stats.items() if key[2] == "run_bare"}
    total = sum(v[3] for v in outer.values())
    bare_total = sum(v[3] for v in bare_outer.values())
    per = 1e6 / PROFILE_CALLS

    lines += [
        f"cProfile over {PROFILE_CALLS:,} calls of A and of B in the client process (wall-clock "
        "timer; cProfile inflates small functions, so read the split, not the absolute figures).",
        "",
        f"- A: {bare_total * per:,.1f} µs per call, of which the SDK's `create` "
        f"{bare_sdk_ct * per:,.1f} µs; outside it (`model_validate_json` and the loop): "
        f"{(bare_total - bare_sdk_ct) * per:,.1f} µs.",
        f"- B: {total * per:,.1f} µs per call, of which the SDK's `create` "
        f"{sdk_ct * per:,.1f} µs; outside it (healjson): {(total - sdk_ct) * per:,.1f} µs.",
        "",
    ]
    ancestors = _ancestors(stats, sdk)
    rows = []
    for key, (_cc, nc, tt, ct, _callers) in stats.items():
        if "/healjson/" not in key[0] or "/healjson/testing/" in key[0]:
            continue
        own_side = ct - sdk_ct if key in ancestors else ct
        rows.append((own_side, key, nc, tt))
    rows.sort(reverse=True)
    lines += [
        "healjson functions by inclusive time *excluding the SDK call* (for a function on the "
        "path to `openai...Completions.create`, that call's time is subtracted):",
        "",
    ]
    lines += table(
        ["function", "inclusive excl. SDK, µs/call", "own (tottime) µs/call", "calls/call"],
        [
            [_label(key), f"{own_side * per:.2f}", f"{tt * per:.2f}", f"{nc / PROFILE_CALLS:g}"]
            for own_side, key, nc, tt in rows[:25]
        ],
    )
    inside = _descendants_outside_sdk(stats, sdk)
    top = sorted(
        ((stats[key][2], key) for key in inside if "/healjson/" not in key[0]), reverse=True
    )[:15]
    lines += [
        "",
        "Non-healjson functions called on healjson's side of the call (not under the SDK's "
        "`create`), by own time:",
        "",
    ]
    lines += table(
        ["function", "own (tottime) µs/call", "calls/call"],
        [
            [_label(key), f"{tt * per:.2f}", f"{stats[key][1] / PROFILE_CALLS:g}"]
            for tt, key in top
        ],
    )


def _descendants_outside_sdk(stats: dict[Key, Any], sdk: set[Key]) -> set[Key]:
    """Functions reachable from healjson's code without passing through the SDK's `create`."""
    callees: dict[Key, set[Key]] = {}
    for key, value in stats.items():
        for caller in value[4]:
            callees.setdefault(caller, set()).add(key)
    start = {key for key in stats if "/healjson/" in key[0]}
    seen = set(start)
    todo = list(start)
    while todo:
        key = todo.pop()
        for callee in callees.get(key, ()):
            if callee in sdk or callee in seen:
                continue
            if any(module in callee[0] for module in HTTP_MODULES):
                continue
            seen.add(callee)
            todo.append(callee)
    return seen


# --- report -----------------------------------------------------------------------------------


def processor() -> str:
    name = platform.processor()
    if name:
        return name
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def environment() -> list[str]:
    return [
        "# healjson client overhead benchmark",
        "",
        f"- date: {dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M:%S UTC')}",
        f"- command: `{shlex.join(sys.orig_argv)}` (cwd `{Path.cwd()}`)",
        f"- python: {platform.python_implementation()} {platform.python_version()}",
        f"- healjson {version('healjson')}, openai {openai.__version__}, instructor "
        f"{version('instructor')}, pydantic {pydantic.VERSION}, pydantic_core "
        f"{pydantic_core.__version__}, httpx2 {version('httpx2')}",
        f"- platform: {platform.platform()}",
        f"- processor: {processor()} ({os.cpu_count()} logical CPUs); load average at start "
        f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}",
        "",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--profile", action="store_true", help="profile even if the target is met")
    parser.add_argument("--async-child", choices=("bare", "healjson"), help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.async_child:
        print(json.dumps(asyncio.run(_async_child(args.async_child, args.base_url))))
        return 0

    header = environment()
    lines = list(header)
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        content = ServerProcess([REPLY], Path(tmp), "content")
        stack.callback(content.stop)
        tools = ServerProcess([TOOL_REPLY], Path(tmp), "tools")
        stack.callback(tools.stop)

        notes = check_same_request()
        contenders = make_contenders(content.base_url, tools.base_url)
        cpu, wall = time_sync(contenders)
        lines += [
            "## 1. Sync, per call (happy path)",
            "",
            f"`Order`: 6 fields incl. a list of 3 nested `LineItem`s; reply {len(REPLY)} "
            f"characters. {ROUNDS} rounds x {CALLS} calls per contender after {WARMUP_CALLS} "
            "warm-up calls; median over rounds (min in brackets). *Paired ratio* = median over "
            "rounds of (contender / baseline in the same round). The scripted servers run in "
            "separate processes: only the client process's CPU is counted. "
            + " ".join(notes),
            "",
        ]
        ratio = report_sync(lines, cpu, wall)
        lines.append("")

        lines += [
            f"## 2. Async throughput: {ASYNC_CALLS:,} calls at concurrency {ASYNC_CONCURRENCY}",
            "",
            "Each run in a fresh child process (5 warm-up calls first), alternating, "
            f"{ASYNC_REPEATS} repeats each; the figures are per repeat. `ru_maxrss delta` is the "
            "child's high-water-mark growth over the timed run; `tracemalloc peak` is the traced "
            "peak above the starting level during a second pass of the same calls (tracemalloc "
            "slows the process, so it is not on during the timed pass). The server is one "
            "Python process on the same 2 cores, so wall time is bounded by it.",
            "",
        ]
        forced = bench_async(lines, content.base_url)
        lines.append("")

        missed = ratio > TARGET_RATIO
        if missed or args.profile:
            lines += ["## 3. Where healjson's client time goes (cProfile)", ""]
            bench_profile(lines, contenders)
            lines.append("")

    state = "met" if not missed else "MISSED"
    ins = paired(cpu[INSTR_JSON], cpu[BARE])
    tools_ratio = paired(cpu[INSTR_TOOLS], cpu[BARE])
    summary = [
        "## Targets",
        "",
        f"- healjson client CPU per call: **{ratio:.3f}x** the bare client (paired; target "
        f"≤ {TARGET_RATIO}x) — {state}",
        f"- side by side: instructor `Mode.JSON` {ins:.2f}x, `Mode.TOOLS` {tools_ratio:.2f}x",
    ]
    if forced:
        summary.append(
            "- `healjson.wrap(openai.AsyncOpenAI())`: **not detected as async** (see part 2)"
        )
    summary.append("")
    lines[len(header) : len(header)] = summary
    report = "\n".join(lines).rstrip() + "\n"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report, encoding="utf-8")
    print(report)
    print(f"written to {RESULTS.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
