"""Benchmark the client-side cost of healed Responses calls on the happy path, against the SDK.

Run from the repository root:

    .venv/bin/python benchmarks/bench_responses.py [--pairs N]

Every call goes over real HTTP to the scripted server running in a separate process (replying
a valid `Order` as the response's `output_text`), so this process measures only the client.
Contenders, both with `max_retries=0`, the same model, input and `text.format`:

- A (baseline): `OpenAI().responses.create(..., text={"format": <strict json_schema>})` then
  `Order.model_validate_json(response.output_text)` (the format is the one healjson sends,
  from the same cache: the two requests carry the same fields and values);
- B: `healjson.wrap(OpenAI()).responses.create(response_model=Order, ...)`.

A and B run call by call, `--pairs` pairs, the order alternating per pair, after a warm-up;
`gc.collect()` before each pair. The verdict is the median of the per-pair ratios of the client
process's CPU time (`time.process_time_ns`). Results are printed and written to
`benchmarks/results/responses.md`.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import openai

import healjson
from _machine import machine, publish, stamp, table
from bench_overhead import EXPECTED, MODEL_NAME, Order, ServerProcess
from healjson._providers.openai_responses import text_format
from healjson.adapters._format import strict_format

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "responses.md"
WARMUP = 100
INPUT = "Extract the order ORD-204518 as JSON."


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=2_000)
    pairs = parser.parse_args().pairs
    with tempfile.TemporaryDirectory() as tmp:
        server = ServerProcess([EXPECTED.model_dump_json()], Path(tmp), "responses")
        try:
            cpu = measure(server.base_url, pairs)
        finally:
            server.stop()
    ratios = [b / a for a, b in zip(cpu["A"], cpu["B"], strict=True)]
    median = statistics.median(ratios)
    q1, _, q3 = statistics.quantiles(ratios, n=4)
    rows = [
        ["A: bare SDK + model_validate_json", f"{statistics.median(cpu['A']) / 1e3:,.1f} µs", "1"],
        [
            "B: healjson.wrap responses.create",
            f"{statistics.median(cpu['B']) / 1e3:,.1f} µs",
            f"{median:.3f}x (IQR {q1:.3f}-{q3:.3f})",
        ],
    ]
    lines = [
        "# Healed Responses calls: client CPU per call on the happy path",
        "",
        "",
        *stamp(),
        *machine(),
        "",
        f"{pairs} A/B pairs over HTTP, call by call; the median of the per-pair CPU ratios.",
        "",
        *table(["contender", "CPU per call (median)", "B / A"], rows),
        "",
    ]
    publish(lines, RESULTS)
    return 0


def measure(base_url: str, pairs: int) -> dict[str, list[float]]:
    bare = openai.OpenAI(base_url=base_url, api_key="sk-bench", max_retries=0)
    healed = healjson.wrap(openai.OpenAI(base_url=base_url, api_key="sk-bench", max_retries=0))
    text = {"format": text_format(strict_format(Order))}

    def a() -> Any:
        response = bare.responses.create(model=MODEL_NAME, input=INPUT, text=text)
        return Order.model_validate_json(response.output_text)

    def b() -> Any:
        return healed.responses.create(model=MODEL_NAME, input=INPUT, response_model=Order)

    assert a() == EXPECTED == b().value
    for _ in range(WARMUP):
        a()
        b()
    cpu: dict[str, list[float]] = {"A": [], "B": []}
    for index in range(pairs):
        order = (("A", a), ("B", b)) if index % 2 == 0 else (("B", b), ("A", a))
        gc.collect()
        for name, call in order:
            start = time.process_time_ns()
            call()
            cpu[name].append(time.process_time_ns() - start)
    return cpu


if __name__ == "__main__":
    sys.exit(main())
