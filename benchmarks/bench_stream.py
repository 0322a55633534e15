"""Benchmark the client-side cost of healjson's healed streaming, against the bare SDK's stream.

Run from the repository root:

    .venv/bin/python benchmarks/bench_stream.py

Every stream goes over real HTTP to `healjson.testing._server` running in *separate processes*
(one per reply, started like `bench_overhead.ServerProcess`, whose launcher this script imports),
so the client process measures only the client. Each server streams its reply as OpenAI SSE,
the content split into deltas of CHUNK_CHARS (5) characters (`ScriptedReply.chunk_chars`), like
a real model's tokens, with the final usage chunk (`stream_options.include_usage`: every
contender asks for it; checked on recorded requests before timing). Replies (pydantic-dumped,
compact): a `Report` of about 2 KB and one of about 50 KB (nested `Contact`/`Address` records,
a long list field), and `list[Item]` of 60, 500 and 4,000 items. Contenders, all with
`max_retries=0` on the SDK, the same model name and messages, against the same server reply:

- A (baseline): `OpenAI().chat.completions.create(..., stream=True, stream_options=
  {"include_usage": True})`, iterate every chunk, join `choices[0].delta.content`, then
  `Report.model_validate_json(text)` (lists: `TypeAdapter(list[Item]).validate_json`);
- B: `healjson.wrap(OpenAI()).chat.completions.create(response_model=M, stream=True)`: iterate
  every `Partial` snapshot (lists: `.items()`), then read `.outcome`;
- C: instructor's own, unhealed `create_partial` (objects) / `create_iterable` (lists) on
  `instructor.from_openai(OpenAI(), mode=Mode.JSON)`, iterated to the end;
- D: healjson's healed `create_partial` / `create_iterable` on
  `healjson.wrap(instructor.from_openai(OpenAI(), mode=Mode.JSON))`, iterated, then `.outcome`:
  the wrapper's top-level methods (whether `wrapped.chat.completions.create_iterable`, the
  spelling instructor's docs use, is healed too is checked and reported).

Part 1 (the verdict): per reply, rounds of one stream per contender, A and B back to back in
every round with which goes first alternating, the rounds cycling through a 4x4 Latin square of
orders (`pair_orders`), `gc.collect()` before every stream; one warm-up stream each first (its
value checked against the expected one), except for the streams of seconds (50 KB, 4,000 items:
the smaller replies ran the same code on the same models first), whose first timed stream is
checked instead. Each stream records the client process's CPU (`time.process_time_ns`) and wall
time from `create` to the validated value. Paired ratio = median over rounds of (contender / A
in the same round). The B / A verdict is what needs many pairs (it sits near the target and a
pair's ratio swings by +-20% on a shared machine); C and D are side by side figures and run in
the first `Repeats.side` rounds only (the later rounds are A/B pairs). C is quadratic on objects
(it re-parses the whole text at every delta) and costs ~20-30x A per stream at 50 KB (~50 s of
CPU here): it runs once there, paired with A's stream in the same round.

Part 2 (linearity): A and B at 60 -> 500 -> 4,000 items (~8x steps); the 500-item samples are
part 1's, 60 and 4,000 run in their own alternating A/B pairs. Growth per 8x = the CPU ratio
between two lengths scaled to exactly 8x the chunks (`ratio ** (ln 8 / ln chunk_ratio)`).

Part 3 (time to the first item): wall clock (and the client's CPU) from the request to the
first item out of B's `.items()` and C's `create_iterable`, at each length, the stream closed
right after it (so a 4,000-item stream costs no more than a 60-item one to sample); A's time to
its first content chunk is the floor set by the server and the HTTP stack (the server builds all
its frames before sending the first). `Repeats.ttfi` samples per contender and length, alternating.

Part 4 (healjson's own work, no HTTP): the chunks A received (the SDK's `ChatCompletionChunk`
objects, role, finish and usage chunks included) fed again through
`healjson.Healer(M).stream(lambda messages, **kw: iter(chunks), "go")`, snapshots (lists:
`.items()`) iterated and `.outcome` read; CPU per chunk, alternating with the same join +
validate that A does after its SDK work (the chunks are collected after part 3 and frozen with
`gc.freeze()`, so the collector does not walk them during any timing). Part 5: cProfile of
that no-HTTP run at 500 and 4,000 items, per chunk: which of healjson's functions grow with the
list.

Results are printed and written to `benchmarks/results/stream.md`; `--quick` (a smoke test of
the script: 1-2 repeats everywhere) prints without writing.

`--wide` runs only the wide-model mode (`stream_wide`): a model's first stream at 100, 300 and
500 fields, CPU growth per 2x fields; its section of `stream.md` is replaced (the rest kept, and
a full run keeps that section).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import itertools
import math
import pstats
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any, Literal

import openai
import pydantic
import pydantic_core
from pydantic import BaseModel, TypeAdapter

import healjson
from _machine import machine, publish, stamp, table
from bench_overhead import ServerProcess, paired_iqr, rotations, sync_client
from stream_wide import kept_section, run_wide, spliced

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "stream.md"

TARGET_RATIO = 1.3  # issue target: healjson's client CPU per stream <= 1.3x the bare SDK's
TARGET_PER_8X = 10.0  # linear: at most 10x the CPU for 8x the chunks (as in bench_linear.py)
TARGET_TTFI_SPREAD = 1.5  # "independent of the length": CPU to the first item within 1.5x
CHUNK_CHARS = 5
MODEL_NAME = "gpt-4o-mini"
MESSAGES = [
    {"role": "system", "content": "You extract structured records from documents."},
    {"role": "user", "content": "Extract the report (or the items) from the attached document."},
]
LIST_LENGTHS = (60, 500, 4_000)


@dataclass(frozen=True)
class Repeats:
    """How many streams each part runs (the SDK alone costs ~0.2 ms of CPU per chunk here)."""

    rounds: dict[str, int]  # part 1, per reply: A and B run in every round
    side: dict[str, int]  # part 1, per reply: C and D run in the first rounds only
    linear_pairs: dict[int, int]  # part 2, per list length (500 items: part 1's rounds)
    ttfi: int  # part 3, per contender and length
    own: dict[str, int]  # part 4, per reply


FULL = Repeats(
    rounds={"2 KB object": 24, "50 KB object": 9, "500 items": 13},
    side={"2 KB object": 24, "50 KB object": 4, "500 items": 6},  # C at 50 KB: once, see below
    linear_pairs={60: 16, 4_000: 2},
    ttfi=6,
    own={"2 KB object": 30, "50 KB object": 5, "60 items": 30, "500 items": 10, "4000 items": 3},
)
QUICK = Repeats(
    rounds=dict.fromkeys(FULL.rounds, 2),
    side=dict.fromkeys(FULL.rounds, 1),
    linear_pairs=dict.fromkeys(FULL.linear_pairs, 1),
    ttfi=2,
    own=dict.fromkeys(FULL.own, 2),
)


# --- the models and the replies ----------------------------------------------------------------


class Address(BaseModel):
    street: str
    city: str
    postcode: str
    country: str


class Contact(BaseModel):
    name: str
    email: str
    role: str
    phone: str | None = None
    address: Address


class Report(BaseModel):
    report_id: str
    title: str
    status: Literal["draft", "review", "final"]
    score: float
    published: bool
    summary: str
    author: Contact
    keywords: list[str]
    contacts: list[Contact]


class Item(BaseModel):
    id: int
    name: str
    price: float


ITEMS = TypeAdapter(list[Item])

_PROSE = (
    "quarterly revenue grew across every region while logistics costs fell after the "
    "warehouse consolidation; the board approved the new supplier terms, noted two open "
    "audit findings and asked for a revised forecast before the next review"
)
_WORDS = _PROSE.split()
_CITIES = ("London", "Zürich", "Lyon", "Kraków", "Porto", "Dublin", "Malmö")
_ROLES = ("analyst", "engineer", "account manager", "auditor", "buyer")


def _contact(i: int) -> Contact:
    return Contact(
        name=f"Person {i} Zoë-{chr(65 + i % 26)}",
        email=f"person.{i}@example.com",
        role=_ROLES[i % len(_ROLES)],
        phone=None if i % 4 == 3 else f"+44 20 7946 {i:04d}",
        address=Address(
            street=f"{10 + i} High Street",
            city=_CITIES[i % len(_CITIES)],
            postcode=f"EC{i % 9 + 1}A {i % 7 + 1}BB",
            country="United Kingdom",
        ),
    )


def _summary(words: int) -> str:
    text = " ".join(_WORDS[i % len(_WORDS)] for i in range(words))
    return text.replace("review ", 'review "Q3"\n', 1)  # an escaped quote and a newline


def report(contacts: int, summary_words: int) -> Report:
    return Report(
        report_id="RPT-2024-0117",
        title="Quarterly operations review",
        status="final",
        score=0.875,
        published=True,
        summary=_summary(summary_words),
        author=_contact(0),
        keywords=["revenue", "logistics", "suppliers", "audit", "forecast"],
        contacts=[_contact(i) for i in range(1, contacts + 1)],
    )


def items(n: int) -> list[Item]:
    return [Item(id=i, name=f"Widget {i:04d}", price=(i * 37 % 2_000) / 8) for i in range(n)]


@dataclass
class Case:
    name: str
    model: Any  # Report or Item
    expected: Any  # a Report or a list[Item]
    text: str = ""
    url: str = ""
    chunks: list[Any] = field(default_factory=list)  # what A received, for part 4

    def __post_init__(self) -> None:
        if isinstance(self.expected, list):
            self.text = ITEMS.dump_json(self.expected).decode()
        else:
            self.text = self.expected.model_dump_json()

    @property
    def is_list(self) -> bool:
        return isinstance(self.expected, list)

    def same(self, value: Any) -> bool:
        """`value` is the expected value (instructor returns subclasses: compare dumps)."""
        if self.is_list:
            return [item.model_dump() for item in value] == [
                item.model_dump() for item in self.expected
            ]
        return bool(value.model_dump() == self.expected.model_dump())


def make_cases() -> dict[str, Case]:
    cases = {
        "2 KB object": Case("2 KB object", Report, report(contacts=6, summary_words=60)),
        "50 KB object": Case("50 KB object", Report, report(contacts=225, summary_words=420)),
    }
    for n in LIST_LENGTHS:
        cases[f"{n} items"] = Case(f"{n:,} items", Item, items(n))
    return cases


# --- the contenders ----------------------------------------------------------------------------

BARE = "A"
HEALJSON = "B"
INSTR = "C"
HEALED_INSTR = "D"
LABELS = {
    BARE: "A. bare `OpenAI` stream + `model_validate_json` (baseline)",
    HEALJSON: "B. `healjson.wrap(OpenAI())` `create(stream=True)`",
    INSTR: "C. instructor `create_partial` / `create_iterable` (`Mode.JSON`, unhealed)",
    HEALED_INSTR: "D. `healjson.wrap(instructor)` `create_partial` / `create_iterable`",
}
USAGE = {"include_usage": True}


def _bare(case: Case) -> Callable[[], Any]:
    client = sync_client(case.url)
    validate = ITEMS.validate_json if case.is_list else case.model.model_validate_json

    def run_bare() -> Any:
        stream = client.chat.completions.create(
            model=MODEL_NAME, messages=MESSAGES, stream=True, stream_options=USAGE
        )
        parts = []
        for chunk in stream:
            if chunk.choices:
                content = chunk.choices[0].delta.content
                if content:
                    parts.append(content)
        return validate("".join(parts))

    return run_bare


def _finish(stream: Any) -> Any:
    outcome = stream.outcome
    if not outcome.ok:
        raise AssertionError(f"healjson did not heal the stream: {outcome!r}")
    return outcome.value


def _healjson(case: Case) -> Callable[[], Any]:
    healed = healjson.wrap(sync_client(case.url))
    target = list[Item] if case.is_list else case.model

    def run_healjson() -> Any:
        stream = healed.chat.completions.create(
            model=MODEL_NAME, messages=MESSAGES, response_model=target, stream=True
        )
        if case.is_list:
            for _item in stream.items():
                pass
        else:
            for _snapshot in stream:
                pass
        return _finish(stream)

    return run_healjson


def _instructor(case: Case) -> Callable[[], Any]:
    import instructor  # only its contenders need it: the floor venv has it

    client = instructor.from_openai(sync_client(case.url), mode=instructor.Mode.JSON)

    def run_instructor() -> Any:
        kwargs = {"model": MODEL_NAME, "messages": MESSAGES, "stream_options": USAGE}
        if case.is_list:
            return list(client.chat.completions.create_iterable(response_model=Item, **kwargs))
        last = None
        for partial in client.chat.completions.create_partial(response_model=case.model, **kwargs):
            last = partial
        return last

    return run_instructor


def _healed_instructor(case: Case) -> Callable[[], Any]:
    import instructor  # only its contenders need it: the floor venv has it

    client = healjson.wrap(instructor.from_openai(sync_client(case.url), mode=instructor.Mode.JSON))

    def run_healed_instructor() -> Any:
        if case.is_list:
            stream = client.create_iterable(
                model=MODEL_NAME, messages=MESSAGES, response_model=Item
            )
            for _item in stream:
                pass
        else:
            stream = client.create_partial(
                model=MODEL_NAME, messages=MESSAGES, response_model=case.model
            )
            for _snapshot in stream:
                pass
        return _finish(stream)

    return run_healed_instructor


MAKERS = {BARE: _bare, HEALJSON: _healjson, INSTR: _instructor, HEALED_INSTR: _healed_instructor}


def check_requests() -> tuple[list[str], str]:
    """Every contender streams and asks for the usage chunk: one request each, recorded on an
    in-process server."""
    from healjson.testing import ScriptedReply, ScriptedServer

    case = Case("check", Item, items(3))
    notes = []
    with ScriptedServer(
        [ScriptedReply(content=case.text, chunk_chars=CHUNK_CHARS)], repeat=True
    ) as server:
        case.url = server.base_url
        for name, make in MAKERS.items():
            if not case.same(make(case)()):
                raise AssertionError(f"{name} returned a different value on the check server")
        server.wait_idle()
        for name, request in zip(MAKERS, server.requests, strict=True):
            body = request.body or {}
            if body.get("stream") is not True or body.get("stream_options") != USAGE:
                raise AssertionError(f"{name} sent stream={body.get('stream')!r}, "
                                     f"stream_options={body.get('stream_options')!r}")  # fmt: skip
            shape = (body.get("response_format") or {}).get("type", "none")
            notes.append(f"{name} {len(request.raw):,} bytes, `response_format` {shape}")
        import instructor

        wrapped = healjson.wrap(
            instructor.from_openai(sync_client(server.base_url), mode=instructor.Mode.JSON)
        )
        alias = wrapped.chat.completions.create_iterable(
            model=MODEL_NAME, messages=MESSAGES, response_model=Item
        )
        healed_alias = hasattr(alias, "outcome")
        list(alias)
    if healed_alias:
        alias_note = (
            "`wrapped.chat.completions.create_partial` / `.create_iterable` are healed as well."
        )
    else:
        alias_note = (
            "**`healjson.wrap(instructor_client).chat.completions.create_iterable(...)` (and "
            "`.create_partial`), instructor's usual spelling, is not healed**: it returns "
            f"instructor's own `{type(alias).__name__}` (the wrapper's `chat.completions` "
            "delegates every attribute but `create` to instructor); only the top-level "
            "`wrapped.create_partial` / `wrapped.create_iterable`, which D uses, are healjson's."
        )
    return notes, alias_note


# --- part 1: CPU per stream over HTTP ----------------------------------------------------------

Samples = dict[str, dict[int, tuple[int, int]]]  # contender -> round -> (cpu ns, wall ns)


def run_rounds(
    fns: dict[str, Callable[[], Any]],
    rounds: int,
    limits: dict[str, int],
    label: str,
    case: Case,
    warm_up: bool = True,
) -> Samples:
    """Rounds of one stream per contender, the order rotating; the first stream of each is a
    checked warm-up, or, with `warm_up=False` (streams of seconds), the first timed one is
    checked (after its clock stops)."""
    if warm_up:
        for name, fn in fns.items():
            check(case, name, fn())
    samples: Samples = {name: {} for name in fns}
    for number, order in enumerate(pair_orders(list(fns), rounds)):
        for name in order:
            if number >= limits.get(name, rounds):
                continue
            fn = fns[name]
            gc.collect()
            cpu0, wall0 = time.process_time_ns(), time.perf_counter_ns()
            value = fn()
            cpu1, wall1 = time.process_time_ns(), time.perf_counter_ns()
            if not samples[name]:
                check(case, name, value)
            samples[name][number] = (cpu1 - cpu0, wall1 - wall0)
        progress(f"{label}: round {number + 1}/{rounds} done")
    return samples


def pair_orders(names: Sequence[str], rounds: int) -> list[list[str]]:
    """The order of each round: A and B always back to back, which goes first alternating (the
    verdict's pairs); with four contenders the rounds cycle through a 4x4 Latin square
    (A B C D, D C B A, C D A B, B A D C), so every contender takes every position equally
    often and C and D sit within three streams of their A."""
    if len(names) == 2:
        return [list(names) if r % 2 == 0 else list(reversed(names)) for r in range(rounds)]
    a, b, c, d = names
    square = [[a, b, c, d], [d, c, b, a], [c, d, a, b], [b, a, d, c]]
    return [square[r % 4] for r in range(rounds)]


_STARTED = time.perf_counter()


def progress(message: str) -> None:
    print(f"  [{time.perf_counter() - _STARTED:5.0f} s] {message}", file=sys.stderr)


def check(case: Case, name: str, value: Any) -> None:
    if not case.same(value):
        raise AssertionError(f"{case.name}: {name} returned {value!r}"[:500])


def cpu_of(samples: Samples, name: str) -> list[int]:
    return [cpu for cpu, _ in samples[name].values()]


def ratios(samples: Samples, name: str, index: int = 0) -> list[float]:
    """Per-round ratios of `name` over A (CPU: index 0, wall: index 1), rounds both ran."""
    base = samples[BARE]
    return [value[index] / base[r][index] for r, value in samples[name].items() if r in base]


def ms(ns: float) -> str:
    return f"{ns / 1e6:,.1f} ms"


def chunk_count(case: Case) -> int:
    return len(case.chunks)


C_ROUNDS_50KB = 1  # instructor's create_partial: ~50 s of CPU per 50 KB stream here


def bench_case(case: Case, rounds: int, side: int) -> Samples:
    fns = {name: make(case) for name, make in MAKERS.items()}
    large = case.name == "50 KB object"  # the 2 KB case ran the same code on the same model
    limits = {INSTR: C_ROUNDS_50KB if large else side, HEALED_INSTR: side}
    return run_rounds(fns, rounds, limits, case.name, case, warm_up=not large)


def report_case(lines: list[str], case: Case, samples: Samples) -> float:
    chunks = chunk_count(case)
    lines += [
        f"### {case.name}: {len(case.text):,} characters, {chunks:,} chunks",
        "",
    ]
    rows = []
    for name in MAKERS:
        cpu = cpu_of(samples, name)
        wall = [w for _, w in samples[name].values()]
        per = ratios(samples, name)
        rows.append(
            [
                LABELS[name],
                str(len(cpu)),
                f"{ms(statistics.median(cpu))} ({ms(min(cpu))})",
                f"{statistics.median(cpu) / chunks / 1e3:,.1f} µs",
                f"{statistics.median(per):.3f}x",
                _iqr(per),
                f"{ms(statistics.median(wall))}",
                f"{statistics.median(ratios(samples, name, 1)):.3f}x",
            ]
        )
    lines += table(
        [
            "contender",
            "streams",
            "client CPU per stream, median (min)",
            "per chunk",
            "CPU paired ratio / A",
            "(p25-p75)",
            "wall per stream, median",
            "wall paired ratio",
        ],
        rows,
    )
    lines.append("")
    return statistics.median(ratios(samples, HEALJSON))


def _iqr(values: Sequence[float]) -> str:
    return paired_iqr(values, [1.0] * len(values))


# --- part 2: growth with the list's length -----------------------------------------------------


def per_8x(ratio: float, chunk_ratio: float) -> float:
    return float(ratio ** (math.log(8) / math.log(chunk_ratio)))


def bench_linear(
    cases: dict[str, Case], part1: Samples, linear_pairs: dict[int, int]
) -> dict[int, Samples]:
    out: dict[int, Samples] = {500: {name: part1[name] for name in (BARE, HEALJSON)}}
    for n, pairs in linear_pairs.items():
        case = cases[f"{n} items"]
        fns = {BARE: _bare(case), HEALJSON: _healjson(case)}
        out[n] = run_rounds(fns, pairs, {}, case.name, case, warm_up=n < 500)
    return out


def report_linear(lines: list[str], cases: dict[str, Case], runs: dict[int, Samples]) -> dict:
    rows = []
    medians: dict[int, dict[str, float]] = {}
    for n in LIST_LENGTHS:
        case, samples = cases[f"{n} items"], runs[n]
        chunks = chunk_count(case)
        med = {name: statistics.median(cpu_of(samples, name)) for name in (BARE, HEALJSON)}
        medians[n] = med
        rows.append(
            [
                f"{n:,}",
                f"{len(case.text):,}",
                f"{chunks:,}",
                str(len(samples[BARE])),
                ms(med[BARE]),
                ms(med[HEALJSON]),
                f"{med[BARE] / chunks / 1e3:,.1f} / {med[HEALJSON] / chunks / 1e3:,.1f} µs",
                f"{(med[HEALJSON] - med[BARE]) / chunks / 1e3:+,.1f} µs",
                f"{statistics.median(ratios(samples, HEALJSON)):.3f}x",
            ]
        )
    lines += table(
        [
            "items",
            "characters",
            "chunks",
            "pairs",
            "A CPU per stream",
            "B CPU per stream",
            "per chunk A / B",
            "B - A per chunk",
            "B / A paired",
        ],
        rows,
    )
    growth: dict[str, list[tuple[float, float]]] = {BARE: [], HEALJSON: []}
    for small, large in itertools.pairwise(LIST_LENGTHS):
        chunk_ratio = chunk_count(cases[f"{large} items"]) / chunk_count(cases[f"{small} items"])
        for name, steps in growth.items():
            ratio = medians[large][name] / medians[small][name]
            steps.append((ratio, per_8x(ratio, chunk_ratio)))
    steps = [f"{a:,} → {b:,}" for a, b in itertools.pairwise(LIST_LENGTHS)]
    lines += [
        "",
        *table(
            ["contender", *(f"growth {s} (per 8x chunks)" for s in steps)],
            [
                [LABELS[name], *(f"{raw:.2f}x ({norm:.2f}x)" for raw, norm in growth[name])]
                for name in growth
            ],
        ),
    ]
    return {"growth": growth, "steps": steps}


# --- part 3: time to the first item ------------------------------------------------------------


def ttfi_fns(case: Case) -> dict[str, Callable[[], tuple[int, int]]]:
    """Each returns the (wall, CPU) ns from the request to the first item (A: first content
    chunk), closing the stream right after."""
    bare = sync_client(case.url)
    healed = healjson.wrap(sync_client(case.url))
    import instructor

    ins = instructor.from_openai(sync_client(case.url), mode=instructor.Mode.JSON)

    def first_chunk() -> tuple[int, int]:
        start, cpu = time.perf_counter_ns(), time.process_time_ns()
        stream = bare.chat.completions.create(
            model=MODEL_NAME, messages=MESSAGES, stream=True, stream_options=USAGE
        )
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                break
        elapsed = time.perf_counter_ns() - start, time.process_time_ns() - cpu
        stream.close()
        return elapsed

    def first_healjson() -> tuple[int, int]:
        start, cpu = time.perf_counter_ns(), time.process_time_ns()
        stream = healed.chat.completions.create(
            model=MODEL_NAME, messages=MESSAGES, response_model=list[Item], stream=True
        )
        pending = stream.items()
        first = next(pending)
        elapsed = time.perf_counter_ns() - start, time.process_time_ns() - cpu
        pending.close()
        stream.close()
        assert first == case.expected[0], first
        return elapsed

    def first_instructor() -> tuple[int, int]:
        start, cpu = time.perf_counter_ns(), time.process_time_ns()
        pending = ins.chat.completions.create_iterable(
            model=MODEL_NAME, messages=MESSAGES, response_model=Item, stream_options=USAGE
        )
        first = next(pending)
        elapsed = time.perf_counter_ns() - start, time.process_time_ns() - cpu
        pending.close()
        assert first.model_dump() == case.expected[0].model_dump(), first
        return elapsed

    return {BARE: first_chunk, HEALJSON: first_healjson, INSTR: first_instructor}


TimesToFirst = dict[int, dict[str, list[tuple[int, int]]]]


def bench_ttfi(cases: dict[str, Case], repeats: int) -> TimesToFirst:
    out: TimesToFirst = {}
    for n in LIST_LENGTHS:
        fns = ttfi_fns(cases[f"{n} items"])
        for fn in fns.values():
            fn()
            gc.collect()  # the SDK's stream is in a reference cycle: free its connection
        times: dict[str, list[tuple[int, int]]] = {name: [] for name in fns}
        for order in rotations(list(fns), repeats):
            for name in order:
                times[name].append(fns[name]())
                gc.collect()
        out[n] = times
        progress(f"time to first item: {n:,} items done")
    return out


def report_ttfi(lines: list[str], runs: TimesToFirst) -> dict[str, list[list[float]]]:
    """The table; per contender, [wall medians, CPU medians] by length."""
    names = {
        BARE: "A: first content chunk (floor)",
        HEALJSON: "B: first item from `.items()`",
        INSTR: "C: first item from `create_iterable`",
    }
    medians: dict[str, list[list[float]]] = {name: [[], []] for name in names}
    rows = []
    for name, label in names.items():
        cells = []
        for n in LIST_LENGTHS:
            walls = [wall for wall, _ in runs[n][name]]
            cpus = [cpu for _, cpu in runs[n][name]]
            wall, cpu = statistics.median(walls), statistics.median(cpus)
            medians[name][0].append(wall)
            medians[name][1].append(cpu)
            cells.append(f"{ms(wall)} ({ms(min(walls))}) / {ms(cpu)}")
        rows.append([label, *cells])
    for name in (HEALJSON, INSTR):
        over = [m - f for m, f in zip(medians[name][0], medians[BARE][0], strict=True)]
        rows.append([f"{name}: wall minus the floor", *(f"{ms(value)}" for value in over)])
    lines += table(
        [
            "from the request: wall median (min) / client CPU median",
            *(f"{n:,} items" for n in LIST_LENGTHS),
        ],
        rows,
    )
    return medians


# --- part 4: healjson's own per-chunk work, without HTTP ---------------------------------------


def collect_chunks(case: Case) -> None:
    stream = sync_client(case.url).chat.completions.create(
        model=MODEL_NAME, messages=MESSAGES, stream=True, stream_options=USAGE
    )
    case.chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in case.chunks if c.choices)
    if text != case.text or case.chunks[-1].usage is None:
        raise AssertionError(f"{case.name}: the stream is not the scripted reply")


def own_fns(case: Case) -> dict[str, Callable[[], Any]]:
    chunks = case.chunks
    healer = healjson.Healer(list[Item] if case.is_list else case.model)
    validate = ITEMS.validate_json if case.is_list else case.model.model_validate_json

    def join_validate() -> Any:
        return validate("".join(c.choices[0].delta.content or "" for c in chunks if c.choices))

    def healjson_stream() -> Any:
        stream = healer.stream(lambda messages, **kw: iter(chunks), "go")
        for _ in stream.items() if case.is_list else stream:
            pass
        return _finish(stream)

    return {BARE: join_validate, HEALJSON: healjson_stream}


def bench_own(case: Case, repeats: int) -> dict[str, list[int]]:
    fns = own_fns(case)
    samples = run_rounds(fns, repeats, {}, f"{case.name} without HTTP", case)
    return {name: cpu_of(samples, name) for name in fns}


# --- part 5: profile of the no-HTTP stream -----------------------------------------------------

Key = tuple[str, int, str]


def _label(key: Key) -> str:
    path, line, name = key
    if "/healjson/" in path:
        return f"`{name}` (healjson/{path.rsplit('/healjson/', 1)[1]}:{line})"
    return f"`{name}`" if path == "~" else f"`{name}` ({Path(path).name}:{line})"


def profile_own(case: Case) -> dict[Key, tuple[float, float]]:
    """healjson's functions: (own µs per chunk, calls per chunk) over one no-HTTP stream."""
    fn = own_fns(case)[HEALJSON]  # warm: part 4 ran it
    gc.collect()
    profiler = cProfile.Profile()
    profiler.enable()
    fn()
    profiler.disable()
    stats = pstats.Stats(profiler).stats  # type: ignore[attr-defined]
    chunks = chunk_count(case)
    return {
        key: (tt * 1e6 / chunks, nc / chunks)
        for key, (_cc, nc, tt, _ct, _callers) in stats.items()
        if "/healjson/" in key[0] or key[0] == "~"
    }


def report_profile(lines: list[str], small: Case, large: Case) -> None:
    a, b = profile_own(small), profile_own(large)
    total_a = sum(v[0] for v in a.values())
    total_b = sum(v[0] for v in b.values())
    rows = sorted(b, key=lambda key: b[key][0], reverse=True)[:14]
    lines += table(
        [
            "function (own time, cProfile)",
            f"µs/chunk at {small.name}",
            f"µs/chunk at {large.name}",
            f"calls/chunk at {large.name}",
        ],
        [
            [
                _label(key),
                f"{a.get(key, (0.0, 0.0))[0]:.2f}",
                f"{b[key][0]:.2f}",
                f"{b[key][1]:.2f}",
            ]
            for key in rows
        ],
    )
    lines += [
        "",
        f"All profiled functions (healjson's and the builtins they call): {total_a:.1f} µs/chunk "
        f"at {small.name}, {total_b:.1f} µs/chunk at {large.name} (cProfile inflates many small "
        "calls: read the ranking and the growth, not the absolute figures).",
    ]


# --- report ------------------------------------------------------------------------------------


def environment() -> list[str]:
    return [
        "# healjson streaming benchmark",
        "",
        *stamp(),
        f"- healjson {version('healjson')}, openai {openai.__version__}, instructor "
        f"{version('instructor')}, pydantic {pydantic.VERSION}, pydantic_core "
        f"{pydantic_core.__version__}, httpx2 {version('httpx2')}",
        *machine(),
        "",
    ]


def verdict(ok: bool) -> str:
    return "met" if ok else "**MISSED**"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="smoke run; prints, does not write")
    parser.add_argument("--wide", action="store_true", help="only the wide-model first streams")
    args = parser.parse_args()
    if args.wide:
        return main_wide(args.quick)
    reps = QUICK if args.quick else FULL

    started = time.perf_counter()
    header = environment()
    lines = list(header)
    cases = make_cases()
    with ExitStack() as stack, tempfile.TemporaryDirectory() as tmp:
        for key, case in cases.items():
            reply = {"content": case.text, "chunk_chars": CHUNK_CHARS}
            server = ServerProcess([reply], Path(tmp), key.replace(" ", "_"))
            stack.callback(server.stop)
            case.url = server.base_url
        requests, alias_note = check_requests()

        part1 = {
            name: bench_case(cases[name], rounds, reps.side[name])
            for name, rounds in reps.rounds.items()
        }
        linear = bench_linear(cases, part1["500 items"], reps.linear_pairs)
        ttfi = bench_ttfi(cases, reps.ttfi)
        for case in cases.values():  # collected last: a smaller heap while parts 1-3 run
            collect_chunks(case)
    gc.collect()
    gc.freeze()  # ~60k chunk objects kept: out of the collector's walks (and the timings)
    own = {name: bench_own(cases[name], repeats) for name, repeats in reps.own.items()}

    lines += [
        "## 1. Client CPU per stream over HTTP",
        "",
        f"Each reply streamed in deltas of {CHUNK_CHARS} characters plus the role, finish and "
        "usage chunks, from a scripted server in a separate process (only the client process's "
        "CPU is counted). Rounds of one stream per contender, A and B back to back in every "
        "round (which goes first alternating), the four positions balanced over every 4 rounds "
        "(orders A B C D, D C B A, C D A B, B A D C), after one checked warm-up stream each "
        "(at 50 KB none: the first timed stream is checked); rounds (A and B in every round, "
        "C and D in the first ones, for the side by side figures): "
        + ", ".join(f"{name} {n} (C and D {reps.side[name]})" for name, n in reps.rounds.items())
        + f", C at 50 KB once ({C_ROUNDS_50KB} round: ~50 s of CPU a stream). "
        "*Paired ratio* = median over rounds of (contender / A in the same round). Request "
        "bodies (every contender sends `stream: true` and `stream_options.include_usage`, "
        f"checked on a recorded request): {'; '.join(requests)}. D: {alias_note}",
        "",
    ]
    b_ratios = {name: report_case(lines, cases[name], part1[name]) for name in reps.rounds}

    lines += [
        "## 2. Growth with the list's length (A and B)",
        "",
        "`list[Item]` replies of 60, 500 and 4,000 items (~8x steps); 500 items: part 1's "
        f"rounds; 60 and 4,000: {reps.linear_pairs[60]} and {reps.linear_pairs[4_000]} "
        "alternating A/B pairs. *Per 8x chunks*: the growth scaled to exactly 8x the chunks; "
        f"linear is 8x, the target ≤ {TARGET_PER_8X:g}x (as in `bench_linear.py`).",
        "",
    ]
    linear_info = report_linear(lines, cases, linear)
    lines.append("")

    lines += [
        "## 3. Time to the first complete item",
        "",
        "Wall clock from the request to the first item, the stream closed right after it; "
        f"{reps.ttfi} samples per contender and length, alternating. The floor (A's first "
        "content chunk) is the server's and the HTTP stack's latency: the scripted server "
        "builds every frame of its reply before it sends the first, so it grows with the "
        "length; the client's own time to the first item is the difference.",
        "",
    ]
    ttfi_medians = report_ttfi(lines, ttfi)
    lines.append("")

    lines += [
        "## 4. healjson's own stream reading, without HTTP",
        "",
        "The chunks A received (the SDK's `ChatCompletionChunk` objects) fed again through "
        '`healjson.Healer(M).stream(lambda messages, **kw: iter(chunks), "go")`: every '
        "snapshot (lists: every item) iterated and `.outcome` read; against the join + validate "
        "A runs after the SDK's work; alternating, CPU per stream / chunks. The SDK's own cost "
        "per chunk is A's in part 1 (part 2 for 60 and 4,000 items).",
        "",
    ]
    rows = []
    own_per_chunk: dict[str, float] = {}
    projected: dict[str, float] = {}
    for name, samples in own.items():
        case = cases[name]
        chunks = chunk_count(case)
        healjson_us = statistics.median(samples[HEALJSON]) / chunks / 1e3
        own_per_chunk[name] = healjson_us
        http = part1[name] if name in part1 else linear[int(name.split()[0])]
        sdk = statistics.median(cpu_of(http, BARE)) / chunks / 1e3
        extra = (statistics.median(samples[HEALJSON]) - statistics.median(samples[BARE])) / 1e3
        projected[name] = 1 + extra / chunks / sdk
        rows.append(
            [
                case.name,
                f"{chunks:,}",
                str(len(samples[HEALJSON])),
                f"**{healjson_us:,.1f} µs**",
                f"{statistics.median(samples[BARE]) / chunks / 1e3:,.2f} µs",
                f"{sdk:,.1f} µs",
                ms(statistics.median(samples[HEALJSON])),
                f"{projected[name]:.3f}x",
            ]
        )
    lines += table(
        [
            "reply",
            "chunks",
            "streams",
            "healjson CPU per chunk",
            "A's join + validate per chunk",
            "A over HTTP per chunk (SDK)",
            "healjson CPU per stream",
            "projects B / A",
        ],
        rows,
    )
    lines += [
        "",
        "*Projects B / A*: A's CPU per stream over HTTP plus (healjson's stream here - A's join "
        "+ validate here), over A's: what B would cost if healjson's side cost over HTTP what "
        "it costs here (over HTTP it runs between the SDK's chunks, with the caches full of the "
        "SDK's data, and usually costs more).",
    ]
    own_growth = []
    for small, large in itertools.pairwise(LIST_LENGTHS):
        s, lg = cases[f"{small} items"], cases[f"{large} items"]
        ratio = (own_per_chunk[f"{large} items"] * chunk_count(lg)) / (
            own_per_chunk[f"{small} items"] * chunk_count(s)
        )
        own_growth.append(per_8x(ratio, chunk_count(lg) / chunk_count(s)))
    lines += [
        "",
        "healjson's own CPU per stream grows "
        + ", ".join(
            f"{g:.2f}x per 8x chunks ({step})"
            for g, step in zip(own_growth, linear_info["steps"], strict=True)
        )
        + ".",
        "",
        "## 5. Where healjson's per-chunk time goes, by list length (cProfile, no HTTP)",
        "",
    ]
    report_profile(lines, cases["500 items"], cases["4000 items"])
    lines.append("")

    growth = linear_info["growth"]
    b_growth = [norm for _, norm in growth[HEALJSON]]
    a_growth = [norm for _, norm in growth[BARE]]
    linear_ok = all(g <= TARGET_PER_8X for g in b_growth)
    floor = ttfi_medians[BARE][0]
    over = {
        name: [m - f for m, f in zip(ttfi_medians[name][0], floor, strict=True)]
        for name in (HEALJSON, INSTR)
    }
    b_cpu = ttfi_medians[HEALJSON][1]
    ttfi_spread = max(b_cpu) / min(b_cpu)
    summary = [
        "## Targets",
        "",
        *(
            f"- {name}: B / A client CPU per stream **{ratio:.3f}x** (target ≤ {TARGET_RATIO}x) "
            f"— {verdict(ratio <= TARGET_RATIO)}; C / A "
            f"{statistics.median(ratios(part1[name], INSTR)):.2f}x, D / A "
            f"{statistics.median(ratios(part1[name], HEALED_INSTR)):.3f}x; healjson's own work "
            f"without HTTP projects B / A {projected[name]:.3f}x (part 4)"
            for name, ratio in b_ratios.items()
        ),
        "- linearity, CPU per stream at 60 → 500 → 4,000 items: B grows "
        + " then ".join(f"**{g:.2f}x**" for g in b_growth)
        + f" per 8x chunks (A: {' then '.join(f'{g:.2f}x' for g in a_growth)}; target ≤ "
        f"{TARGET_PER_8X:g}x, linear = 8x) — {verdict(linear_ok)}; healjson's own work without "
        f"HTTP: {' then '.join(f'{g:.2f}x' for g in own_growth)}",
        "- time to the first item at 60 / 500 / 4,000 items: B's client CPU to it "
        + " / ".join(f"**{ms(v)}**" for v in b_cpu)
        + f" (largest / smallest {ttfi_spread:.2f}x; target: independent of the length, here "
        f"≤ {TARGET_TTFI_SPREAD}x) — {verdict(ttfi_spread <= TARGET_TTFI_SPREAD)}; wall "
        + " / ".join(ms(v) for v in ttfi_medians[HEALJSON][0])
        + ", of which the server's floor (A's first chunk) "
        + " / ".join(ms(v) for v in floor)
        + ", B above it "
        + " / ".join(ms(v) for v in over[HEALJSON])
        + "; C wall "
        + " / ".join(ms(v) for v in ttfi_medians[INSTR][0])
        + " (above the floor "
        + " / ".join(ms(v) for v in over[INSTR])
        + ", CPU "
        + " / ".join(ms(v) for v in ttfi_medians[INSTR][1])
        + ")",
        "- healjson's own stream reading without HTTP: "
        + ", ".join(
            f"{cases[name].name} {value:.1f} µs/chunk" for name, value in own_per_chunk.items()
        ),
        f"- run time {time.perf_counter() - started:,.0f} s",
        "",
    ]
    lines[len(header) : len(header)] = summary
    if args.quick:
        print("\n".join(lines))
        return 0
    kept = kept_section(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else ""
    publish([*lines, "", kept] if kept else lines, RESULTS)
    return 0


def main_wide(quick: bool) -> int:
    """`--wide`: the wide-model section alone, spliced into `stream.md`."""
    section, _ = run_wide(1 if quick else 5, environment()[2:-1])
    if quick:
        print("\n".join(section))
        return 0
    report = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else ""
    RESULTS.write_text(spliced(report, section), encoding="utf-8")
    print("\n".join(section))
    print(f"written to {RESULTS.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
