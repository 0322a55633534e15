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
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import publish, stamp, table
from bench_overhead import REPLY, ServerProcess

SHORT, LONG = 100, 300
WARMUP = 20
RESULTS = Path(__file__).resolve().parent / "results" / "instructions.md"
CHILD = """
import sys, gc
sys.path.insert(0, {bench!r})
import bench_overhead as b
kind, n, url = sys.argv[1], int(sys.argv[2]), sys.argv[3]
run = (b.bare_call if kind == "A" else b.healjson_call)(b.sync_client(url))
for _ in range({warmup}):
    run()
gc.collect()
for _ in range(n):
    run()
"""


def collected(kind: str, calls: int, base_url: str, workdir: Path) -> int:
    """Instructions callgrind counted for a client process making `calls` calls of `kind`."""
    script = CHILD.format(bench=str(Path(__file__).resolve().parent), warmup=WARMUP)
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
            str(calls),
            base_url,
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    found = re.findall(r"Collected : (\d+)", done.stderr)
    if not found:
        raise RuntimeError(f"no instruction count in callgrind's output:\n{done.stderr[-2000:]}")
    return int(found[-1])


def main() -> int:
    argparse.ArgumentParser(description=__doc__.split("\n", 1)[0]).parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: nothing to count", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        server = ServerProcess([REPLY], Path(tmp), "content")
        try:
            counts = {
                (kind, calls): collected(kind, calls, server.base_url, Path(tmp))
                for kind in ("A", "B")
                for calls in (SHORT, LONG)
            }
        finally:
            server.stop()
    per_call = {
        kind: (counts[(kind, LONG)] - counts[(kind, SHORT)]) / (LONG - SHORT) for kind in "AB"
    }
    ratio = per_call["B"] / per_call["A"]
    lines = [
        "# Instructions per happy-path call",
        "",
        *stamp(),
        "",
        f"`.venv/bin/python benchmarks/bench_instructions.py`: callgrind over a client process "
        f"making {SHORT} and {LONG} calls after {WARMUP} warm-up calls; per call = the "
        f"difference / {LONG - SHORT}.",
        "",
        *table(
            ["contender", f"total, {SHORT} calls", f"total, {LONG} calls", "per call"],
            [
                [
                    name,
                    f"{counts[(kind, SHORT)]:,}",
                    f"{counts[(kind, LONG)]:,}",
                    f"{per_call[kind]:,.0f}",
                ]
                for kind, name in (
                    ("A", "A. bare `OpenAI` + `model_validate_json`"),
                    ("B", "B. `healjson.wrap(OpenAI())`"),
                )
            ],
        ),
        "",
        f"B / A: **{ratio:.4f}x** the instructions per call "
        f"(+{per_call['B'] - per_call['A']:,.0f} per call).",
    ]
    publish(lines, RESULTS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
