"""Benchmark what a response cache costs on the happy path, and what a hit saves.

Run from the repository root:

    .venv/bin/python benchmarks/bench_cache.py

`healjson.wrap(OpenAI()).chat.completions.create(response_model=Order, ...)` over real HTTP to
the scripted server in a separate process (`bench_overhead.ServerProcess`), every request a
new one (its user message numbered: every lookup misses, every healed answer is written):

- A: no cache (the baseline);
- B: `cache=ResponseCache(path)` (SQLite in WAL mode, on the benchmark's temporary directory):
  a key hashed, one SELECT that misses, the call, one INSERT;
- C: `cache=ResponseCache.memory()`, the same work without the file.

The verdict is B / A call by call: PAIRS pairs of one A call and one B call (the order
alternating per pair), the median of the per-pair ratios of the client process's CPU
(`time.process_time_ns`), target <= 1.05 — the finest alternation, as `bench_overhead.py`'s
verdict; REPEATS such runs, the verdict their median (one run moves by a point or two).
Before it, rounds of CALLS calls per contender (the order rotating and reversing between
rounds), A, B and C, their medians and paired ratios. Then the same three against a stub
client that returns a prebuilt `ChatCompletion` (no HTTP, no SDK):
healjson's own CPU per call and what the cache adds to it in microseconds. Last, a hit: the
same request again, served from the file with no model call (and judged again), against the
call it replaces.

Results are printed and written to `benchmarks/results/cache.md`.
"""

from __future__ import annotations

import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from itertools import count
from pathlib import Path
from typing import Any

import openai

import healjson
from _machine import machine, publish, stamp, table
from bench_overhead import (
    EXPECTED,
    MESSAGES,
    MODEL_NAME,
    REPLY,
    Order,
    ServerProcess,
    StubClient,
    prebuilt_completion,
    rotations,
    us,
)

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "cache.md"
TARGET = 1.05
ROUNDS = 20
PAIRS = 3_000
REPEATS = 3  # runs of PAIRS pairs; the verdict is their median
CALLS = 60
STUB_ROUNDS = 15
STUB_CALLS = 1_000
WARMUP = 100

NONE = "A. no cache"
FILE = "B. `ResponseCache(path)` (SQLite file)"
MEMORY = "C. `ResponseCache.memory()`"


def contender(client: Any, cache: Any) -> Callable[[], Order]:
    """One healed call per request, each request new (a numbered user message)."""
    healed = healjson.wrap(client, cache=cache)
    numbers = count()

    def run() -> Order:
        messages = [
            MESSAGES[0],
            {"role": "user", "content": f"{MESSAGES[1]['content']} #{next(numbers)}"},
        ]
        outcome = healed.chat.completions.create(
            model=MODEL_NAME, messages=messages, response_model=Order
        )
        assert outcome.calls == 1
        return outcome.value  # type: ignore[no-any-return]

    return run


def measure(
    contenders: dict[str, Callable[[], Any]], rounds: int, calls: int
) -> dict[str, list[float]]:
    """CPU ns per call of each contender, per round."""
    for fn in contenders.values():
        assert fn() == EXPECTED
        for _ in range(WARMUP):
            fn()
    cpu: dict[str, list[float]] = {name: [] for name in contenders}
    for order in rotations(list(contenders), rounds):
        for name in order:
            fn = contenders[name]
            gc.collect()
            start = time.process_time_ns()
            for _ in range(calls):
                fn()
            cpu[name].append((time.process_time_ns() - start) / calls)
    return cpu


def pairs(a: Callable[[], Any], b: Callable[[], Any], count: int) -> list[float]:
    """CPU of `b` over `a`, call by call, the order alternating per pair."""
    out = []
    clock = time.process_time_ns
    for index in range(count):
        first, second = (a, b) if index % 2 else (b, a)
        start = clock()
        first()
        middle = clock()
        second()
        end = clock()
        spent_first, spent_second = middle - start, end - middle
        a_ns, b_ns = (spent_first, spent_second) if index % 2 else (spent_second, spent_first)
        if a_ns > 0:
            out.append(b_ns / a_ns)
    return out


def ratios(cpu: dict[str, list[float]], name: str) -> float:
    return statistics.median(c / a for c, a in zip(cpu[name], cpu[NONE], strict=True))


def main() -> None:
    lines = [
        "# The response cache: its cost on the happy path, and a hit",
        "",
        *stamp(),
        *machine(),
    ]
    lines += [f"- openai {openai.__version__}", ""]
    with tempfile.TemporaryDirectory() as work:
        workdir = Path(work)
        server = ServerProcess([REPLY], workdir, "order")
        try:
            sdk = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
            contenders = {
                NONE: contender(sdk, None),
                FILE: contender(sdk, healjson.ResponseCache(workdir / "cache.sqlite")),
                MEMORY: contender(sdk, healjson.ResponseCache.memory()),
            }
            http = measure(contenders, ROUNDS, CALLS)
            gc.collect()
            # the verdict's runs of pairs, each alone (one run moves by a point or two with
            # the machine's state: the median of REPEATS runs is the figure judged)
            paired = [pairs(contenders[NONE], contenders[FILE], PAIRS) for _ in range(REPEATS)]
            hit_cache = healjson.ResponseCache(workdir / "hits.sqlite")
            hit_client = healjson.wrap(sdk, cache=hit_cache)

            def hit() -> Any:
                outcome = hit_client.chat.completions.create(
                    model=MODEL_NAME, messages=MESSAGES, response_model=Order
                )
                assert outcome.calls == 0
                return outcome.value

            first = hit_client.chat.completions.create(
                model=MODEL_NAME, messages=MESSAGES, response_model=Order
            )
            assert first.calls == 1
            plain = healjson.wrap(sdk)

            def call() -> Any:
                return plain.chat.completions.create(
                    model=MODEL_NAME, messages=MESSAGES, response_model=Order
                ).value

            served = measure({NONE: call, "hit": hit}, 10, CALLS)
        finally:
            server.stop()
        stub = StubClient(prebuilt_completion())
        own = measure(
            {
                NONE: contender(stub, None),
                FILE: contender(stub, healjson.ResponseCache(workdir / "stub.sqlite")),
                MEMORY: contender(stub, healjson.ResponseCache.memory()),
            },
            STUB_ROUNDS,
            STUB_CALLS,
        )
    runs = sorted(statistics.median(run) for run in paired)
    verdict = statistics.median(runs)
    lines += ["## Over HTTP, every request new (each lookup misses, each answer is written)", ""]
    lines += table(
        ["contender", "client CPU per call, median (min)", "paired ratio to A"],
        [
            [
                name,
                f"{us(statistics.median(s))} ({us(min(s))})",
                "1" if name == NONE else f"{ratios(http, name):.3f}",
            ]
            for name, s in http.items()
        ],
    )
    ok = "met" if verdict <= TARGET else "missed"
    lines += [
        "",
        f"Verdict ({REPEATS} runs of {PAIRS:,} A/B pairs, call by call; each run the median "
        f"of its per-pair CPU ratios, the verdict the median run): with a SQLite cache the "
        f"happy path costs **{verdict:.3f}x** the call without one (target <= {TARGET}: {ok}; "
        f"the runs: {', '.join(f'{run:.3f}x' for run in runs)}).",
        "",
    ]
    lines += ["## healjson's own CPU (stub client: no HTTP, no SDK)", ""]
    base = statistics.median(own[NONE])
    lines += table(
        ["contender", "CPU per call, median", "added by the cache"],
        [
            [
                name,
                us(statistics.median(s)),
                "-" if name == NONE else us(statistics.median(s) - base),
            ]
            for name, s in own.items()
        ],
    )
    lines += ["", "## A hit (the same request again: served from the file, judged again)", ""]
    lines += table(
        ["", "client CPU per request, median"],
        [
            ["the model call (over HTTP, no cache)", us(statistics.median(served[NONE]))],
            ["a cache hit (no call)", us(statistics.median(served["hit"]))],
        ],
    )
    lines += ["", "A hit also saves the call's tokens and its latency (seconds on a real model)."]
    publish(lines, RESULTS)


if __name__ == "__main__":
    sys.exit(main())
