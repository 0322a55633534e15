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

`--reply` picks the answer (default `order`: the model of `bench_overhead.py`, every field
required). `defaults-given` and `defaults-left-out` use the same order with fields that have
defaults (a note and a gift-wrap flag on the order, a discount on each item): every field
written, or the defaulted ones left out. Those are the two cases of the check for misnamed keys
(a key that spells a field left at its default): with every field given it costs one comparison
per model instance; with some left out, the reply's keys are read once more. `--calls SHORT
LONG` and `--only A|B` make a quicker count. Results are printed and written to
`benchmarks/results/instructions.md` (`instructions-<reply>.md` for another reply).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from pydantic import BaseModel

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import publish, stamp, table
from bench_overhead import EXPECTED, REPLY, LineItem, Order, ServerProcess

SHORT, LONG = 100, 300
WARMUP = 20
RESULTS = Path(__file__).resolve().parent / "results" / "instructions.md"
CHILD = """
import sys, gc
sys.path.insert(0, {bench!r})
import bench_overhead as b
import bench_instructions as i
kind, n, url, reply = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
b.Order = i.REPLIES[reply][0]
run = (b.bare_call if kind == "A" else b.healjson_call)(b.sync_client(url))
for _ in range({warmup}):
    run()
gc.collect()
for _ in range(n):
    run()
"""


class LineItemWithDefaults(LineItem):
    discount: float = 0.0


class OrderWithDefaults(Order):
    items: list[LineItemWithDefaults]  # type: ignore[assignment]
    note: str = ""
    gift_wrap: bool = False


_GIVEN = OrderWithDefaults.model_validate(
    {
        **EXPECTED.model_dump(),
        "note": "leave at the door",
        "gift_wrap": True,
        "items": [{**item.model_dump(), "discount": 0.5} for item in EXPECTED.items],
    }
)
REPLIES: dict[str, tuple[type[BaseModel], str]] = {
    "order": (Order, REPLY),
    "defaults-given": (OrderWithDefaults, _GIVEN.model_dump_json()),
    "defaults-left-out": (OrderWithDefaults, EXPECTED.model_dump_json()),
}


def collected(kind: str, calls: int, base_url: str, workdir: Path, reply: str = "order") -> int:
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
            reply,
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
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--reply", choices=sorted(REPLIES), default="order")
    parser.add_argument("--calls", nargs=2, type=int, default=(SHORT, LONG))
    parser.add_argument("--only", choices=("A", "B"))
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: nothing to count", file=sys.stderr)
        return 1
    short, long = args.calls
    kinds = (args.only,) if args.only else ("A", "B")
    with tempfile.TemporaryDirectory() as tmp:
        server = ServerProcess([REPLIES[args.reply][1]], Path(tmp), "content")
        try:
            counts = {
                (kind, calls): collected(kind, calls, server.base_url, Path(tmp), args.reply)
                for kind in kinds
                for calls in (short, long)
            }
        finally:
            server.stop()
    per_call = {
        kind: (counts[(kind, long)] - counts[(kind, short)]) / (long - short) for kind in kinds
    }
    names = {"A": "A. bare `OpenAI` + `model_validate_json`", "B": "B. `healjson.wrap(OpenAI())`"}
    lines = [
        "# Instructions per happy-path call",
        "",
        *stamp(),
        "",
        f"`.venv/bin/python benchmarks/bench_instructions.py --reply {args.reply}`: callgrind "
        f"over a client process making {short} and {long} calls after {WARMUP} warm-up calls; "
        f"per call = the difference / {long - short}.",
        "",
        *table(
            ["contender", f"total, {short} calls", f"total, {long} calls", "per call"],
            [
                [
                    names[kind],
                    f"{counts[(kind, short)]:,}",
                    f"{counts[(kind, long)]:,}",
                    f"{per_call[kind]:,.0f}",
                ]
                for kind in kinds
            ],
        ),
    ]
    if len(kinds) == 2:
        ratio = per_call["B"] / per_call["A"]
        lines += [
            "",
            f"B / A: **{ratio:.4f}x** the instructions per call "
            f"(+{per_call['B'] - per_call['A']:,.0f} per call).",
        ]
    where = RESULTS if args.reply == "order" else RESULTS.with_name(f"instructions-{args.reply}.md")
    publish(lines, where)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
