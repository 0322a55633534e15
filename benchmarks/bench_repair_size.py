"""Benchmark the size of a repair request against the size of the failed answer.

Run from the repository root:

    .venv/bin/python benchmarks/bench_repair_size.py

For answers of 1 KB to 20 MB, one `Healer.run` (default policy) is driven with a
`healjson.testing.ScriptedModel` whose first reply fails and whose second is valid; the size of
the second request — the repair — is read from the model's recorded calls. Three kinds of failed
answer:

- *no JSON*: random text (base64 of random bytes, so nothing in it repeats): a syntax repair;
- *schema error*: a JSON object whose `id` is that random text instead of an integer: a schema
  repair, whose diagnostic shows the offending value;
- *repetition loop*: `{"id": 1, "summary": "` followed by one 22-character passage repeated up
  to the size, cut by the token limit (`finish_reason="length"`): a truncation repair.

Sizes are characters of message content (what `MAX_REPAIR_EXTRA_CHARS` in
`healjson._core.repair.prompt` bounds): the whole request, what the repair adds to the
original messages, and the assistant turn that quotes the answer back. Time is one
`Healer.run` (both calls; the median of a few runs), for reference only. Results are printed
and written to
`benchmarks/results/repair_size.md`.
"""

from __future__ import annotations

import base64
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pydantic
from pydantic import BaseModel

from _machine import processor, publish, stamp, table
from healjson import Healer, Reply
from healjson._core.repair.prompt import MAX_REPAIR_EXTRA_CHARS
from healjson._core.repair.quote import MAX_ANSWER_CHARS
from healjson.testing import ScriptedModel

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "repair_size.md"
SIZES = (
    ("1 KB", 1_000),
    ("4 KB", 4_000),
    ("16 KB", 16_000),
    ("64 KB", 64_000),
    ("256 KB", 256_000),
    ("1 MB", 1_000_000),
    ("4 MB", 4_000_000),
    ("20 MB", 20_000_000),
)
RUNS = 3
GOOD = '{"id": 1, "summary": "printer jammed"}'
ORIGINAL = (
    {"role": "system", "content": "You turn support emails into tickets."},
    {"role": "user", "content": "The printer on floor 3 is jammed again. Please open a ticket."},
)
PASSAGE = "I am stuck in a loop. "


class Ticket(BaseModel):
    id: int
    summary: str


def random_text(size: int, seed: int) -> str:
    """`size` characters in which nothing repeats (base64 of seeded random bytes)."""
    data = random.Random(seed).randbytes(size * 3 // 4 + 3)
    return base64.b64encode(data).decode()[:size]


def no_json(size: int) -> Reply:
    return Reply(random_text(size, size), "stop")


def schema_error(size: int) -> Reply:
    head, tail = '{"id": "', '", "summary": "s"}'
    return Reply(head + random_text(max(size - len(head) - len(tail), 1), size) + tail, "stop")


def repetition_loop(size: int) -> Reply:
    head = '{"id": 1, "summary": "'
    body = PASSAGE * ((size - len(head)) // len(PASSAGE) + 1)
    return Reply((head + body)[:size], "length")


KINDS: tuple[tuple[str, Callable[[int], Reply]], ...] = (
    ("no JSON", no_json),
    ("schema error", schema_error),
    ("repetition loop", repetition_loop),
)


def chars(messages: Sequence[Mapping[str, Any]]) -> int:
    return sum(len(str(message.get("content") or "")) for message in messages)


def measure(reply: Reply) -> tuple[int, int, float]:
    """(repair request chars, assistant turn chars, median seconds per run)."""
    seconds: list[float] = []
    request = quoted = 0
    for _ in range(RUNS):
        model = ScriptedModel([reply, GOOD])
        started = time.perf_counter()
        outcome = Healer(Ticket).run(model, list(ORIGINAL))
        seconds.append(time.perf_counter() - started)
        if not outcome.ok or len(model.calls) != 2:
            raise SystemExit(f"unexpected outcome for a {len(reply.content or '')}-char answer")
        repair = model.calls[1].messages
        request = chars(repair)
        quoted = sum(len(str(m["content"])) for m in repair if m.get("role") == "assistant")
    return request, quoted, statistics.median(seconds)


def main() -> int:
    started = time.perf_counter()
    original = chars(ORIGINAL)
    lines = [
        "# healjson repair request size benchmark",
        "",
        *stamp(),
        f"- healjson {version('healjson')}, pydantic {pydantic.VERSION}",
        f"- platform: {platform.platform()}; processor: {processor()}",
        "",
        "## Result",
        "",
    ]
    summary_at = len(lines)
    lines += [
        "",
        "## Repair request size against answer size",
        "",
        f"One `Healer(Ticket).run` per cell: a failed answer of the given size, then a valid one. "
        f"*Request* = characters of message content in the repair request; *added* = request "
        f"minus the {original} characters of the original messages (bound: "
        f"`MAX_REPAIR_EXTRA_CHARS` = {MAX_REPAIR_EXTRA_CHARS:,}); *quoted* = the assistant turn "
        f"(answers up to `MAX_ANSWER_CHARS` = {MAX_ANSWER_CHARS:,} are quoted whole). Time: median "
        f"of {RUNS} runs of both calls, for reference.",
        "",
    ]
    worst = 0
    flat: dict[str, list[int]] = {}
    for kind, build in KINDS:
        rows: list[list[str]] = []
        for label, size in SIZES:
            reply = build(size)
            request, quoted, seconds = measure(reply)
            added = request - original
            worst = max(worst, added)
            if size > MAX_ANSWER_CHARS:
                flat.setdefault(kind, []).append(request)
            rows.append(
                [
                    label,
                    f"{len(reply.content or ''):,}",
                    f"{request:,}",
                    f"{added:,}",
                    f"{quoted:,}",
                    f"{seconds * 1000:,.1f} ms",
                ]
            )
            print(f"{kind}, {label}: request {request:,} chars", file=sys.stderr)
        lines += [f"### {kind}", ""]
        lines += table(
            ["answer", "answer chars", "request chars", "added chars", "quoted chars", "time"],
            rows,
        )
        lines.append("")
    summary = [
        f"- largest addition to the original messages over every size and kind: {worst:,} "
        f"characters (bound {MAX_REPAIR_EXTRA_CHARS:,}) — "
        + ("met" if worst <= MAX_REPAIR_EXTRA_CHARS else "**missed**"),
    ]
    past = [label for label, size in SIZES if size > MAX_ANSWER_CHARS]
    for kind, sizes in flat.items():
        summary.append(
            f"- {kind}, answers past the cap ({past[0]} to {past[-1]}): request {min(sizes):,} "
            f"to {max(sizes):,} characters (flat)"
        )
    summary.append(f"- run time: {time.perf_counter() - started:.0f} s")
    lines[summary_at:summary_at] = summary
    publish(lines, RESULTS)
    return 0 if worst <= MAX_REPAIR_EXTRA_CHARS else 1


if __name__ == "__main__":
    sys.exit(main())
