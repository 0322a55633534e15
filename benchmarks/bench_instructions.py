"""Count the instructions healjson adds to a call: the overhead figures without noise.

Run from the repository root (needs valgrind):

    .venv/bin/python benchmarks/bench_instructions.py [--suite happy|streams|all]

`bench_overhead.py` and `bench_responses.py` time CPU per call, which on a shared VM moves with
the machine's phase (the same code's recorded ratio has varied from 1.04x to 1.10x between
runs). Counting instructions does not: valgrind's callgrind counts every user-space instruction
the client process executes, the same count for the same code and inputs whatever else the
machine does. It counts no kernel time, and no cache misses or stalls, so it is the cost of the
work itself: A and B make the same system calls per call, and their difference in time beyond
the instruction difference is the cost of running healjson's code with caches the SDK's call
has just filled.

One client process per suite runs under callgrind (the scripted servers in separate processes,
not counted), with the hash seed fixed. After a warm-up of every contender it runs segments of
calls, each segment one contender's, the contenders' order alternating per round; a segment
starts and ends with `os.getppid()`, and callgrind (`--dump-before=getppid`) writes the count
of each segment apart. A contender's count per call is the sum of its segments over its calls
(the spread of its segments is printed: a count moves by a few hundred instructions between
segments, with the HTTP stack's reads and the cyclic collector). Suites:

- `happy` (`results/instructions.md`): the happy path over HTTP, chat (A: the bare `OpenAI`
  client + `model_validate_json`; B: `healjson.wrap(OpenAI())` with `response_model`, as in
  `bench_overhead.py` part 1c) and Responses (A: `responses.create` with the strict
  `text.format` + `model_validate_json`; B: `responses.create(response_model=Order)`, as in
  `bench_responses.py`); and both again against stub clients returning a prebuilt
  `ChatCompletion` / `Response` (no SDK request, no HTTP): healjson's own instructions per call.
- `streams` (`results/instructions_streams.md`): streamed Responses answers of `list[Item]`
  (STREAM_SIZES items, 5-character deltas; one client process per length, side by side): A the
  bare SDK stream, the deltas joined, `validate_json`; B the healed stream, `.items()`
  iterated, `.outcome`; growth per 8x length.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import publish, stamp, table
from bench_overhead import REPLY, ServerProcess

BENCH = Path(__file__).resolve().parent
RESULTS = BENCH / "results" / "instructions.md"
STREAM_RESULTS = BENCH / "results" / "instructions_streams.md"
# the happy path: (warm-up calls, rounds, calls per segment)
HTTP = (10, 3, 20)
STUB = (100, 3, 500)
# streamed answers: list lengths (8x apart) and (rounds, streams per segment) for each, each
# length in its own client process (side by side), after one warm-up stream of the smallest
STREAM_SIZES = {8: (3, 2), 64: (2, 1), 512: (1, 1)}
CHILD = """
import sys
sys.path.insert(0, {bench!r})
import bench_instructions
bench_instructions.child(sys.argv[1])
"""

Plan = list[tuple[str, str, int]]  # segments: (contender kind, server URL, calls)


def contender(kind: str, url: str) -> Callable[[], Any]:
    """One call of contender `kind` against the scripted server at `url` (in the child)."""
    import bench_overhead
    import bench_responses

    if kind == "chat-A":
        return bench_overhead.bare_call(bench_overhead.sync_client(url))
    if kind == "chat-B":
        return bench_overhead.healjson_call(bench_overhead.sync_client(url))
    if kind in ("responses-A", "responses-B"):
        return bench_responses.happy_contenders(url)[kind.endswith("B")]
    if kind in ("chat-stub-A", "chat-stub-B"):
        stub = bench_overhead.StubClient(bench_overhead.prebuilt_completion())
        make = bench_overhead.bare_call if kind.endswith("A") else bench_overhead.healjson_call
        return make(stub)
    if kind in ("responses-stub-A", "responses-stub-B"):
        return bench_responses.stub_contenders()[kind.endswith("B")]
    if kind in ("stream-A", "stream-B"):
        return bench_responses.stream_contenders(url)[kind.endswith("B")]
    raise ValueError(f"unknown contender {kind!r}")


def child(spec: str) -> None:
    """The counted process: warm-ups, then each segment between two `os.getppid()` marks."""
    import gc

    warmups, segments = json.loads(spec)
    runs: dict[tuple[str, str], Callable[[], Any]] = {}
    for kind, url, _ in segments:
        if (kind, url) not in runs:
            runs[kind, url] = contender(kind, url)
    for kind, url, calls in warmups:
        run = runs.get((kind, url)) or contender(kind, url)
        for _ in range(calls):
            run()
    gc.collect()
    for kind, url, calls in segments:
        run = runs[kind, url]
        os.getppid()
        for _ in range(calls):
            run()
    os.getppid()


def counted(warmups: Plan, segments: Plan, workdir: Path) -> list[int]:
    """The instructions of each segment, counted by callgrind in one client process."""
    out = workdir / "callgrind.out"
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--dump-before=getppid",
            f"--callgrind-out-file={out}",
            sys.executable,
            "-c",
            CHILD.format(bench=str(BENCH)),
            json.dumps([warmups, segments]),
        ],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    if done.returncode != 0:
        raise RuntimeError(f"the counted process failed:\n{done.stderr[-3000:]}")
    parts = {}
    for path in workdir.glob("callgrind.out.*"):
        found = re.search(r"^totals: (\d+)", path.read_text(errors="replace"), re.MULTILINE)
        if found:
            parts[int(path.suffix[1:])] = int(found.group(1))
    # part 1: start-up and warm-ups; parts 2 .. n+1: the segments (the last mark ends one)
    if sorted(parts) != list(range(1, len(segments) + 2)):
        raise RuntimeError(f"expected {len(segments) + 1} dumps, got parts {sorted(parts)}")
    return [parts[index + 2] for index in range(len(segments))]


def alternating(kinds: Sequence[tuple[str, str]], rounds: int, calls: int) -> Plan:
    """Segments of `calls` calls per contender, in rounds, the order reversed every round."""
    plan: Plan = []
    for index in range(rounds):
        order = kinds if index % 2 == 0 else list(reversed(kinds))
        plan += [(kind, url, calls) for kind, url in order]
    return plan


def per_call(segments: Plan, counts: Sequence[int]) -> dict[str, tuple[float, float, float]]:
    """Each contender's count per call: over all its segments, and its segments' min and max."""
    found: dict[str, list[tuple[int, int]]] = {}
    for (kind, url, calls), count in zip(segments, counts, strict=True):
        found.setdefault(f"{kind}@{url}", []).append((count, calls))
    out = {}
    for key, pairs in found.items():
        each = [count / calls for count, calls in pairs]
        total = sum(count for count, _ in pairs) / sum(calls for _, calls in pairs)
        out[key] = (total, min(each), max(each))
    return out


def fmt(found: tuple[float, float, float]) -> str:
    total, low, high = found
    spread = f" ({low:,.0f}-{high:,.0f})" if high > low else ""
    return f"{total:,.0f}{spread}"


def happy(workdir: Path) -> list[str]:
    from bench_overhead import EXPECTED

    assert EXPECTED.model_dump_json() == REPLY  # one server answers both APIs
    warm, rounds, calls = HTTP
    stub_warm, stub_rounds, stub_calls = STUB
    with ExitStack() as stack:
        server = ServerProcess([REPLY], workdir, "content")
        stack.callback(server.stop)
        url = server.base_url
        http = [(k, url) for k in ("chat-A", "chat-B", "responses-A", "responses-B")]
        stubs = [(k, "") for k in ("chat-stub-A", "chat-stub-B", "responses-stub-A")]
        stubs.append(("responses-stub-B", ""))
        warmups = [(k, u, warm) for k, u in http] + [(k, u, stub_warm) for k, u in stubs]
        segments = alternating(http, rounds, calls) + alternating(stubs, stub_rounds, stub_calls)
        counts = counted(warmups, segments, workdir)
    found = {key.split("@")[0]: value for key, value in per_call(segments, counts).items()}
    rows = []
    for api, label in (("chat", "chat"), ("responses", "Responses")):
        for where, suffix in (("HTTP", ""), ("stub client", "-stub")):
            a, b = found[f"{api}{suffix}-A"], found[f"{api}{suffix}-B"]
            rows.append(
                [
                    f"{label}, {where}",
                    fmt(a),
                    fmt(b),
                    f"{b[0] - a[0]:+,.0f}",
                    f"**{b[0] / a[0]:.4f}x**" if not suffix else "",
                ]
            )
    return [
        "# Instructions per happy-path call",
        "",
        *stamp(),
        "",
        f"callgrind over one client process: after {warm} warm-up calls of each HTTP contender "
        f"and {stub_warm} of each stub one, {rounds} rounds of {calls}-call segments per HTTP "
        f"contender and {stub_rounds} rounds of {stub_calls}-call segments per stub one, the "
        "order alternating; per call: the contender's segments / its calls (in brackets: its "
        "segments' lowest and highest). A: the bare SDK call + `model_validate_json`; B: the "
        "healed call (`response_model=Order`). Against the stub clients, A is "
        "`model_validate_json` alone and B - A is healjson's own cost.",
        "",
        *table(["call", "A per call", "B per call", "B - A", "B / A"], rows),
        "",
        "Target (HTTP): B / A <= 1.05x.",
    ]


def streams(workdir: Path, sizes: Sequence[int]) -> list[str]:
    from concurrent.futures import ThreadPoolExecutor

    from bench_responses import stream_reply
    from bench_stream import per_8x

    with ExitStack() as stack:
        urls = {}
        for n in sizes:
            server = ServerProcess([stream_reply(n)], workdir, f"stream_{n}")
            stack.callback(server.stop)
            urls[n] = server.base_url
        first = urls[min(sizes)]
        warmups = [("stream-A", first, 1), ("stream-B", first, 1)]
        plans: dict[int, Plan] = {}
        for n in sizes:
            rounds, calls = STREAM_SIZES[n]
            plans[n] = alternating([("stream-A", urls[n]), ("stream-B", urls[n])], rounds, calls)
            (workdir / str(n)).mkdir()
        with ThreadPoolExecutor(len(sizes)) as pool:  # one counted process per length
            futures = {n: pool.submit(counted, warmups, plans[n], workdir / str(n)) for n in sizes}
            counts = {n: future.result() for n, future in futures.items()}
    found: dict[str, tuple[float, float, float]] = {}
    for n in sizes:
        found.update(per_call(plans[n], counts[n]))
    rows = []
    per: dict[int, tuple[float, float]] = {}
    for n in sizes:
        a, b = found[f"stream-A@{urls[n]}"], found[f"stream-B@{urls[n]}"]
        per[n] = (a[0], b[0])
        rounds, calls = STREAM_SIZES[n]
        rows.append(
            [f"{n:,} items", f"{rounds} x {calls}", fmt(a), fmt(b), f"**{b[0] / a[0]:.4f}x**"]
        )
    growth = [
        f"{small:,} -> {large:,} items: "
        f"A {per_8x(per[large][0] / per[small][0], large / small):.2f}x, "
        f"B {per_8x(per[large][1] / per[small][1], large / small):.2f}x"
        for small, large in itertools.pairwise(sorted(per))
    ]
    lines = [
        "# Instructions per streamed Responses answer",
        "",
        *stamp(),
        "",
        "`list[Item]` streamed in 5-character `response.output_text.delta` events from the "
        "scripted server: A the bare `responses.create(stream=True)` with the strict "
        "`text.format`, the deltas joined, `validate_json`; B "
        "`responses.create(response_model=list[Item], stream=True)`, `.items()` iterated, "
        "`.outcome`. callgrind over one client process per length: one warm-up stream each (of "
        "the smallest length), then rounds of segments of streams, the order alternating; per "
        "stream: the contender's segments / its streams (in brackets: its segments' lowest and "
        "highest).",
        "",
        *table(["answer", "rounds x streams", "A per stream", "B per stream", "B / A"], rows),
        "",
        "Target: B / A <= 1.3x; growth per 8x length <= 10x.",
    ]
    if growth:
        lines += ["", "Growth of the instructions per stream, per 8x length: " + "; ".join(growth)]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--suite", choices=("happy", "streams", "all"), default="all")
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="*",
        choices=list(STREAM_SIZES),
        default=list(STREAM_SIZES),
        help="the streamed list lengths to count",
    )
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: nothing to count", file=sys.stderr)
        return 1
    if args.suite in ("happy", "all"):
        with tempfile.TemporaryDirectory() as tmp:
            publish(happy(Path(tmp)), RESULTS)
    if args.suite in ("streams", "all"):
        with tempfile.TemporaryDirectory() as tmp:
            publish(streams(Path(tmp), sorted(args.sizes)), STREAM_RESULTS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
