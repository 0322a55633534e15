"""The wide-model mode of `bench_stream.py` (`--wide`): a model's first healed stream must cost
CPU linear in its fields.

Models of 100, 300 and 500 fields (types in rotation: `str`, `int`, `float`, `bool`,
`str | None`, `list[str]`), each answer the whole object as compact JSON, streamed in deltas of
5 characters by the scripted server in a separate process. A fresh model class per stream (its
caches cold, as for the first stream of a program), through `healjson.wrap(OpenAI())`
`create(response_model=M, stream=True)`, iterated to its end and `.outcome` read; the client
process's CPU is counted. The warm figure (the same class streamed again) is shown beside it.
Growth per 2x fields: the CPU ratio between two widths scaled to exactly 2x
(`ratio ** (ln 2 / ln width_ratio)`); target <= 2.2x (linear: 2x).
"""

from __future__ import annotations

import itertools
import json
import math
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import openai
from pydantic import BaseModel, create_model

import healjson
from bench_overhead import ServerProcess

WIDTHS = (100, 300, 500)
CHUNK_CHARS = 5
TARGET_PER_2X = 2.2
_TYPES: tuple[tuple[Any, Any], ...] = (
    (str, "a value"),
    (int, 42),
    (float, 2.5),
    (bool, True),
    (str | None, None),
    (list[str], ["x", "y"]),
)
_NAMES = itertools.count(1)


def wide_model(width: int) -> type[BaseModel]:
    """A new class of `width` fields (a new name each time: no cache knows it)."""
    fields: dict[str, Any] = {f"field_{i}": (_TYPES[i % len(_TYPES)][0], ...) for i in range(width)}
    model: type[BaseModel] = create_model(f"Wide{width}_{next(_NAMES)}", **fields)
    return model


def wide_answer(width: int) -> str:
    return json.dumps(
        {f"field_{i}": _TYPES[i % len(_TYPES)][1] for i in range(width)}, separators=(",", ":")
    )


def _stream(client: Any, model: type[BaseModel]) -> float:
    """Client CPU seconds of one healed stream of `model`, checked healed."""
    started = time.process_time()
    stream = client.chat.completions.create(
        model="bench", messages=[{"role": "user", "content": "go"}], response_model=model,
        stream=True,
    )  # fmt: skip
    for _ in stream:
        pass
    outcome = stream.outcome
    spent = time.process_time() - started
    if not outcome.ok:
        raise RuntimeError(f"the {model.__name__} stream did not heal: {outcome!r}")
    return spent


def run_wide(repeats: int, header: list[str]) -> tuple[list[str], bool]:
    """The section's lines (`header`: the run's date, command and machine lines) and whether
    the target is met."""
    first: dict[int, list[float]] = {}
    warm: dict[int, list[float]] = {}
    sizes: dict[int, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for width in WIDTHS:
            text = wide_answer(width)
            sizes[width] = len(text)
            reply = {"content": text, "chunk_chars": CHUNK_CHARS}
            server = ServerProcess([reply], Path(tmp), f"wide_{width}")
            try:
                with openai.OpenAI(
                    base_url=server.base_url, api_key="sk-bench", max_retries=0
                ) as sdk:
                    client = healjson.wrap(sdk)
                    _stream(client, wide_model(width))  # the code paths warm, once
                    for _ in range(repeats):
                        model = wide_model(width)
                        first.setdefault(width, []).append(_stream(client, model))
                        warm.setdefault(width, []).append(_stream(client, model))
            finally:
                server.stop()
    medians = {width: statistics.median(first[width]) for width in WIDTHS}
    growth = [
        (medians[b] / medians[a]) ** (math.log(2) / math.log(b / a))
        for a, b in itertools.pairwise(WIDTHS)
    ]
    met = all(g <= TARGET_PER_2X for g in growth)
    rows = [
        f"| {width} | {sizes[width]:,} | {math.ceil(sizes[width] / CHUNK_CHARS):,} | "
        f"{medians[width] * 1000:,.0f} ms ({min(first[width]) * 1000:,.0f} ms) | "
        f"{statistics.median(warm[width]) * 1000:,.0f} ms |"
        for width in WIDTHS
    ]
    lines = [
        "## Wide models: the first stream",
        "",
        *header,
        f"- models of {', '.join(map(str, WIDTHS))} fields (str, int, float, bool, str | None, "
        f"list[str] in rotation), the whole object streamed in deltas of {CHUNK_CHARS} "
        "characters by the scripted server in a separate process; a fresh model class per "
        f"stream (cold caches, as a program's first stream of it); {repeats} streams per width, "
        "client CPU per stream",
        "- growth per 2x fields (CPU ratio scaled to exactly 2x): "
        + " then ".join(f"**{g:.2f}x**" for g in growth)
        + f" (target ≤ {TARGET_PER_2X}x, linear = 2x) — {'met' if met else 'NOT met'}",
        "",
        "| fields | answer chars | chunks | first stream, client CPU median (min) | "
        "the same class again, median |",
        "|---|---|---|---|---|",
        *rows,
        "",
    ]
    return lines, met


WIDE_START = "<!-- wide models: written by bench_stream.py --wide -->"
WIDE_END = "<!-- end of wide models -->"


def spliced(report: str, section: list[str]) -> str:
    """`report` with its wide-model section replaced by `section` (appended when absent)."""
    block = "\n".join([WIDE_START, *section, WIDE_END])
    if WIDE_START in report and WIDE_END in report:
        head, rest = report.split(WIDE_START, 1)
        tail = rest.split(WIDE_END, 1)[1]
        return head + block + tail
    return report.rstrip() + "\n\n" + block + "\n"


def kept_section(report: str) -> str:
    """The wide-model section of `report` as written (empty when none)."""
    if WIDE_START not in report or WIDE_END not in report:
        return ""
    return WIDE_START + report.split(WIDE_START, 1)[1].split(WIDE_END, 1)[0] + WIDE_END
