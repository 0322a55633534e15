"""The happy path of a JSON Schema target against a pydantic model's, with and without the `fast`
extra (`jsonschema-rs` says "valid"; without it `jsonschema` validates every call).

Run from the repository root:

    .venv/bin/python benchmarks/bench_schema_targets.py

Three contenders on the same valid order (3, 24 and 192 items: 8x steps): `validate(text, Order)`
(a pydantic model), `validate(text, schema)` with the schema dict `Order.model_json_schema()`
gives (the same rules), and the same with `jsonschema` alone (a target built while
`jsonschema_rs` cannot be imported, the schema told apart by a `$comment`). Each round runs every
contender in turn for a batch of calls of about 20 ms; the figure is CPU time per call
(`time.process_time`: the machine's load costs wall time, less so CPU), median and minimum over
the rounds; growth per 8x is the ratio of medians from one size to the next.

Results are printed and written to `benchmarks/results/schema_targets.md`.
"""

from __future__ import annotations

import argparse
import itertools
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

sys.path.insert(0, str(Path(__file__).resolve().parent))

import healjson
from _machine import machine, publish, stamp, table
from healjson import Healed
from healjson._core.target.target import clear_targets, target_for

RESULTS = Path(__file__).resolve().parent / "results" / "schema_targets.md"
SIZES = (3, 24, 192)
BATCH_SECONDS = 0.02


class Item(BaseModel):
    sku: str = Field(pattern=r"^[A-Z]{3}-\d+$")
    qty: int = Field(ge=1)
    price: float = Field(ge=0)
    note: str | None = None


class Order(BaseModel):
    id: str = Field(min_length=1)
    status: Literal["open", "paid", "shipped"]
    items: list[Item] = Field(min_length=1)


SCHEMA: dict[str, Any] = Order.model_json_schema()
SLOW_SCHEMA: dict[str, Any] = {**SCHEMA, "$comment": "jsonschema alone"}


def order_text(items: int) -> str:
    lines = [{"sku": f"ABC-{i}", "qty": 1 + i % 5, "price": 9.5 + i} for i in range(items)]
    return json.dumps({"id": "o-1", "status": "open", "items": lines})


def contenders(text: str) -> dict[str, Callable[[], object]]:
    return {
        "model": lambda: healjson.validate(text, Order),
        "schema, fast": lambda: healjson.validate(text, SCHEMA),
        "schema, jsonschema alone": lambda: healjson.validate(text, SLOW_SCHEMA),
    }


def build_targets() -> None:
    """The fast target for SCHEMA; SLOW_SCHEMA's built while `jsonschema_rs` is not importable."""
    clear_targets()
    assert target_for(SCHEMA).adapter._fast is not None, "jsonschema-rs is not installed"
    saved = sys.modules.get("jsonschema_rs")
    sys.modules["jsonschema_rs"] = None  # type: ignore[assignment]
    try:
        assert target_for(SLOW_SCHEMA).adapter._fast is None
    finally:
        if saved is None:
            del sys.modules["jsonschema_rs"]
        else:
            sys.modules["jsonschema_rs"] = saved


def batch_size(call: Callable[[], object]) -> int:
    for _ in range(3):
        call()
    started = time.process_time()
    runs = 0
    while time.process_time() - started < BATCH_SECONDS / 2:
        call()
        runs += 1
    return max(1, runs * 2)


def per_call(call: Callable[[], object], calls: int) -> float:
    started = time.process_time()
    for _ in range(calls):
        call()
    return (time.process_time() - started) / calls


def micros(seconds: float) -> str:
    return f"{seconds * 1e6:,.1f} µs" if seconds < 0.001 else f"{seconds * 1e3:,.2f} ms"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=41)
    args = parser.parse_args()
    started = time.perf_counter()
    build_targets()
    medians: dict[tuple[str, int], float] = {}
    rows = []
    for size in SIZES:
        text = order_text(size)
        runs = contenders(text)
        for name, call in runs.items():
            assert isinstance(call(), Healed), name
        batches = {name: batch_size(call) for name, call in runs.items()}
        samples: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(args.rounds):
            for name, call in runs.items():
                samples[name].append(per_call(call, batches[name]))
        for name, times in samples.items():
            medians[name, size] = statistics.median(times)
            rows.append(
                [
                    name,
                    f"{size} ({len(text):,} chars)",
                    micros(medians[name, size]),
                    micros(min(times)),
                    f"{medians[name, size] / medians['model', size]:.1f}x",
                ]
            )
        print(f"{size} items done", file=sys.stderr)
    growth_rows = [
        [
            name,
            *(
                f"{medians[name, big] / medians[name, small]:.2f}x"
                for small, big in itertools.pairwise(SIZES)
            ),
        ]
        for name in contenders("")
    ]
    lines = [
        "# JSON Schema targets: the happy path",
        "",
        *stamp(),
        *machine(),
        f"- method: CPU time per call (`time.process_time`), batches of ~20 ms, {args.rounds} "
        "rounds with the contenders alternating; median and minimum over the rounds",
        f"- run time: {time.perf_counter() - started:.0f} s",
        "",
        "## CPU per `validate(text, target)` call",
        "",
        *table(["target", "items", "median", "min", "vs model"], rows),
        "",
        "## Growth per 8x items (ratio of medians)",
        "",
        *table(
            ["target", *(f"{a} -> {b}" for a, b in itertools.pairwise(SIZES))],
            growth_rows,
        ),
    ]
    publish(lines, RESULTS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
