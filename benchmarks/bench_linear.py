"""Does L1 parsing grow linearly with the reply? Times `parse` and `validate` on hostile shapes.

Run from the repository root:

    .venv/bin/python benchmarks/bench_linear.py

Each shape is generated deterministically at 8 KB, 64 KB and 1 MB of reply text (8,192, 65,536
and 1,048,576 ASCII characters): replies cut mid-token and mid-string by the token limit, deep
nesting (closed and cut), prose holding thousands of small JSON objects, long prose with and
without stray brackets and quotes, and a large object that needs syntax repair. For every shape
and size three calls of the public API are timed: `parse(text)`, `parse(text, Item)` and
`validate(text, Item, finish_reason=...)` (`"length"` for the cut shapes, `"stop"` otherwise),
where `Item` is `{id: int, name: str}`.

Why a separate process: a quadratic L1 takes minutes on a 1 MB reply, and a Python thread cannot
be stopped. Every call runs in a worker process of this same interpreter (this script with
`--worker`), and the parent waits at most `--timeout` seconds (5 by default) for each call; a call
over budget kills the worker (a fresh one takes its place), is reported as `> 5 s`, and the larger
sizes of that shape and call are not run (they could only be slower). The benchmark therefore
finishes in a few minutes on quadratic code as on linear code; a total budget stops it early if
something else goes wrong.

Method: per shape and call, each size is first called once to warm up (in order, small to large,
so that a size over budget stops the larger ones), then the sizes take turns in 9 rounds (the
order rotates and reverses from round to round; a size's batches are spread over the rounds), so
that a slow phase of a shared machine hits them alike. A batch repeats a fast call until it lasts
~40 ms; `gc.collect()` runs before each. A size gets 9 batches at 8 KB, 7 at 64 KB, 5 at 1 MB,
fewer when a call takes longer than a second (a size stops after ~8 s of timed calls, its slow
first call counting as a sample). The time reported is the worker's CPU time per call
(`time.process_time_ns`, the median over the batches): other work on the machine inflates wall
time far more than CPU time. Wall time (`time.perf_counter_ns`) is in the detail table; the
budgets are wall time.

Growth is the ratio of two sizes' minimum CPU times per call, normalised to an 8x size step (the
1 MB / 64 KB step is 16x, so its ratio is raised to the power log 8 / log 16 = 0.75): linear code
scores ~8x, quadratic ~64x. Minimums, because other work only ever adds time, so the
least-disturbed batch is the steadiest measure of the work itself (on a busy 2-core machine whole
seconds run at half speed: the median of five 1 MB calls can double, the minimum rarely moves).
A row above target is measured a second time and judged on the samples of both series, which
outlasts a slow phase but not a real super-linear growth. The target is <= 10x per 8x; rows above
it, or with a call over budget, are marked. The results are printed and written to
`benchmarks/results/linear.md` (not with `--only`, which runs a subset).
"""

from __future__ import annotations

import argparse
import faulthandler
import gc
import json
import math
import os
import platform
import queue
import random
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pydantic
import pydantic_core
from pydantic import BaseModel

import healjson
from _machine import processor, publish, stamp, table

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "linear.md"

SIZES = (("8 KB", 8_192), ("64 KB", 65_536), ("1 MB", 1_048_576))
RUNS = {8_192: 9, 65_536: 7, 1_048_576: 5}  # timed batches per cell, fewer at 1 MB
ROUNDS = max(RUNS.values())
TARGET_PER_8X = 10.0  # issue target: at most 10x the time for 8x the text
TIMEOUT_S = 5.0  # one call's budget (`--timeout`)
SLOW_S = 1.0  # a call this slow is timed alone, and its cell stops after CELL_BUDGET_S
CELL_BUDGET_S = 8.0
TOTAL_BUDGET_S = 420.0  # a safety net: cells after this are reported as not run
MIN_BATCH_NS = 40_000_000
CALLS = ("parse(text)", "parse(text, Item)", "validate(text, Item, finish_reason)")


class Item(BaseModel):
    id: int
    name: str


# --- the shapes ----------------------------------------------------------------------------------

_WORDS = (
    "the",
    "model",
    "reply",
    "was",
    "checked",
    "against",
    "schema",
    "and",
    "every",
    "field",
    "looked",
    "fine",
    "except",
    "for",
    "one",
    "value",
    "that",
    "ran",
    "long",
    "before",
    "limit",
    "report",
    "shows",
    "a",
    "small",
    "order",
    "of",
    "items",
    "with",
    "names",
)


def _sentence(rng: random.Random) -> str:
    words = rng.choices(_WORDS, k=rng.randint(6, 14))
    return " ".join(words).capitalize() + "."


def _fill(head: str, unit: Callable[[int], str], tail: str, size: int) -> str:
    """`head`, then units 0, 1, 2... while they fit, then spaces, then `tail`: `size` characters."""
    parts = [head]
    used = len(head) + len(tail)
    i = 0
    while True:
        piece = unit(i)
        if used + len(piece) > size:
            break
        parts.append(piece)
        used += len(piece)
        i += 1
    return "".join(parts) + " " * (size - used) + tail


def _cut(head: str, unit: str, size: int) -> str:
    """`head` then `unit` repeated, cut at exactly `size` characters (as the token limit cuts)."""
    body = unit * ((size - len(head)) // len(unit) + 1)
    return (head + body)[:size]


def cut_digits(size: int) -> str:
    return _cut('{"id": 1, "name": "x", "total": ', "7", size)


def cut_word(size: int) -> str:
    return _cut('{"id": 1, "name": "x", "status": ', "pending_review_", size)


def cut_after_run(size: int) -> str:
    tail = ', "more": 12'
    return cut_digits(size - len(tail)) + tail


def cut_string(size: int) -> str:
    rng = random.Random(2)
    sentences = []
    length = 0
    while length < size:
        sentence = _sentence(rng)
        if rng.random() < 0.3:
            sentence += ' He said \\"fine\\".\\n'
        sentences.append(sentence + " ")
        length += len(sentence) + 1
    return ('{"id": 1, "name": "' + "".join(sentences))[:size]


def deep_list_closed(size: int) -> str:
    depth = size // 2
    return "[" * depth + "]" * depth


def deep_list_open(size: int) -> str:
    return "[" * size


def deep_object_closed(size: int) -> str:
    depth = (size - 1) // 6
    return ('{"a":' * depth + "1" + "}" * depth).ljust(size)


def deep_object_open(size: int) -> str:
    return _cut("", '{"a":', size)


def candidates(size: int) -> str:
    rng = random.Random(4)
    return _fill(
        "Here are the records.\n",
        lambda n: f'{_sentence(rng)} {{"id": {n}, "name": "x"}} {_sentence(rng)}\n',
        "That is all.",
        size,
    )


def prose_plain(size: int) -> str:
    rng = random.Random(5)
    return _fill("", lambda n: _sentence(rng) + (" " if n % 6 else "\n\n"), "", size)


_STRAY = (
    "See [1] for details.",
    "It's not what we expected.",
    'They called it "quoted" text.',
    "The set { was never closed.",
    "A list (see [2], [3]) follows: it's long.",
    "An 'odd' remark, then } and ] on their own.",
)


def prose_stray(size: int) -> str:
    rng = random.Random(6)
    return _fill("", lambda n: f"{_sentence(rng)} {rng.choice(_STRAY)} ", "", size)


def broken_object(size: int) -> str:
    def field(i: int) -> str:
        return (
            f"  'f{i}': 'value {i}', // note {i}\n"
            f"  'g{i}': [1, 2, 3,], /* list {i} */\n"
            f"  'h{i}': True,\n"
        )

    return _fill("{\n  // a record\n  'id': 1,\n  'name': 'x',\n", field, "}", size)


@dataclass(frozen=True, slots=True)
class Shape:
    """One kind of reply; `make(size)` returns exactly `size` characters of it."""

    key: str
    title: str
    finish_reason: str
    make: Callable[[int], str]


SHAPES = (
    Shape("cut-digits", "1. cut mid-token: digits run at the end", "length", cut_digits),
    Shape("cut-word", "1. cut mid-token: identifier run at the end", "length", cut_word),
    Shape("cut-after-run", "1. cut mid-token just after a digits run", "length", cut_after_run),
    Shape("cut-string", "2. cut mid-string (escapes inside)", "length", cut_string),
    Shape("deep-list", "3. deep nesting: `[[...]]`", "stop", deep_list_closed),
    Shape("deep-list-open", "3. deep nesting: `[[[...` cut", "length", deep_list_open),
    Shape("deep-object", '3. deep nesting: `{"a":{"a":...1}}`', "stop", deep_object_closed),
    Shape("deep-object-open", '3. deep nesting: `{"a":{"a":...` cut', "length", deep_object_open),
    Shape("candidates", "4. prose with thousands of small objects", "stop", candidates),
    Shape("prose", "5. long prose, no JSON", "stop", prose_plain),
    Shape("prose-stray", "5. prose with stray brackets and quotes", "stop", prose_stray),
    Shape("broken-object", "6. complete object needing syntax repair", "stop", broken_object),
)
BY_KEY = {shape.key: shape for shape in SHAPES}


# --- the worker: one process that runs the calls ------------------------------------------------


def outcome_of(result: Any) -> str:
    """A short description of what the call returned, so a fast result can be checked too."""
    if isinstance(result, healjson.ParseResult):
        state = "ok" if result.ok else ("truncated" if result.truncated else "error")
    elif result.ok:
        state = "Healed"
    else:
        return f"Degraded({result.reason})"
    flags = ", ".join(str(flag) for flag in result.flags)
    return f"{state} [{flags}]" if flags else state


def call_for(name: str, text: str, finish_reason: str) -> Callable[[], Any]:
    if name == CALLS[0]:
        return lambda: healjson.parse(text)
    if name == CALLS[1]:
        return lambda: healjson.parse(text, Item)
    return lambda: healjson.validate(text, Item, finish_reason=finish_reason)


def worker() -> int:
    """Answer one JSON line per request line: `{shape, size, call, loops}` -> `{ns, cpu, chars,
    outcome}` (wall and CPU nanoseconds per call, the text's length, what the call returned)."""
    faulthandler.enable()  # a crash in native code (a stack overflow) says where, on stderr
    healjson.validate('{"id": 1, "name": "x"}', Item)  # imports and schema build, not timed
    texts: dict[tuple[str, int], str] = {}  # one shape's texts: the sizes take turns
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        shape, size = BY_KEY[request["shape"]], request["size"]
        if (shape.key, size) not in texts:
            texts = {key: text for key, text in texts.items() if key[0] == shape.key}
            texts[shape.key, size] = shape.make(size)
        text = texts[shape.key, size]
        fn = call_for(request["call"], text, shape.finish_reason)
        loops = request["loops"]
        gc.collect()
        start, cpu_start = time.perf_counter_ns(), time.process_time_ns()
        try:
            for _ in range(loops):
                result = fn()
            outcome = outcome_of(result)
        except Exception as exc:  # parse and validate promise not to raise: report it
            outcome = f"raised {type(exc).__name__}"
        wall, cpu = time.perf_counter_ns() - start, time.process_time_ns() - cpu_start
        answer = {"ns": wall / loops, "cpu": cpu / loops, "chars": len(text), "outcome": outcome}
        print(json.dumps(answer), flush=True)
    return 0


class Worker:
    """The parent's handle on a worker; a reader thread lets every answer wait with a timeout."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__).resolve()), "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        self.answers: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        if self._answer(60.0) is None:
            raise RuntimeError("the worker did not start")

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.answers.put(line)
        self.answers.put(None)  # the worker ended

    def _answer(self, timeout: float) -> dict[str, Any] | None:
        try:
            line = self.answers.get(timeout=timeout)
        except queue.Empty:
            return None
        if line is None:
            status = self.proc.wait()
            raise RuntimeError(f"the worker process died (exit status {status})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def run(self, shape: str, size: int, call: str, loops: int, timeout: float) -> Any:
        """The worker's answer, or None when the batch took longer than `timeout` seconds."""
        assert self.proc.stdin is not None
        request = {"shape": shape, "size": size, "call": call, "loops": loops}
        self.proc.stdin.write(json.dumps(request) + "\n")
        self.proc.stdin.flush()
        return self._answer(timeout)

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


# --- the parent: rounds, budgets, growth --------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cell:
    """One (shape, call, size) measurement. `status` is "ok", "timeout", "crashed" or "skipped";
    `samples` are (round, CPU ns per call, wall ns per call), round -1 being a slow first call
    kept as a sample."""

    status: str
    chars: int
    samples: tuple[tuple[int, float, float], ...] = ()
    loops: int = 0
    outcome: str = ""

    @property
    def median_ns(self) -> float:
        """The median CPU time per call: what the reports and the growth use."""
        return statistics.median(cpu for _, cpu, _ in self.samples)

    @property
    def min_ns(self) -> float:
        return min(cpu for _, cpu, _ in self.samples)

    @property
    def wall_median_ns(self) -> float:
        return statistics.median(wall for _, _, wall in self.samples)


@dataclass(slots=True)
class _Live:
    """A size still being timed in the rounds of one row."""

    chars: int
    loops: int
    per_call_ns: float
    outcome: str
    samples: list[tuple[int, float, float]]

    def wants(self, size: int, round_: int) -> bool:
        """Whether this size takes part in this round: its batches are spread over all the
        rounds (5 of 9 at 1 MB), until its time budget is spent."""
        spent = sum(wall for _, _, wall in self.samples) * self.loops
        runs = RUNS[size]
        return (round_ * runs) % ROUNDS < runs and spent < CELL_BUDGET_S * 1e9


def _orders(sizes: Sequence[int], rounds: int) -> list[list[int]]:
    """A different order of the sizes per round: rotate, and reverse every other round."""
    orders = []
    for r in range(rounds):
        k = r % len(sizes)
        order = [*sizes[k:], *sizes[:k]]
        if r % 2:
            order.reverse()
        orders.append(order)
    return orders


def _not_run(smaller: Cell) -> str:
    """Why a size was not run, given the first smaller size that was not timed."""
    if smaller.status == "timeout":
        return "not run: a smaller size was already over budget"
    if smaller.status == "crashed":
        return "not run: a smaller size crashed the worker"
    return smaller.outcome


class Bench:
    """Runs the rows through one worker at a time, replacing it when a call overruns."""

    def __init__(self, timeout: float) -> None:
        self.timeout = timeout
        self.deadline = time.monotonic() + TOTAL_BUDGET_S
        self.worker: Worker | None = None

    def _discard(self) -> None:
        if self.worker is not None:
            self.worker.stop()
            self.worker = None

    def _batch(self, shape: str, size: int, call: str, loops: int, expected_ns: float) -> Any:
        """The worker's answer, or None when it overran (the worker is then ended)."""
        if self.worker is None:
            self.worker = Worker()
        slack = loops * expected_ns * 2e-9
        try:
            answer = self.worker.run(shape, size, call, loops, self.timeout + slack)
        except RuntimeError:
            self._discard()
            raise
        if answer is None:
            self._discard()  # still busy with a call over budget: end it
        return answer

    def _probe(self, shape: str, size: int, call: str) -> _Live | Cell:
        """The first call (a warm-up, kept as a sample when it is slow), or the failed cell."""
        try:
            first = self._batch(shape, size, call, 1, 0.0)
            if first is None:
                return Cell("timeout", size)
            if first["ns"] >= SLOW_S * 1e9:
                sample = (-1, first["cpu"], first["ns"])
                return _Live(first["chars"], 1, first["ns"], first["outcome"], [sample])
            warm = self._batch(shape, size, call, 1, first["ns"])
            if warm is None:
                return Cell("timeout", size, outcome=first["outcome"])
        except RuntimeError as exc:
            return Cell("crashed", size, outcome=str(exc))
        loops = max(1, math.ceil(MIN_BATCH_NS / max(warm["ns"], 1.0)))
        return _Live(warm["chars"], loops, warm["ns"], warm["outcome"], [])

    def row(self, shape: Shape, call: str) -> tuple[Cell, ...]:
        """Every size of one (shape, call): probed from small to large, then timed in rounds in
        which the sizes take turns, so that drift on a shared machine hits them alike."""
        cells: dict[int, Cell] = {}
        live: dict[int, _Live] = {}
        sizes = [size for _, size in SIZES]
        for size in sizes:
            failed = [cell for cell in cells.values() if cell.status != "ok"]
            if failed:
                cells[size] = Cell("skipped", size, outcome=_not_run(failed[0]))
            elif time.monotonic() > self.deadline:
                cells[size] = Cell("skipped", size, outcome="not run: total budget spent")
            else:
                probe = self._probe(shape.key, size, call)
                if isinstance(probe, Cell):
                    cells[size] = probe
                else:
                    live[size] = probe
                    cells[size] = Cell("ok", size)  # placeholder until the rounds end
        for r, order in enumerate(_orders(sizes, ROUNDS)):
            for size in order:
                state = live.get(size)
                if state is None or not state.wants(size, r) or time.monotonic() > self.deadline:
                    continue
                try:
                    answer = self._batch(shape.key, size, call, state.loops, state.per_call_ns)
                except RuntimeError as exc:
                    failed_cell = Cell("crashed", state.chars, outcome=str(exc))
                else:
                    if answer is not None:
                        state.samples.append((r, answer["cpu"], answer["ns"]))
                        continue
                    failed_cell = Cell("timeout", state.chars, outcome=state.outcome)
                cells[size] = failed_cell
                del live[size]
                for larger in (other for other in sizes if other > size):
                    live.pop(larger, None)
                    cells[larger] = Cell("skipped", larger, outcome=_not_run(failed_cell))
        for size, state in live.items():
            if state.samples:
                samples = tuple(state.samples)
                cells[size] = Cell("ok", state.chars, samples, state.loops, state.outcome)
            else:
                cells[size] = Cell("skipped", state.chars, outcome="not run: total budget spent")
        return tuple(cells[size] for size in sizes)

    def close(self) -> None:
        self._discard()


def fmt_ns(ns: float) -> str:
    if ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e3:.1f} µs"


def fmt_cell(cell: Cell, timeout: float) -> str:
    if cell.status == "ok":
        return fmt_ns(cell.median_ns)
    if cell.status == "timeout":
        return f"**> {timeout:g} s**"
    if cell.status == "crashed":
        return "**crashed**"
    return "not run"


def growth(small: Cell, large: Cell, step: int, timeout: float) -> tuple[str, bool | None]:
    """The time ratio normalised to an 8x size step, and whether it is above target (None:
    unknown). The ratio is of the minimum CPU times: other work on the machine only ever adds
    time, so the least-disturbed batch is the steadiest measure of the work itself. A call over
    budget gives a lower bound: the budget over the smaller size's wall time (the budget is wall
    time)."""
    power = math.log(8) / math.log(step)
    if small.status != "ok":
        return "—", None
    if large.status == "timeout":
        bound = (timeout * 1e9 / small.wall_median_ns) ** power
        return f"> {bound:.0f}x", True if bound > TARGET_PER_8X else None
    if large.status != "ok":
        return "—", None
    ratio = (large.min_ns / small.min_ns) ** power
    changed = " †" if large.outcome != small.outcome else ""
    return f"{ratio:.1f}x{changed}", ratio > TARGET_PER_8X


def verdict(marks: Sequence[bool | None], cells: Sequence[Cell]) -> str:
    """A row meets the target only when both growths were measured and are within it: a call
    over budget fails the row even where its lower bound alone would not prove the growth."""
    statuses = {cell.status for cell in cells}
    if "crashed" in statuses:
        return "**CRASHED**"
    if "timeout" in statuses:
        return "**OVER BUDGET**"
    if any(mark is True for mark in marks):
        return "**ABOVE TARGET**"
    if any(mark is None for mark in marks):
        return "not run"
    return "met"


@dataclass(frozen=True, slots=True)
class Row:
    shape: Shape
    call: str
    cells: tuple[Cell, ...]
    again: bool = False  # measured a second time: the first series was above target


def growths(cells: Sequence[Cell], timeout: float) -> tuple[tuple[str, bool | None], ...]:
    """The growth of each size step (8 KB -> 64 KB, 64 KB -> 1 MB)."""
    return tuple(
        growth(small, large, large_size // small_size, timeout)
        for (_, small_size), (_, large_size), small, large in zip(
            SIZES, SIZES[1:], cells, cells[1:], strict=False
        )
    )


def merged(first: Sequence[Cell], second: Sequence[Cell]) -> tuple[Cell, ...]:
    """Both series of a row, sample by sample (a failed second series stands on its own)."""
    out = []
    for a, b in zip(first, second, strict=True):
        both = a.status == "ok" and b.status == "ok"
        out.append(Cell("ok", b.chars, a.samples + b.samples, b.loops, b.outcome) if both else b)
    return tuple(out)


def run(shapes: Sequence[Shape], timeout: float) -> list[Row]:
    """Every row; a row above target is measured again and judged on both series' samples
    (noise only adds time, so a slow phase of the machine is outlasted; a real super-linear
    growth is not)."""
    bench = Bench(timeout)
    rows = []
    try:
        for shape in shapes:
            for call in CALLS:
                cells = bench.row(shape, call)
                above = any(mark is True for _, mark in growths(cells, timeout))
                if above and all(cell.status == "ok" for cell in cells):
                    rows.append(Row(shape, call, merged(cells, bench.row(shape, call)), True))
                else:
                    rows.append(Row(shape, call, cells))
            print(f"  {shape.key} done", file=sys.stderr)
    finally:
        bench.close()
    return rows


def report(rows: Sequence[Row], timeout: float) -> tuple[list[str], int]:
    """The summary and detail tables, and how many rows miss the target."""
    summary = []
    detail = []
    missed = 0
    for row in rows:
        (g1, m1), (g2, m2) = growths(row.cells, timeout)
        state = verdict((m1, m2), row.cells)
        missed += state.startswith("**")
        if row.again:
            state += " (measured twice)"
        times = [fmt_cell(cell, timeout) for cell in row.cells]
        summary.append([row.shape.title, f"`{row.call}`", *times, g1, g2, state])
        for (label, _), cell in zip(SIZES, row.cells, strict=True):
            timed = cell.status == "ok"
            detail.append(
                [
                    f"`{row.shape.key}`",
                    f"`{row.call}`",
                    f"{label} ({cell.chars:,})",
                    fmt_cell(cell, timeout),
                    fmt_ns(cell.min_ns) if timed else "",
                    fmt_ns(cell.wall_median_ns) if timed else "",
                    f"{len(cell.samples)} x {cell.loops}" if timed else "",
                    cell.outcome,
                ]
            )
    lines = [
        "## Growth per shape",
        "",
        "Median CPU time per call at each size. Growth: the ratio of the minimum CPU times of "
        "two sizes (the steadiest figure on a shared machine; see every cell), per 8x text (the "
        "1 MB / 64 KB step is 16x: its ratio is raised to the power 0.75). Target: "
        f"<= {TARGET_PER_8X:g}x per 8x (linear is "
        f"~8x, quadratic ~64x). `> {timeout:g} s`: the call was stopped at its budget; the "
        "growth is then a lower bound, the larger size is not run and the row fails (**OVER "
        "BUDGET**) whatever that bound says. †: the call returned something else at the larger "
        "size (see every cell), so the two sizes did different work. *Measured twice*: the "
        "first series was above target; the row is judged on both series' samples. `Item` is "
        "`{id: int, name: str}`; `finish_reason` is `length` for the cut shapes, `stop` "
        "otherwise.",
        "",
        *table(
            [
                "shape",
                "call",
                *(label for label, _ in SIZES),
                "growth 8 KB → 64 KB",
                "growth 64 KB → 1 MB (per 8x)",
                f"≤ {TARGET_PER_8X:g}x per 8x?",
            ],
            summary,
        ),
        "",
        "## Every cell",
        "",
        "CPU time per call (median and minimum over the batches), wall time per call (median), "
        "timed batches x calls per batch, and what the call returned (ParseResult: ok / "
        "truncated / error, with its flags; validate: Healed or Degraded).",
        "",
        *table(
            ["shape", "call", "size (chars)", "CPU", "CPU min", "wall", "runs", "outcome"],
            detail,
        ),
        "",
    ]
    return lines, missed


def load() -> str:
    """The 1-minute load average: other work on a shared machine shows in the medians."""
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "unknown"


def _git(*args: str) -> subprocess.CompletedProcess[str]:
    command = ["git", "-C", str(ROOT), *args]
    return subprocess.run(command, capture_output=True, text=True, check=False)


def source() -> str:
    """Which healjson was measured: this benchmark compares L1 before and after a rewrite."""
    package = Path(healjson.__file__).resolve().parent
    try:
        where = package.relative_to(ROOT).as_posix()
    except ValueError:
        return "imported from outside this checkout"
    try:
        head = _git("rev-parse", "--short", "HEAD")
        changed = _git("diff", "--quiet", "HEAD", "--", where).returncode != 0
        untracked = _git("ls-files", "--others", "--exclude-standard", "--", where).stdout.strip()
    except OSError:
        head = None
    if head is None or head.returncode != 0:
        return f"`{where}` (not a git checkout)"
    state = "with uncommitted changes" if changed or untracked else "as committed"
    return f"`{where}` at git {head.stdout.strip()}, {state}"


def environment(timeout: float, load_before: str) -> list[str]:
    return [
        "# healjson L1 linearity benchmark",
        "",
        *stamp(),
        f"- pydantic {pydantic.VERSION}, pydantic_core {pydantic_core.__version__}, "
        f"healjson {version('healjson')}",
        f"- healjson source: {source()}",
        f"- platform: {platform.platform()}",
        f"- processor: {processor()} ({os.cpu_count()} logical CPUs)",
        f"- budget: {timeout:g} s per call, {CELL_BUDGET_S:g} s of timed calls per cell, "
        f"{TOTAL_BUDGET_S:g} s in all",
        f"- load average (1 min): {load_before} before the run, {load()} after",
        "",
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument(
        "--timeout", type=float, default=TIMEOUT_S, help="seconds allowed for one call"
    )
    parser.add_argument(
        "--only",
        metavar="SHAPE",
        action="append",
        choices=list(BY_KEY),
        help="run only this shape (repeatable); prints, does not write the results file",
    )
    args = parser.parse_args()
    if args.worker:
        return worker()
    shapes = [BY_KEY[key] for key in args.only] if args.only else list(SHAPES)
    started, load_before = time.monotonic(), load()
    rows = run(shapes, args.timeout)
    body, missed = report(rows, args.timeout)
    verdict_line = (
        f"**{missed} of {len(rows)} rows miss the target** (<= {TARGET_PER_8X:g}x per 8x)"
        if missed
        else f"all {len(rows)} rows within target (<= {TARGET_PER_8X:g}x per 8x)"
    )
    lines = [
        *environment(args.timeout, load_before),
        f"Result: {verdict_line}; the run took {time.monotonic() - started:.0f} s.",
        "",
        *body,
    ]
    if args.only:
        print("\n".join(lines))
    else:
        publish(lines, RESULTS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
