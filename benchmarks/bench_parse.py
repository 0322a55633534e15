"""Benchmark healjson's L1 (`parse`) and L1+L2 (`validate`) against pydantic and json-repair.

Run from the repository root:

    .venv/bin/python benchmarks/bench_parse.py

Part A times already-valid JSON of about 1 KB, 10 KB, 100 KB and 1 MB (a pydantic model with a
list of nested items, generated deterministically) against `Model.model_validate_json`.
Part B times the corpus inputs (`tests/corpus/*.jsonl`) against `json_repair.repair_json`.

Method: every contender is warmed up, then timed in batches with `time.perf_counter_ns`; the
contenders take turns within each round (the order rotates and reverses from round to round, to
cancel drift) and the reported figure is the median over rounds. The garbage collector stays on
(as in production) but `gc.collect()` runs before every batch so that no contender pays for
another's garbage. Results are printed and written to `benchmarks/results/parse.md`.
"""

from __future__ import annotations

import contextlib
import gc
import json
import math
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any, Literal

import json_repair
import pydantic
import pydantic_core
from pydantic import BaseModel, TypeAdapter

import healjson
from _machine import processor, publish, stamp, table

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "parse.md"
CORPUS_FILES = (
    ROOT / "tests" / "corpus" / "json_repair_dev.jsonl",
    ROOT / "tests" / "corpus" / "baml_dev.jsonl",
)

TARGET_PARSE_RATIO = 1.5  # issue target: parse on valid JSON within 1.5x model_validate_json
SIZES = (("1 KB", 1_000), ("10 KB", 10_000), ("100 KB", 100_000), ("1 MB", 1_000_000))
MIN_BATCH_NS = 20_000_000  # each timed batch runs at least ~20 ms
ROUNDS_VALID = 25
ROUNDS_CORPUS = 11
PER_INPUT_REPEATS = 5
JSON_REPAIR_LIMIT_S = 5.0  # skip json_repair at a size where one call takes longer than this
SIZE_BUCKETS = ((0, 1_000, "< 1 KB"), (1_000, 5_000, "1-5 KB"), (5_000, 10**12, ">= 5 KB"))


# --- the model and the deterministic valid JSON ------------------------------------------------


class Dimensions(BaseModel):
    width_cm: float
    height_cm: float
    depth_cm: float


class Item(BaseModel):
    id: int
    sku: str
    name: str
    price: float
    in_stock: bool
    status: Literal["active", "discontinued", "preorder"]
    tags: list[str]
    dimensions: Dimensions
    note: str | None = None


class Catalog(BaseModel):
    title: str
    currency: str
    items: list[Item]


_WORDS = (
    "alpha",
    "bravo",
    "charlie",
    "delta",
    "echo",
    "foxtrot",
    "golf",
    "hotel",
    "india",
    "juliet",
    "kilo",
    "lima",
    "mike",
    "november",
    "oscar",
    "papa",
    "quebec",
    "romeo",
    "sierra",
    "tango",
    "uniform",
    "victor",
    "whiskey",
    "xray",
    "yankee",
    "zulu",
)


def make_catalog_json(min_chars: int, seed: int = 1234) -> str:
    """A `Catalog` as JSON text (json.dumps defaults), just at or above `min_chars` long."""
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    size = 60  # the envelope: title, currency, brackets
    while size < min_chars:
        item = {
            "id": len(items),
            "sku": f"SKU-{rng.randrange(10**6):06d}",
            "name": " ".join(rng.choices(_WORDS, k=3)).title(),
            "price": round(rng.uniform(1, 500), 2),
            "in_stock": rng.random() < 0.7,
            "status": rng.choice(["active", "discontinued", "preorder"]),
            "tags": rng.choices(_WORDS, k=rng.randint(1, 4)),
            "dimensions": {
                "width_cm": round(rng.uniform(1, 100), 1),
                "height_cm": round(rng.uniform(1, 100), 1),
                "depth_cm": round(rng.uniform(1, 100), 1),
            },
            "note": None if rng.random() < 0.5 else " ".join(rng.choices(_WORDS, k=8)),
        }
        items.append(item)
        size += len(json.dumps(item)) + 2
    return json.dumps({"title": "Spring catalogue", "currency": "EUR", "items": items})


# --- timing ------------------------------------------------------------------------------------


def _rotations(names: Sequence[str], rounds: int) -> list[list[str]]:
    """A different order per round: rotate, and reverse every other round."""
    orders = []
    for r in range(rounds):
        k = r % len(names)
        order = [*names[k:], *names[:k]]
        if r % 2:
            order.reverse()
        orders.append(order)
    return orders


def time_contenders(
    contenders: dict[str, Callable[[], Any]], rounds: int, min_batch_ns: int = MIN_BATCH_NS
) -> dict[str, list[float]]:
    """Per-call nanoseconds for each contender, one sample per round."""
    loops: dict[str, int] = {}
    for name, fn in contenders.items():
        start = time.perf_counter_ns()
        calls = 0
        while calls < 3 or time.perf_counter_ns() - start < 50_000_000:  # warm-up: >= 50 ms
            fn()
            calls += 1
        per_call = (time.perf_counter_ns() - start) / calls
        loops[name] = max(1, math.ceil(min_batch_ns / max(per_call, 1.0)))
    samples: dict[str, list[float]] = {name: [] for name in contenders}
    for order in _rotations(list(contenders), rounds):
        for name in order:
            fn, n = contenders[name], loops[name]
            gc.collect()
            start = time.perf_counter_ns()
            for _ in range(n):
                fn()
            samples[name].append((time.perf_counter_ns() - start) / n)
    return samples


def fmt_ns(ns: float) -> str:
    if ns >= 1e9:
        return f"{ns / 1e9:.2f} s"
    if ns >= 1e6:
        return f"{ns / 1e6:.2f} ms"
    return f"{ns / 1e3:.1f} µs"


# --- part A: valid JSON ------------------------------------------------------------------------

BASELINE = "`Catalog.model_validate_json(text)` (baseline)"
PARSE_PLAIN = "`healjson.parse(text)`"
PARSE_MODEL = "`healjson.parse(text, Catalog)`"
TARGETED = (PARSE_PLAIN, PARSE_MODEL)


def check_valid(text: str) -> None:
    """Every contender must take its happy path on this text, or the timing means nothing."""
    expected = pydantic_core.from_json(text)
    plain = healjson.parse(text)
    typed = healjson.parse(text, Catalog)
    outcome = healjson.validate(text, Catalog)
    for result in (plain, typed):
        assert result.ok, result.error
        assert not result.flags, result.flags
        assert result.value == expected
    assert outcome.ok, outcome
    assert outcome.value == Catalog.model_validate_json(text)
    assert json_repair.loads(text) == expected


def bench_valid(lines: list[str]) -> list[tuple[str, str, float]]:
    """Part A. Returns (size, contender, ratio) for the targeted contenders."""
    adapter = TypeAdapter(Catalog)
    verdicts: list[tuple[str, str, float]] = []
    lines += [
        "## A. Already-valid JSON",
        "",
        "Per-call median over "
        f"{ROUNDS_VALID} rounds (min in brackets). *Ratio of medians* = median / baseline "
        "median; *paired ratio* = median over rounds of (this round's time / the baseline's time "
        "in the same round), which cancels drift between rounds and decides the verdict. "
        "`TypeAdapter.validate_json(strict=True)` is a reference: it is the first step of "
        "healjson's typed fast path. `json_repair.loads` tries `json.loads` first, so on valid "
        "input it runs at stdlib-json speed.",
        "",
    ]
    for label, chars in SIZES:
        text = make_catalog_json(chars)
        check_valid(text)
        contenders: dict[str, Callable[[], Any]] = {
            BASELINE: lambda t=text: Catalog.model_validate_json(t),
            "`pydantic_core.from_json(text)`": lambda t=text: pydantic_core.from_json(t),
            PARSE_PLAIN: lambda t=text: healjson.parse(t),
            PARSE_MODEL: lambda t=text: healjson.parse(t, Catalog),
            "`healjson.validate(text, Catalog)`": lambda t=text: healjson.validate(t, Catalog),
            "`TypeAdapter(Catalog).validate_json(text, strict=True)` (reference)": (
                lambda t=text: adapter.validate_json(t, strict=True)
            ),
        }
        start = time.perf_counter()
        json_repair.loads(text)
        jr_single = time.perf_counter() - start
        skipped = jr_single > JSON_REPAIR_LIMIT_S
        if not skipped:
            contenders["`json_repair.loads(text)`"] = lambda t=text: json_repair.loads(t)
        samples = time_contenders(contenders, ROUNDS_VALID)
        base = statistics.median(samples[BASELINE])
        rows = []
        for name, values in samples.items():
            median = statistics.median(values)
            paired = statistics.median(
                v / b for v, b in zip(values, samples[BASELINE], strict=True)
            )
            verdict = ""
            if name in TARGETED:
                verdicts.append((label, name, paired))
                verdict = "met" if paired <= TARGET_PARSE_RATIO else "**MISSED**"
            rows.append(
                [
                    name,
                    f"{fmt_ns(median)} ({fmt_ns(min(values))})",
                    f"{len(text.encode()) / median * 1e3:.1f}",  # bytes per ns -> MB/s
                    f"{median / base:.2f}x",
                    f"{paired:.2f}x",
                    verdict,
                ]
            )
        n_items = text.count('"id": ')
        lines += [f"### {label} ({len(text):,} characters, {n_items:,} items)", ""]
        lines += table(
            [
                "contender",
                "median (min) per call",
                "MB/s (median)",
                "ratio of medians",
                "paired ratio",
                "≤ 1.5x?",
            ],
            rows,
        )
        if skipped:
            lines += ["", f"json_repair skipped at this size: one call took {jr_single:.1f} s."]
        lines.append("")
        print(f"  part A: {label} done", file=sys.stderr)
    return verdicts


# --- part B: the corpus ------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    id: str
    text: str
    strict: bool


def load_corpus() -> list[Case]:
    cases = []
    for path in CORPUS_FILES:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                row = json.loads(line)
                if isinstance(row.get("input"), str):
                    cases.append(Case(row["id"], row["input"], bool(row["input_is_strict_json"])))
    return cases


def run_healjson(text: str) -> Any:
    return healjson.parse(text)


def run_json_repair(text: str) -> Any:
    return json_repair.repair_json(text, return_objects=True)


def run_all(fn: Callable[[str], Any], texts: Sequence[str]) -> int:
    """Call `fn` on every text; return how many raised."""
    raised = 0
    for text in texts:
        try:
            fn(text)
        except Exception:
            raised += 1
    return raised


def per_input(cases: Sequence[Case]) -> list[tuple[Case, float, float]]:
    """(case, healjson median ns, json_repair median ns), the two calls interleaved."""
    out = []
    for case in cases:
        hj: list[float] = []
        jr: list[float] = []
        for rep in range(PER_INPUT_REPEATS):
            pair = [(run_healjson, hj), (run_json_repair, jr)]
            if rep % 2:
                pair.reverse()
            for fn, sink in pair:
                start = time.perf_counter_ns()
                with contextlib.suppress(Exception):
                    fn(case.text)
                sink.append(time.perf_counter_ns() - start)
        out.append((case, statistics.median(hj), statistics.median(jr)))
    return out


def bench_corpus_subset(lines: list[str], title: str, cases: Sequence[Case]) -> float:
    """Times one subset of the corpus; returns healjson total / json_repair total."""
    texts = [case.text for case in cases]
    n_bytes = sum(len(t.encode("utf-8")) for t in texts)
    raised = {
        "healjson": run_all(run_healjson, texts),
        "json_repair": run_all(run_json_repair, texts),
    }
    contenders = {
        "healjson": lambda: run_all(run_healjson, texts),
        "json_repair": lambda: run_all(run_json_repair, texts),
    }
    samples = time_contenders(contenders, ROUNDS_CORPUS, min_batch_ns=0)
    med = {name: statistics.median(values) for name, values in samples.items()}
    ratio = med["healjson"] / med["json_repair"]
    paired = statistics.median(
        h / j for h, j in zip(samples["healjson"], samples["json_repair"], strict=True)
    )
    rows = [
        [
            "`healjson.parse(s)`",
            f"{fmt_ns(med['healjson'])} ({fmt_ns(min(samples['healjson']))})",
            f"{n_bytes / (med['healjson'] / 1e9) / 1e6:.2f}",
            f"{med['healjson'] / len(texts) / 1e3:.1f} µs",
            str(raised["healjson"]),
        ],
        [
            "`json_repair.repair_json(s, return_objects=True)`",
            f"{fmt_ns(med['json_repair'])} ({fmt_ns(min(samples['json_repair']))})",
            f"{n_bytes / (med['json_repair'] / 1e9) / 1e6:.2f}",
            f"{med['json_repair'] / len(texts) / 1e3:.1f} µs",
            str(raised["json_repair"]),
        ],
    ]
    lines += [
        f"### {title}: {len(texts)} inputs, {n_bytes:,} bytes",
        "",
        f"Total over all inputs, median of {ROUNDS_CORPUS} rounds (min in brackets).",
        "",
    ]
    lines += table(["contender", "total", "MB/s", "mean per input", "raised"], rows)
    lines += [
        "",
        f"healjson / json_repair (totals): **{ratio:.2f}x** (ratio of medians), "
        f"{paired:.2f}x (paired per round)",
        "",
    ]

    detail = per_input(cases)
    faster = sum(1 for _, h, j in detail if h < j)
    ratios = sorted(h / j for _, h, j in detail)
    lines += [
        f"Per input (median of {PER_INPUT_REPEATS} interleaved calls each): healjson faster on "
        f"{faster} of {len(detail)}; median per-input ratio healjson / json_repair "
        f"{statistics.median(ratios):.2f}x (p10 {ratios[len(ratios) // 10]:.2f}x, "
        f"p90 {ratios[len(ratios) * 9 // 10]:.2f}x).",
        "",
    ]
    bucket_rows = []
    for low, high, name in SIZE_BUCKETS:
        inside = [(h, j) for case, h, j in detail if low <= len(case.text) < high]
        if not inside:
            continue
        h_total = sum(h for h, _ in inside)
        j_total = sum(j for _, j in inside)
        bucket_rows.append(
            [
                name,
                str(len(inside)),
                fmt_ns(h_total),
                fmt_ns(j_total),
                f"{h_total / j_total:.2f}x",
            ]
        )
    lines += table(
        ["input size (chars)", "inputs", "healjson (sum)", "json_repair (sum)", "ratio"],
        bucket_rows,
    )
    lines.append("")
    worst = sorted(detail, key=lambda d: d[1] - d[2], reverse=True)[:6]
    slowest_jr = sorted(detail, key=lambda d: d[2], reverse=True)[:4]
    rows = [
        [f"`{case.id}`", f"{len(case.text):,}", fmt_ns(h), fmt_ns(j), f"{h / j:.2f}x"]
        for case, h, j in worst
    ]
    lines += ["Where healjson loses the most time to json_repair:", ""]
    lines += table(["input", "chars", "healjson", "json_repair", "ratio"], rows)
    rows = [
        [f"`{case.id}`", f"{len(case.text):,}", fmt_ns(h), fmt_ns(j), f"{h / j:.2f}x"]
        for case, h, j in slowest_jr
    ]
    lines += ["", "The inputs json_repair is slowest on:", ""]
    lines += table(["input", "chars", "healjson", "json_repair", "ratio"], rows)
    lines.append("")
    print(f"  part B: {title} done", file=sys.stderr)
    return ratio


def bench_corpus(lines: list[str]) -> tuple[float, float]:
    cases = load_corpus()
    malformed = [c for c in cases if not c.strict]
    strict = [c for c in cases if c.strict]
    lines += [
        "## B. Corpus inputs (`tests/corpus/json_repair_dev.jsonl` + `baml_dev.jsonl`)",
        "",
        "Every `input` string, split by `input_is_strict_json`. healjson runs without a schema; "
        "exceptions are caught (and counted) for both.",
        "",
    ]
    bad = bench_corpus_subset(lines, "Malformed inputs (not strict JSON)", malformed)
    good = bench_corpus_subset(lines, "Strict-JSON inputs", strict)
    return bad, good


# --- report ------------------------------------------------------------------------------------


def environment() -> list[str]:
    return [
        "# healjson parse benchmark",
        "",
        *stamp(),
        f"- pydantic {pydantic.VERSION}, pydantic_core {pydantic_core.__version__}, "
        f"json_repair {version('json_repair')}, healjson {version('healjson')}",
        f"- platform: {platform.platform()}",
        f"- processor: {processor()} ({os.cpu_count()} logical CPUs)",
        "",
    ]


def main() -> int:
    header = environment()
    lines = list(header)
    verdicts = bench_valid(lines)
    bad_ratio, good_ratio = bench_corpus(lines)
    summary = ["## Targets", ""]
    for label, name, ratio in verdicts:
        state = "met" if ratio <= TARGET_PARSE_RATIO else "MISSED"
        summary.append(
            f"- {name} on valid JSON, {label}: {ratio:.2f}x `model_validate_json` (paired) "
            f"— {state}"
        )
    state = "met" if bad_ratio < 1 else "MISSED"
    summary += [
        f"- malformed corpus, total time healjson / json_repair: {bad_ratio:.2f}x — {state}",
        f"- (strict-JSON corpus inputs, for reference: {good_ratio:.2f}x)",
        "",
    ]
    lines[len(header) : len(header)] = summary
    publish(lines, RESULTS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
