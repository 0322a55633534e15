"""Benchmark the client-side cost of healed Responses calls on the happy path, against the SDK.

Run from the repository root:

    .venv/bin/python benchmarks/bench_responses.py [--pairs N] [--stream-scale X]

Every call goes over real HTTP to the scripted server running in a separate process (replying
a valid `Order` as the response's `output_text`), so this process measures only the client.
Contenders, both with `max_retries=0`, the same model, input and `text.format`:

- A (baseline): `OpenAI().responses.create(..., text={"format": <strict json_schema>})` then
  `Order.model_validate_json(response.output_text)` (the format is the one healjson sends,
  from the same cache: the two requests carry the same fields and values);
- B: `healjson.wrap(OpenAI()).responses.create(response_model=Order, ...)`.

A and B run call by call, `--pairs` pairs, the order alternating per pair, after a warm-up;
`gc.collect()` before each pair. The verdict is the median of the per-pair ratios of the client
process's CPU time (`time.process_time_ns`). Then the same two against a stub client whose
`responses.create` returns a prebuilt `Response` (no SDK request, no socket): healjson's own CPU
per call, free of the HTTP path's noise (STUB_ROUNDS rounds of STUB_CALLS calls, the medians).
Then streamed answers (`list[Item]` of 60, 500 and 4,000 items in 5-character deltas):
the bare SDK stream + `validate_json` against the healed stream, call by call, and the growth
per 8x length (`measure_stream`). Results are printed and written to
`benchmarks/results/responses.md`.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import openai
from openai.types.responses import Response

import healjson
from _machine import machine, publish, stamp, table
from bench_overhead import EXPECTED, MODEL_NAME, Order, ServerProcess
from bench_stream import CHUNK_CHARS, ITEMS, LIST_LENGTHS, Item, items, per_8x
from healjson._providers.openai_responses import text_format
from healjson._providers.openai_strict_schema import strict_format

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "responses.md"
WARMUP = 100
STUB_ROUNDS = 10
STUB_CALLS = 2_000
STREAM_PAIRS = {60: 40, 500: 12, 4_000: 12}  # A/B pairs of streams per list length
INPUT = "Extract the order ORD-204518 as JSON."


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=2_000)
    parser.add_argument(
        "--stream-scale", type=float, default=1.0, help="times STREAM_PAIRS's pairs"
    )
    args = parser.parse_args()
    pairs = args.pairs
    with tempfile.TemporaryDirectory() as tmp:
        server = ServerProcess([EXPECTED.model_dump_json()], Path(tmp), "responses")
        try:
            cpu = measure(server.base_url, pairs)
        finally:
            server.stop()
        streams = {
            n: measure_stream(n, max(2, round(count * args.stream_scale)), Path(tmp))
            for n, count in STREAM_PAIRS.items()
        }
    stub = measure_stub()
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
        f"Against a stub client (a prebuilt `Response`, no HTTP), {STUB_ROUNDS} rounds of "
        f"{STUB_CALLS} calls: `model_validate_json` alone {stub['A']:,.1f} µs per call, "
        f"the healed call {stub['B']:,.1f} µs: healjson's own CPU is "
        f"{stub['B'] - stub['A']:,.1f} µs per call beyond the validation.",
        "",
        *report_streams(streams),
    ]
    publish(lines, RESULTS)
    return 0


def happy_contenders(base_url: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """A and B on the happy path against the server at `base_url` (also counted by
    `bench_instructions.py`)."""
    bare = openai.OpenAI(base_url=base_url, api_key="sk-bench", max_retries=0)
    healed = healjson.wrap(openai.OpenAI(base_url=base_url, api_key="sk-bench", max_retries=0))
    text = {"format": text_format(strict_format(Order))}

    def a() -> Any:
        response = bare.responses.create(model=MODEL_NAME, input=INPUT, text=text)
        return Order.model_validate_json(response.output_text)

    def b() -> Any:
        return healed.responses.create(model=MODEL_NAME, input=INPUT, response_model=Order).value

    return a, b


def measure(base_url: str, pairs: int) -> dict[str, list[float]]:
    a, b = happy_contenders(base_url)
    assert a() == EXPECTED == b()
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


def measure_stream(n: int, pairs: int, workdir: Path) -> dict[str, list[float]]:
    """Client CPU per streamed answer (`n` items of `list[Item]`, in deltas of CHUNK_CHARS
    characters), A and B call by call, the order alternating, after one warm-up each:

    - A: `responses.create(..., text=<the strict format>, stream=True)`, every event iterated,
      the `response.output_text.delta` pieces joined, then `validate_json`;
    - B: `wrap(OpenAI()).responses.create(response_model=list[Item], stream=True)`, its
      `.items()` iterated, then `.outcome` read.
    """
    expected = items(n)
    server = ServerProcess([stream_reply(n)], workdir, f"stream_{n}")
    try:
        a, b = stream_contenders(server.base_url)
        assert a() == expected == b()
        cpu: dict[str, list[float]] = {"A": [], "B": []}
        for index in range(pairs):
            order = (("A", a), ("B", b)) if index % 2 == 0 else (("B", b), ("A", a))
            for name, call in order:
                gc.collect()
                start = time.process_time_ns()
                call()
                cpu[name].append(time.process_time_ns() - start)
        return cpu
    finally:
        server.stop()


def stream_reply(n: int) -> dict[str, Any]:
    """The scripted reply of a streamed answer of `n` items, in CHUNK_CHARS-character deltas."""
    return {"content": ITEMS.dump_json(items(n)).decode(), "chunk_chars": CHUNK_CHARS}


def stream_contenders(url: str) -> tuple[Callable[[], Any], Callable[[], Any]]:
    """A and B on a streamed `list[Item]` answer from the server at `url` (see
    `measure_stream`; also counted by `bench_instructions.py`)."""
    bare = openai.OpenAI(base_url=url, api_key="sk-bench", max_retries=0)
    healed = healjson.wrap(openai.OpenAI(base_url=url, api_key="sk-bench", max_retries=0))
    text = {"format": text_format(strict_format(list[Item]))}

    def a() -> Any:
        stream = bare.responses.create(model=MODEL_NAME, input=INPUT, text=text, stream=True)
        parts = [e.delta for e in stream if e.type == "response.output_text.delta"]
        return ITEMS.validate_json("".join(parts))

    def b() -> Any:
        stream = healed.responses.create(
            model=MODEL_NAME, input=INPUT, response_model=list[Item], stream=True
        )
        for _item in stream.items():
            pass
        outcome = stream.outcome
        assert outcome.ok, outcome
        return outcome.value

    return a, b


def report_streams(streams: dict[int, dict[str, list[float]]]) -> list[str]:
    """The streamed answers' table: CPU per stream, B / A, and growth per 8x length."""
    rows = []
    medians: dict[int, float] = {}
    for n, cpu in streams.items():
        ratios = [b / a for a, b in zip(cpu["A"], cpu["B"], strict=True)]
        medians[n] = statistics.median(cpu["B"])
        rows.append(
            [
                f"{n:,} items",
                str(len(ratios)),
                f"{statistics.median(cpu['A']) / 1e6:,.2f} ms",
                f"{medians[n] / 1e6:,.2f} ms",
                f"{statistics.median(ratios):.3f}x (min {min(ratios):.3f}, max {max(ratios):.3f})",
            ]
        )
    sizes = sorted(medians)
    growth = [
        f"{small:,} -> {large:,} items: "
        f"{per_8x(medians[large] / medians[small], large / small):.2f}x per 8x"
        for small, large in itertools.pairwise(sizes)
    ]
    return [
        "## Streamed answers",
        "",
        f"`list[Item]` of {', '.join(f'{n:,}' for n in LIST_LENGTHS)} items streamed as Responses "
        f"events (`response.output_text.delta` of {CHUNK_CHARS} characters), A/B pairs call by "
        "call, the order alternating: A the bare `responses.create(stream=True)` with the same "
        "`text.format`, every event iterated, the deltas joined, then `validate_json`; B "
        "`wrap(OpenAI()).responses.create(response_model=list[Item], stream=True)`, `.items()` "
        "iterated, then `.outcome`. Target: B / A <= 1.3x; growth per 8x length <= 10x.",
        "",
        *table(["answer", "pairs", "A: CPU per stream", "B: CPU per stream", "B / A"], rows),
        "",
        "Growth of B's CPU per 8x length (scaled to exactly 8x): " + "; ".join(growth) + ".",
        "",
    ]


def stub_contenders() -> tuple[Callable[[], Any], Callable[[], Any]]:
    """A (`model_validate_json` of the answer) and B (the healed call) against a stub client
    whose `responses.create` returns a prebuilt `Response` (also counted by
    `bench_instructions.py`)."""
    answer = EXPECTED.model_dump_json()
    response = Response.model_validate(
        {
            "id": "resp_stub",
            "object": "response",
            "created_at": 0,
            "status": "completed",
            "model": MODEL_NAME,
            "output": [
                {
                    "id": "msg_stub",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [
                        {
                            "type": "output_text",
                            "text": answer,
                            "annotations": [],
                        }
                    ],
                }
            ],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": 50,
                "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0},
                "output_tokens": 80,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 130,
            },
        }
    )

    class Stub:
        class responses:  # the SDK's attribute name
            @staticmethod
            def create(**request: Any) -> Response:
                return response

        class chat:
            class completions:
                create = staticmethod(lambda **request: None)  # what `wrap` looks for

    healed = healjson.wrap(Stub())

    def a() -> Any:
        return Order.model_validate_json(response.output_text)

    def b() -> Any:
        return healed.responses.create(model=MODEL_NAME, input=INPUT, response_model=Order).value

    return a, b


def measure_stub() -> dict[str, float]:
    """healjson's own CPU per call against a client that returns a prebuilt `Response`."""
    a, b = stub_contenders()
    assert a() == b()
    found: dict[str, list[float]] = {"A": [], "B": []}
    for _ in range(STUB_ROUNDS):
        for name, call in (("A", a), ("B", b)):
            gc.collect()
            start = time.process_time_ns()
            for _ in range(STUB_CALLS):
                call()
            found[name].append((time.process_time_ns() - start) / STUB_CALLS / 1e3)
    return {name: statistics.median(values) for name, values in found.items()}


if __name__ == "__main__":
    sys.exit(main())
