"""Count the instructions healjson adds to a happy-path call: the overhead figure without noise.

Run from the repository root (needs valgrind):

    .venv/bin/python benchmarks/bench_instructions.py

`bench_overhead.py` times CPU per call, which on a shared VM moves with the machine's phase
(its recorded ratio has varied from 1.04x to 1.07x between runs of the same code). Counting
instructions does not: valgrind's callgrind counts every user-space instruction the client
process executes, the same count for the same code and inputs whatever else the machine does.
It counts no kernel time, and no cache misses or stalls, so it is the cost of the work itself:
A and B make the same system calls per call (checked with `strace -c`, which this script does
not repeat), and their difference in time beyond the instruction difference is the cost of
running healjson's code with caches the SDK's call has just filled.

Contenders as in `bench_overhead.py` part 1c: A, the bare `OpenAI` client plus
`model_validate_json`; B, `healjson.wrap(OpenAI())` with `response_model`, against the scripted
server in a separate process (not counted). Each contender runs in a fresh client process under
callgrind twice, with SHORT and LONG calls after the same warm-up: the difference between the
two totals, divided by LONG - SHORT, is the count per call, free of start-up and imports.

Results are printed and written to `benchmarks/results/instructions.md`.
"""

from __future__ import annotations

import argparse
import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import publish, stamp, table
from bench_overhead import REPLY, ServerProcess

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results" / "instructions.md"
RESPONSES_RESULTS = BENCH / "results" / "instructions_responses.md"
SHORT, LONG = 100, 300
WARMUP = 20
# streamed answers: list[Item] lengths, and (warm-up, short, long) streams per client process
STREAMS = {60: (2, 2, 10), 500: (1, 1, 3), 4_000: (1, 0, 1)}
CHILD = """
import gc, sys
sys.path.insert(0, {bench!r})
import bench_instructions as b
kind, warmup, n, url = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
run = b.contender(kind, url)
for _ in range(warmup):
    run()
gc.collect()
for _ in range(n):
    run()
"""


def contender(kind: str, url: str) -> Callable[[], Any]:
    """One call of contender `kind` against the scripted server at `url` (in the child)."""
    import bench_overhead
    import bench_responses

    client = bench_overhead.sync_client
    if kind == "chat-A":
        return bench_overhead.bare_call(client(url))
    if kind == "chat-B":
        return bench_overhead.healjson_call(client(url))
    if kind in ("responses-A", "responses-B"):
        return bench_responses.happy_contenders(url)[kind.endswith("B")]
    if kind in ("stream-A", "stream-B"):
        return bench_responses.stream_contenders(url)[kind.endswith("B")]
    raise ValueError(f"unknown contender {kind!r}")


def collected(kind: str, warmup: int, calls: int, base_url: str, workdir: Path) -> int:
    """Instructions callgrind counted for a client process making `warmup` then `calls` calls
    of `kind` (hash seed fixed: the same dict and set layouts in every run)."""
    script = CHILD.format(bench=str(BENCH))
    out = workdir / f"callgrind.{kind}.{calls}"
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            "-c",
            script,
            kind,
            str(warmup),
            str(calls),
            base_url,
        ],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    found = re.findall(r"Collected : (\d+)", done.stderr)
    if not found:
        raise RuntimeError(f"no instruction count in callgrind's output:\n{done.stderr[-2000:]}")
    return int(found[-1])


@dataclass
class Count:
    """One contender's two runs and its count per call (the difference / the extra calls)."""

    short: int
    long: int
    calls: tuple[int, int]

    @property
    def per_call(self) -> float:
        return (self.long - self.short) / (self.calls[1] - self.calls[0])


def count(kind: str, warmup: int, calls: tuple[int, int], url: str, workdir: Path) -> Count:
    short, long = (collected(kind, warmup, n, url, workdir) for n in calls)
    print(f"{kind}: {short:,} / {long:,}", file=sys.stderr)
    return Count(short, long, calls)


def pair_rows(pairs: Sequence[tuple[str, str, Count]]) -> list[str]:
    """The table of contenders' runs and counts per call."""
    return table(
        ["contender", "total, short run", "total, long run", "per call"],
        [
            [
                name,
                f"{c.short:,} ({c.calls[0]})",
                f"{c.long:,} ({c.calls[1]})",
                f"{c.per_call:,.0f}",
            ]
            for _, name, c in pairs
        ],
    )


def ratio_line(a: Count, b: Count) -> str:
    return (
        f"B / A: **{b.per_call / a.per_call:.4f}x** the instructions per call "
        f"(+{b.per_call - a.per_call:,.0f} per call)."
    )


def chat(workdir: Path) -> None:
    server = ServerProcess([REPLY], workdir, "content")
    try:
        a, b = (
            count(k, WARMUP, (SHORT, LONG), server.base_url, workdir) for k in ("chat-A", "chat-B")
        )
    finally:
        server.stop()
    lines = [
        "# Instructions per happy-path call",
        "",
        *stamp(),
        "",
        f"callgrind over a client process making {SHORT} and {LONG} calls after {WARMUP} "
        f"warm-up calls; per call = the difference / {LONG - SHORT}.",
        "",
        *pair_rows(
            [
                ("A", "A. bare `OpenAI` + `model_validate_json`", a),
                ("B", "B. `healjson.wrap(OpenAI())`", b),
            ]
        ),
        "",
        ratio_line(a, b),
    ]
    publish(lines, RESULTS)


def responses(workdir: Path, sizes: Sequence[int]) -> None:
    from bench_overhead import EXPECTED
    from bench_responses import stream_reply
    from bench_stream import per_8x

    server = ServerProcess([EXPECTED.model_dump_json()], workdir, "responses")
    try:
        url = server.base_url
        a, b = (
            count(k, WARMUP, (SHORT, LONG), url, workdir) for k in ("responses-A", "responses-B")
        )
    finally:
        server.stop()
    lines = [
        "# Instructions per Responses call",
        "",
        *stamp(),
        "",
        "## Happy path",
        "",
        f"`responses.create` with the strict `text.format` + `model_validate_json` (A) against "
        f"`wrap(OpenAI()).responses.create(response_model=Order)` (B): callgrind over a client "
        f"process making {SHORT} and {LONG} calls after {WARMUP} warm-up calls; per call = the "
        f"difference / {LONG - SHORT}.",
        "",
        *pair_rows(
            [("A", "A. bare `responses.create` + `model_validate_json`", a), ("B", "B. healed", b)]
        ),
        "",
        ratio_line(a, b) + " Target: <= 1.05x.",
        "",
        "## Streamed answers",
        "",
        "`list[Item]` streamed in 5-character `response.output_text.delta` events: A the bare "
        "`responses.create(stream=True)`, the deltas joined, `validate_json`; B "
        "`responses.create(response_model=list[Item], stream=True)`, `.items()` iterated, "
        "`.outcome`. Each contender's client process makes (warm-up, then short or long) "
        "streams; per stream = the difference of the two runs / the extra streams. "
        "Target: B / A <= 1.3x; growth per 8x length <= 10x.",
        "",
    ]
    per: dict[int, tuple[Count, Count]] = {}
    for n in sizes:
        warm, short, long = STREAMS[n]
        server = ServerProcess([stream_reply(n)], workdir, f"stream_{n}")
        try:
            url = server.base_url
            per[n] = (
                count("stream-A", warm, (short, long), url, workdir),
                count("stream-B", warm, (short, long), url, workdir),
            )
        finally:
            server.stop()
    lines += table(
        ["answer", "streams (warm-up, short, long)", "A per stream", "B per stream", "B / A"],
        [
            [
                f"{n:,} items",
                ", ".join(map(str, STREAMS[n])),
                f"{sa.per_call:,.0f}",
                f"{sb.per_call:,.0f}",
                f"**{sb.per_call / sa.per_call:.4f}x**",
            ]
            for n, (sa, sb) in per.items()
        ],
    )
    ordered = sorted(per)
    growth = [
        f"{small:,} -> {large:,} items: A "
        f"{per_8x(per[large][0].per_call / per[small][0].per_call, large / small):.2f}x, B "
        f"{per_8x(per[large][1].per_call / per[small][1].per_call, large / small):.2f}x per 8x"
        for small, large in itertools.pairwise(ordered)
    ]
    if growth:
        lines += [
            "",
            "Growth of the instructions per stream per 8x length: " + "; ".join(growth) + ".",
        ]
    publish(lines, RESPONSES_RESULTS)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--suite", choices=("chat", "responses", "all"), default="chat", help="what to count"
    )
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="*",
        default=list(STREAMS),
        help=f"streamed list lengths for --suite responses (of {', '.join(map(str, STREAMS))})",
    )
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: nothing to count", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        if args.suite in ("chat", "all"):
            chat(Path(tmp))
        if args.suite in ("responses", "all"):
            responses(Path(tmp), args.sizes)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
