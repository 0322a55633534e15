"""Benchmark healjson at scale: one scripted 10,000-row dataset through every batch path.

Run from the repository root:

    .venv/bin/python benchmarks/bench_scale.py [--rows N] [--quick]

The dataset: N rows (default 10,000), `{"id": "tN", "prompt": "ticket N: ..."}`, each given one
fate by a seeded shuffle with exact counts (`MIX`): 70% valid; 5% fenced and 5% prose-wrapped
JSON (L1 heals them locally); 10% break the contract (`scale_pack.py`) on the first call and are
valid on a repair; 5% cut by the token limit (`finish_reason: length`) then valid; 3% refused;
1% HTTP 500 and 1% expired in a batch (HTTP 503 outside a batch). The scripted server
(`ScriptedServer`, in a separate process: `--serve`) answers every request by its content, as
`Tickets` in `tests/scale/test_batch_api.py` does: the ticket number in the first user message picks
the fate, and a request with an assistant turn in it is a repair (a later call). Every healed
value is checked against the row's expected ticket.

Contenders, each in its own process, the server in another (fresh for each contender):

- (a) `python -m healjson batch IN --out OUT --contracts scale_pack.py --concurrency 64`;
- (b) the same with `--batch-api --poll-interval 0.05` against the server's `/v1/files` and
  `/v1/batches` (`batch_delay_s` BATCH_DELAY_S: each scripted batch ends that long after its
  creation); rounds and requests per round from the command's own summary;
- (c) Ray Data: `ray.init(num_cpus=2, include_dashboard=False)`, `ds.map_batches(HealBatch,
  compute=ActorPoolStrategy(size=2))` over the same rows; and `HealReplies` (the postprocess)
  over pre-generated replies, pass after pass until no row needs another call;
- (d) instructor's `BatchProcessor("openai/...", CheckedTicket)` (the same contract as a pydantic
  validator) on the same scripted OpenAI batch (its provider builds `OpenAI()`, which reads
  `OPENAI_BASE_URL` / `OPENAI_API_KEY`): submit, poll `get_batch_status`, `get_results`; rows
  returned parsed, as `BatchError`, or not at all. Run twice: on the same mix (its batch ends
  `expired`, as an OpenAI batch with an expired request does), and on the mix with the expired
  lines made HTTP-errored lines (its batch ends `completed`).

For each: wall time and rows/s (the process's whole life, interpreter start included), model
calls (HTTP requests or batch lines the server answered) per healed row, healed and degraded
rows by reason, and peak RSS. Peak RSS: a subprocess (the CLI) is started by a small Python
runner that reports `resource.getrusage(RUSAGE_CHILDREN).ru_maxrss` after it exits (the runner
itself is ~10 MB and is the only other process counted); a contender run in a fresh child of
this script reports its own `ru_maxrss`; Ray's actors are separate processes, whose VmHWM is
read from `/proc` every SAMPLE_S while the dataset runs.

Scale figures on one machine:

- (e) `healjson.wrap(AsyncOpenAI(...))` `create(response_model=...)`, an `asyncio.gather` of
  1,000 and of 2,000 calls at once (the httpx pool sized to hold them), against a server (large
  listen backlog) that holds every request until all N have arrived, then answers them all,
  so every call is in flight at the same time (the server reports the most it held); each run
  in a fresh child process: RSS high-water mark growth over the run (`/proc/self/clear_refs`
  resets it first) and per call; the bare `AsyncOpenAI` + `model_validate_json` alongside;
- (f) `healjson batch` peak RSS at 1,250 / 10,000 / 80,000 input rows (an always-valid reply,
  `--concurrency 64`): growth per 8x rows, ~1.0x when memory does not depend on the input;
- (g) resume: the same commands run again on their finished outputs (every row already done):
  wall time at each size, growth per 8x rows (linear: ~8x or less; quadratic would be 64x).

Results are printed and written to `benchmarks/results/scale.md`; `--quick` (500 rows, smaller
scale steps; under 2 minutes), `--only PARTS` and `--memory-rows N,N,N` (other sizes for (f)
and (g), which take ~11 of the run's 15-17 minutes) print without writing.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import itertools
import json
import os
import random
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

from _machine import machine, publish, stamp, table

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "benchmarks"
RESULTS = BENCH / "results" / "scale.md"
PACK = "benchmarks/scale_pack.py"  # relative to ROOT, where every command runs
MODEL = "gpt-4o-mini"
API_KEY = "sk-bench-scale"
SEED = 20_261_201
CONCURRENCY = 64
POLL_INTERVAL = 0.05
BATCH_DELAY_S = 0.2
ASYNC_WARMUP = 16  # calls before the timed gather (answered at once)
ASYNC_SIZES = (1_000, 2_000)
MEMORY_SIZES = (1_250, 10_000, 80_000)
RESUME_REPEATS = 3
RAY_ACTORS = 2
RAY_BATCH = 256
SAMPLE_S = 0.2
QUICK_ROWS = 500
QUICK_ASYNC = (150, 300)
QUICK_MEMORY = (125, 1_000)

MIX: tuple[tuple[str, float], ...] = (
    ("valid", 0.70),
    ("fenced", 0.05),
    ("prose", 0.05),
    ("contract", 0.10),
    ("truncated", 0.05),
    ("refused", 0.03),
    ("http_error", 0.01),
    ("expired", 0.01),
)
FATE_TEXT = {
    "valid": "valid JSON",
    "fenced": "fenced JSON (L1)",
    "prose": "JSON wrapped in prose (L1)",
    "contract": "contract broken, valid on repair",
    "truncated": "cut by the token limit, valid after",
    "refused": "refused",
    "http_error": "HTTP 500 (a batch: an errored line)",
    "expired": "expired in a batch (HTTP 503 outside one)",
}
PARTS = ("a", "b", "c", "d", "e", "f", "g")

# --- the dataset and the scripted replies ------------------------------------------------------

_CATEGORIES = ("logistics", "refund", "quality", "other")
_SUMMARIES = (
    "Order stuck in transit for a week",
    "Refund not received after the return",
    "Item arrived damaged in its box",
    "Customer asks about the warranty terms",
)


def fates(rows: int) -> list[str]:
    """Each row's fate (index 0 is ticket 1): exact counts per `MIX`, seeded shuffle."""
    counts = {name: int(rows * share) for name, share in MIX}
    counts["valid"] += rows - sum(counts.values())
    order = [name for name, count in counts.items() for _ in range(count)]
    random.Random(SEED).shuffle(order)
    return order


def ticket(number: int, *, urgency: int | None = None, summary: str | None = None) -> dict:
    kind = number % 4
    return {
        "urgency": urgency if urgency is not None else 1 + number % 5,
        "category": _CATEGORIES[kind],
        "summary": summary if summary is not None else _SUMMARIES[kind],
        "orderId": f"ORD-{number % 1_000_000:06d}",
    }


def ticket_text(number: int, **changes: Any) -> str:
    return json.dumps(ticket(number, **changes))


def prompt(number: int) -> str:
    return (
        f"ticket {number}: a customer writes about order ORD-{number % 1_000_000:06d}; extract "
        "the support ticket (urgency 1-5, category, a one-line summary, the order id)."
    )


def write_input(path: Path, rows: int) -> Path:
    with path.open("w", encoding="utf-8") as file:
        for number in range(1, rows + 1):
            file.write(json.dumps({"id": f"t{number}", "prompt": prompt(number)}) + "\n")
    return path


_NUMBER = re.compile(r"ticket (\d+)")


def request_number(messages: Sequence[dict[str, Any]]) -> tuple[int, bool]:
    """The ticket number of a request (its first user turn) and whether it is a first call."""
    user = next(m["content"] for m in messages if m.get("role") == "user")
    text = user if isinstance(user, str) else json.dumps(user)
    found = _NUMBER.search(text)
    if found is None:
        raise ValueError(f"no ticket number in {text[:80]!r}")
    first = not any(m.get("role") == "assistant" for m in messages)
    return int(found.group(1)), first


def scripted_reply(fate: str, number: int, first: bool, *, in_batch: bool) -> Any:
    """The reply to a request for ticket `number` of this fate (first call or a repair)."""
    from healjson.testing import ScriptedReply

    if fate == "fenced":
        return ScriptedReply(content=f"Here it is:\n```json\n{ticket_text(number)}\n```")
    if fate == "prose":
        return ScriptedReply(
            content=f"Sure! The ticket is {ticket_text(number)} and that is all I found."
        )
    if fate == "contract" and first:
        return ScriptedReply(content=ticket_text(number, urgency=5, summary="Late!"))
    if fate == "truncated" and first:
        return ScriptedReply(content=ticket_text(number)[:40], finish_reason="length")
    if fate == "refused":
        return ScriptedReply(refusal="I can't help with that.")
    if fate == "http_error":
        return ScriptedReply(status=500, content="upstream model error")
    if fate == "expired":
        if in_batch:
            return ScriptedReply(batch_expired=True)
        return ScriptedReply(status=503, content="the model is overloaded")
    return ScriptedReply(content=ticket_text(number))


# --- the scripted server, in its own process ---------------------------------------------------


class Script:
    """The server side: answers chat requests and batch lines by content, and counts them."""

    def __init__(self, rows: int, kind: str, barrier: int, expired_as: str) -> None:
        self.fates = fates(rows) if kind == "mix" else []
        if expired_as != "expired":
            self.fates = [expired_as if f == "expired" else f for f in self.fates]
        self.kind = kind
        self.barrier = barrier  # > 0: hold requests after the warm-up until this many wait
        self.lock = threading.Lock()
        self.released = threading.Condition(self.lock)
        self.chat = 0
        self.chat_first = 0
        self.lines = 0
        self.lines_first = 0
        self.in_flight = 0
        self.most_in_flight = 0

    def fate(self, number: int) -> str:
        return self.fates[number - 1] if self.kind == "mix" else "valid"

    def answer_chat(self, body: dict[str, Any]) -> Any:
        number, first = request_number(body["messages"])
        with self.lock:
            self.chat += 1
            self.chat_first += first
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            if self.barrier and self.chat > ASYNC_WARMUP:
                if self.chat - ASYNC_WARMUP >= self.barrier:
                    self.released.notify_all()
                else:
                    self.released.wait_for(
                        lambda: self.chat - ASYNC_WARMUP >= self.barrier, timeout=120
                    )
            self.in_flight -= 1
        return scripted_reply(self.fate(number), number, first, in_batch=False)

    def answer_line(self, custom_id: str, body: dict[str, Any]) -> Any:
        number, first = request_number(body["messages"])
        with self.lock:
            self.lines += 1
            self.lines_first += first
        return scripted_reply(self.fate(number), number, first, in_batch=True)

    def stats(self) -> dict[str, int]:
        return {
            "chat": self.chat,
            "chat_first": self.chat_first,
            "lines": self.lines,
            "lines_first": self.lines_first,
            "most_in_flight": self.most_in_flight,
            "cpu_s": round(time.process_time(), 3),
        }


class _Stop(Exception):
    pass


def serve(args: argparse.Namespace) -> int:
    """`--serve`: a ScriptedServer answering by content until SIGTERM; prints READY, then its
    counts as one JSON line when it stops."""
    import healjson.testing._http as http_module
    from healjson.testing import ScriptedServer

    _raise_file_limit()
    # the library's listen backlog (1,024) would drop handshakes at 2,000 at once
    http_module.LoopbackHTTPServer.request_queue_size = 4096
    script = Script(args.rows, args.serve, args.barrier, args.expired_as)
    server = ScriptedServer(
        [script.answer_chat],
        repeat=True,
        model=MODEL,
        batch_replies=script.answer_line,
        batch_delay_s=args.batch_delay,
    )

    def stop(signum: int, frame: Any) -> None:
        raise _Stop

    signal.signal(signal.SIGTERM, stop)
    try:
        server.start()
        print(f"READY {server.base_url}", flush=True)
        while True:
            time.sleep(3600)
    except _Stop:
        pass
    finally:
        server.stop()
    print(json.dumps(script.stats()), flush=True)
    return 0


class Server:
    """The scripted server as a child process (`--serve KIND`)."""

    def __init__(
        self, kind: str, rows: int, *, barrier: int = 0, expired_as: str = "expired"
    ) -> None:
        command = [
            sys.executable, __file__, "--serve", kind, "--rows", str(rows),
            "--barrier", str(barrier), "--batch-delay", str(BATCH_DELAY_S),
            "--expired-as", expired_as,
        ]  # fmt: skip
        self.proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, cwd=ROOT)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line.startswith("READY "):
            self.proc.kill()
            raise RuntimeError(f"scripted server did not start: {line!r}")
        self.base_url = line.split(" ", 1)[1]
        self.stats: dict[str, int] = {}

    def stop(self) -> dict[str, int]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                out, _ = self.proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                out, _ = self.proc.communicate()
            lines = [line for line in out.splitlines() if line.startswith("{")]
            self.stats = json.loads(lines[-1]) if lines else {}
        return self.stats

    def __enter__(self) -> Server:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


def _raise_file_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


# --- memory ------------------------------------------------------------------------------------


def vm_status(pid: int | str = "self") -> dict[str, int]:
    """VmRSS and VmHWM of a process, in KiB ({} when it is gone)."""
    out = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":", 1)[0]] = int(line.split()[1])
    except OSError:
        pass
    return out


def reset_peak() -> bool:
    """Reset this process's RSS high-water mark (VmHWM) to its current RSS (Linux)."""
    try:
        with open("/proc/self/clear_refs", "w") as file:
            file.write("5")
    except OSError:
        return False
    return True


def own_peak_kb() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def mib(kb: float) -> str:
    return f"{kb / 1024:,.1f} MiB"


# `python -c RUNNER cmd...`: run cmd, then print its wall time and its RSS high-water mark. The
# runner is small (~10 MB), and Linux carries a parent's high-water mark into a child's
# `ru_maxrss` across exec: so the command is started from here, not from this script.
RUNNER = (
    "import json, resource, subprocess, sys, time\n"
    "start = time.perf_counter()\n"
    "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "wall = time.perf_counter() - start\n"
    "usage = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "peak, cpu = usage.ru_maxrss, usage.ru_utime + usage.ru_stime\n"
    "print(json.dumps({'rc': done.returncode, 'wall_s': wall, 'maxrss_kb': peak, 'cpu_s': cpu,\n"
    "                  'runner_kb': resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,\n"
    "                  'stderr': done.stderr[-4000:], 'stdout': done.stdout[-2000:]}))\n"
)


def run_measured(command: Sequence[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, "-c", RUNNER, *command],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        check=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def cli_batch(source: Path, out: Path, base_url: str, *more: str) -> list[str]:
    return [
        sys.executable, "-m", "healjson", "batch", str(source), "--out", str(out),
        "--model", MODEL, "--contracts", PACK, "--base-url", base_url, "--api-key", API_KEY,
        "--no-progress", *more,
    ]  # fmt: skip


def run_child(part: str, *more: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """`--child PART` in a fresh process; its last stdout line is its JSON result."""
    done = subprocess.run(
        [sys.executable, __file__, "--child", part, *more],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        raise RuntimeError(
            f"child {part} failed ({done.returncode}):\n{done.stdout[-3000:]}\n"
            f"{done.stderr[-5000:]}"
        )
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def progress(message: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# --- reading what a contender produced ---------------------------------------------------------


@dataclass
class Tally:
    """What one contender made of the dataset."""

    name: str
    rows: int
    wall_s: float = 0.0
    peak_kb: float = 0.0
    calls: int = 0  # model calls the server answered (HTTP requests or batch lines)
    healed: int = 0
    wrong: int = 0  # healed to a value that is not the row's ticket
    degraded: Counter[str] = field(default_factory=Counter)
    missing: int = 0  # rows with no result at all
    attempts: int = 0  # the rows' own count of model calls
    by_fate: dict[str, Counter[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.wall_s if self.wall_s else 0.0

    def add(self, number: int, fate: str, result: str) -> None:
        self.by_fate.setdefault(fate, Counter())[result] += 1


def tally_rows(tally: Tally, rows: Iterable[dict[str, Any]], fate_of: list[str]) -> None:
    """Count healjson's output rows (`healjson batch` rows, or Ray's result rows)."""
    seen: set[int] = set()
    for row in rows:
        number = int(str(row["id"])[1:])
        seen.add(number)
        fate = fate_of[number - 1]
        tally.attempts += int(row.get("attempts") or 0)
        if row["ok"]:
            value = row["value"]
            if isinstance(value, str):
                value = json.loads(value)
            if value != ticket(number):
                tally.wrong += 1
            tally.healed += 1
            tally.add(number, fate, "healed")
        else:
            tally.degraded[row["reason"]] += 1
            tally.add(number, fate, row["reason"])
    tally.missing = tally.rows - len(seen)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as file:
        return [json.loads(line) for line in file if line.strip()]


# --- (a) and (b): healjson batch ---------------------------------------------------------------

_ROUND = re.compile(r"round (\d+): (\d+) batch\(es\), (\d+) request\(s\)")


def bench_cli(rows: int, workdir: Path, *, batch_api: bool) -> Tally:
    name = "b" if batch_api else "a"
    source = write_input(workdir / f"{name}-in.jsonl", rows)
    out = workdir / f"{name}-out.jsonl"
    more = ["--concurrency", str(CONCURRENCY)]
    if batch_api:
        more = ["--batch-api", "--poll-interval", str(POLL_INTERVAL)]
    with Server("mix", rows) as server:
        result = run_measured(cli_batch(source, out, server.base_url, *more))
    stats = server.stats
    label = (
        f"(b) `healjson batch --batch-api --poll-interval {POLL_INTERVAL}`"
        if batch_api
        else f"(a) `healjson batch --concurrency {CONCURRENCY}`"
    )
    tally = Tally(label, rows, wall_s=result["wall_s"], peak_kb=result["maxrss_kb"])
    tally.calls = stats["lines"] if batch_api else stats["chat"]
    tally_rows(tally, read_jsonl(out) if out.exists() else [], fates(rows))
    tally.extra["rc"] = result["rc"]
    tally.extra["cpu_s"] = result["cpu_s"]
    tally.extra["server"] = stats
    tally.extra["summary"] = result["stderr"].strip()
    if batch_api:
        tally.extra["rounds"] = [tuple(map(int, m)) for m in _ROUND.findall(result["stderr"])]
    if result["rc"] != 0:
        tally.notes.append(f"exit code {result['rc']}: {result['stderr'][-500:]}")
    return tally


# --- (c): Ray Data -----------------------------------------------------------------------------


def make_async_client(base_url: str) -> Any:
    """Ray's client factory (called in each actor)."""
    import openai

    return openai.AsyncOpenAI(base_url=base_url, api_key=API_KEY)


class ProcSampler:
    """Samples the RSS of every process of this Ray instance (and this one) from /proc."""

    def __init__(self) -> None:
        self.names: dict[int, set[str]] = {}  # pid -> every name it was seen with
        self.hwm: dict[int, int] = {}  # pid -> VmHWM KiB, last seen
        self.total_peak_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ProcSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(SAMPLE_S)

    def sample(self) -> None:
        total = 0
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            pid = int(entry.name)
            if pid != os.getpid() and "ray" not in cmdline:
                continue
            status = vm_status(pid)
            if not status:
                continue
            total += status.get("VmRSS", 0)
            name = "driver" if pid == os.getpid() else _ray_name(cmdline)
            self.names.setdefault(pid, set()).add(name)
            self.hwm[pid] = status.get("VmHWM", 0)
        self.total_peak_kb = max(self.total_peak_kb, total)

    def peaks(self, marker: str, exclude: Iterable[int] = ()) -> dict[int, int]:
        """VmHWM of the processes seen running something whose name contains `marker`."""
        skip = set(exclude)
        return {
            pid: self.hwm[pid]
            for pid, names in self.names.items()
            if pid not in skip and any(marker in name for name in names)
        }


def _ray_name(cmdline: str) -> str:
    if cmdline.startswith("ray::"):
        return cmdline.split(maxsplit=1)[0]
    for name in ("gcs_server", "raylet", "dashboard", "log_monitor", "monitor", "runtime_env"):
        if name in cmdline:
            return name
    return "ray (other)"


def child_ray(args: argparse.Namespace) -> dict[str, Any]:
    import pyarrow as pa
    import ray

    from healjson.ray import HealBatch, HealReplies
    from scale_pack import Ticket, urgent_summary_explains

    rows = args.rows
    env = {"PYTHONPATH": str(BENCH), "OPENAI_API_KEY": API_KEY}
    started = time.perf_counter()
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        runtime_env={"env_vars": env},
        logging_level="ERROR",
        log_to_driver=False,
    )
    ray.data.DataContext.get_current().enable_progress_bars = False
    init_s = time.perf_counter() - started
    items = [{"id": f"t{n}", "prompt": prompt(n)} for n in range(1, rows + 1)]
    result: dict[str, Any] = {"init_s": init_s}

    import functools

    factory = functools.partial(make_async_client, args.base_url)
    with ProcSampler() as sampler:
        start = time.perf_counter()
        ds = ray.data.from_items(items).map_batches(
            HealBatch,
            fn_constructor_kwargs={
                "client_factory": factory,
                "model": MODEL,
                "response_model": Ticket,
                "contracts": [urgent_summary_explains],
                "concurrency": CONCURRENCY // RAY_ACTORS,
            },
            compute=ray.data.ActorPoolStrategy(size=RAY_ACTORS),
            num_cpus=0.5,
            batch_size=RAY_BATCH,
            batch_format="pyarrow",
        )
        table_out = pa.concat_tables(list(ds.iter_batches(batch_format="pyarrow", batch_size=None)))
        result["wall_s"] = time.perf_counter() - start
        sampler.sample()
    result["rows"] = table_out.select(["id", "ok", "value", "reason", "attempts"]).to_pylist()
    actors = sampler.peaks("HealBatch")
    result["actors_kb"] = sorted(actors.values())
    result["processes"] = sorted(
        (max(names, key=len), sampler.hwm[pid]) for pid, names in sampler.names.items()
    )
    result["ray_total_peak_kb"] = sampler.total_peak_kb
    result["driver_kb"] = own_peak_kb()

    # the postprocess on pre-generated replies: pass after pass, the server's replies computed
    # here with the same script (a failed request gives no reply: those rows are left out)
    fate_of = fates(rows)
    replied = [n for n in range(1, rows + 1) if fate_of[n - 1] not in ("http_error", "expired")]
    heal = HealReplies(Ticket, contracts=[urgent_summary_explains], model=MODEL)
    current = [
        {"id": f"t{n}", "prompt": prompt(n), **_generated(fate_of[n - 1], n, True), "history": None}
        for n in replied
    ]
    finished: list[dict[str, Any]] = []
    passes: list[dict[str, Any]] = []
    with ProcSampler() as sampler:
        start = time.perf_counter()
        while current:
            pass_start = time.perf_counter()
            healed = ray.data.from_items(current).map_batches(
                heal, batch_size=1_000, batch_format="pyarrow"
            )
            out = pa.concat_tables(
                list(healed.iter_batches(batch_format="pyarrow", batch_size=None))
            )
            records = out.select(
                ["id", "ok", "value", "reason", "attempts", "repair_messages", "history"]
            ).to_pylist()
            pending = [r for r in records if r["repair_messages"] is not None]
            finished += [r for r in records if r["repair_messages"] is None]
            passes.append(
                {
                    "rows": len(records),
                    "pending": len(pending),
                    "s": time.perf_counter() - pass_start,
                }
            )
            current = []
            for record in pending:
                messages = json.loads(record["repair_messages"])
                number, first = request_number(messages)
                current.append(
                    {
                        "id": record["id"],
                        "messages": record["repair_messages"],
                        **_generated(fate_of[number - 1], number, first),
                        "history": record["history"],
                    }
                )
        result["replies_wall_s"] = time.perf_counter() - start
    result["replies_rows"] = [
        {k: r[k] for k in ("id", "ok", "value", "reason", "attempts")} for r in finished
    ]
    result["replies_passes"] = passes
    result["replies_total_peak_kb"] = sampler.total_peak_kb
    result["replies_workers_kb"] = sorted(sampler.peaks("HealReplies", actors).values())
    ray.shutdown()
    return result


def _generated(fate: str, number: int, first: bool) -> dict[str, Any]:
    """A pre-generated reply as `ray.data.llm` gives it: text, finish reason, token counts."""
    reply = scripted_reply(fate, number, first, in_batch=False)
    text = reply.content if reply.content is not None else (reply.refusal or "")
    return {
        "generated_text": text,
        "finish_reason": reply.finish_reason or "stop",
        "num_input_tokens": len(prompt(number)) // 4,
        "num_generated_tokens": len(text) // 4,
    }


def bench_ray(rows: int) -> tuple[Tally, Tally]:
    env = dict(os.environ, OPENAI_API_KEY=API_KEY, PYTHONPATH=str(BENCH))
    with Server("mix", rows) as server:
        started = time.perf_counter()
        result = run_child("ray", "--rows", str(rows), "--base-url", server.base_url, env=env)
        life = time.perf_counter() - started
    fate_of = fates(rows)
    actors = result["actors_kb"]
    tally = Tally(f"(c) Ray Data `HealBatch`, {RAY_ACTORS} actors", rows, wall_s=result["wall_s"])
    tally.peak_kb = max(actors) if actors else 0
    tally.calls = server.stats["chat"]
    tally_rows(tally, result["rows"], fate_of)
    tally.extra.update(
        init_s=result["init_s"],
        life_s=life,
        actors_kb=actors,
        processes=result["processes"],
        ray_total_peak_kb=result["ray_total_peak_kb"],
        driver_kb=result["driver_kb"],
        server=server.stats,
    )
    replied = sum(f not in ("http_error", "expired") for f in fate_of)
    post = Tally(
        "(c') Ray Data `HealReplies` (postprocess, pre-generated replies)",
        replied,
        wall_s=result["replies_wall_s"],
    )
    workers = result["replies_workers_kb"]
    post.peak_kb = max(workers) if workers else 0
    post.calls = sum(p["rows"] for p in result["replies_passes"])  # replies fed in
    tally_rows(post, result["replies_rows"], fate_of)
    post.missing = replied - len(result["replies_rows"])
    post.extra.update(
        passes=result["replies_passes"],
        ray_total_peak_kb=result["replies_total_peak_kb"],
        workers_kb=workers,
    )
    return tally, post


# --- (d): instructor's BatchProcessor ----------------------------------------------------------


def child_instructor(args: argparse.Namespace) -> dict[str, Any]:
    import contextlib
    import io

    from instructor.batch import BatchError, BatchProcessor, BatchSuccess

    from scale_pack import CheckedTicket

    rows = args.rows
    start = time.perf_counter()
    processor = BatchProcessor(f"openai/{MODEL}", CheckedTicket)
    messages = [[{"role": "user", "content": prompt(n)}] for n in range(1, rows + 1)]
    result: dict[str, Any] = {}
    with contextlib.redirect_stdout(io.StringIO()):  # it prints progress lines
        buffer = processor.create_batch_from_messages(messages)
        batch_id = processor.submit_batch(buffer)
        polls = 0
        while True:
            status = processor.get_batch_status(batch_id)
            polls += 1
            if status["status"] in ("completed", "failed", "expired", "cancelled"):
                break
            time.sleep(POLL_INTERVAL)
        result["status"] = status["status"]
        result["polls"] = polls
        try:
            results = processor.get_results(batch_id)
        except Exception as exc:
            results = []
            result["raised"] = f"{type(exc).__name__}: {exc}"
    result["wall_s"] = time.perf_counter() - start
    parsed: list[tuple[int, dict[str, Any]]] = []
    errors: list[tuple[int, str]] = []
    for item in results:
        number = int(item.custom_id.rsplit("-", 1)[1]) + 1  # request-{i}, i from 0
        if isinstance(item, BatchSuccess):
            parsed.append((number, item.result.model_dump()))
        elif isinstance(item, BatchError):
            errors.append((number, item.error_type))
    result["parsed"] = parsed
    result["errors"] = errors
    result["peak_kb"] = own_peak_kb()
    return result


def bench_instructor(rows: int, expired_as: str) -> Tally:
    env = dict(os.environ, OPENAI_API_KEY=API_KEY, PYTHONPATH=str(BENCH))
    with Server("mix", rows, expired_as=expired_as) as server:
        env["OPENAI_BASE_URL"] = server.base_url
        result = run_child("instructor", "--rows", str(rows), env=env)
    fate_of = fates(rows)  # by the dataset's fates (the expired lines: errored lines in (d'))
    label = (
        "(d) instructor `BatchProcessor`"
        if expired_as == "expired"
        else "(d') instructor `BatchProcessor`, the expired lines served as errored lines"
    )
    tally = Tally(label, rows, wall_s=result["wall_s"], peak_kb=result["peak_kb"])
    tally.calls = server.stats["lines"]
    seen = set()
    for number, value in result["parsed"]:
        seen.add(number)
        tally.healed += 1
        tally.wrong += value != ticket(number)
        tally.add(number, fate_of[number - 1], "parsed")
    for number, kind in result["errors"]:
        seen.add(number)
        tally.degraded[kind] += 1
        tally.add(number, fate_of[number - 1], kind)
    tally.missing = rows - len(seen)
    for number in set(range(1, rows + 1)) - seen:
        tally.add(number, fate_of[number - 1], "not returned")
    tally.extra.update(status=result["status"], raised=result.get("raised"), server=server.stats)
    return tally


# --- (e): the async path, thousands of calls at once -------------------------------------------


async def _async_run(kind: str, base_url: str, calls: int) -> dict[str, Any]:
    import httpx2
    import openai

    from scale_pack import Ticket

    _raise_file_limit()
    limits = httpx2.Limits(max_connections=calls + 64, max_keepalive_connections=calls + 64)
    raw = openai.AsyncOpenAI(
        base_url=base_url,
        api_key=API_KEY,
        max_retries=0,
        timeout=120.0,
        http_client=openai.DefaultAsyncHttpxClient(limits=limits, timeout=120.0),
    )
    messages = [{"role": "user", "content": prompt(7)}]
    if kind == "healjson":
        import healjson

        client = healjson.wrap(raw)

        async def call() -> bool:
            outcome = await client.chat.completions.create(
                model=MODEL, messages=messages, response_model=Ticket
            )
            return bool(outcome.ok)
    else:

        async def call() -> bool:
            completion = await raw.chat.completions.create(model=MODEL, messages=messages)
            Ticket.model_validate_json(completion.choices[0].message.content or "")
            return True

    await asyncio.gather(*(call() for _ in range(ASYNC_WARMUP)))  # imports, pool, caches
    gc.collect()
    reset = reset_peak()
    before = vm_status()
    cpu0, wall0 = time.process_time(), time.perf_counter()
    oks = await asyncio.gather(*(call() for _ in range(calls)), return_exceptions=True)
    wall = time.perf_counter() - wall0
    cpu = time.process_time() - cpu0
    after = vm_status()
    failures = [repr(x) for x in oks if x is not True]
    await raw.close()
    return {
        "calls": calls,
        "ok": sum(x is True for x in oks),
        "failures": failures[:3],
        "wall_s": wall,
        "cpu_s": cpu,
        "rss_before_kb": before.get("VmRSS", 0),
        "peak_growth_kb": after.get("VmHWM", 0) - before.get("VmRSS", 0),
        "rss_after_kb": after.get("VmRSS", 0),
        "peak_kb": after.get("VmHWM", 0),
        "reset": reset,
    }


def bench_async(sizes: Sequence[int], bare: bool) -> list[dict[str, Any]]:
    """healjson at each size; the bare client at the first size only (its CPU at 2,000 is
    the same as healjson's, and ~1 minute: httpcore's pool, see the report)."""
    runs = []
    for calls in sizes:
        kinds = ("bare", "healjson") if bare and calls == sizes[0] else ("healjson",)
        for kind in kinds:
            with Server("valid", 1, barrier=calls) as server:
                result = run_child("async", kind, "--calls", str(calls), "--base-url",
                                   server.base_url)  # fmt: skip
            result["kind"] = kind
            result["held"] = server.stats["most_in_flight"]
            result["requests"] = server.stats["chat"]
            runs.append(result)
            growth_kb, held = result["peak_growth_kb"], result["held"]
            progress(f"(e) {kind} x {calls:,}: {result['wall_s']:.1f} s, peak growth "
                     f"{mib(growth_kb)}, held {held:,} at once")  # fmt: skip
    return runs


# --- (f) and (g): memory against the input's length, resume time -------------------------------


def bench_memory(sizes: Sequence[int], workdir: Path) -> tuple[list[dict], list[dict]]:
    memory, resume = [], []
    for rows in sizes:
        source = write_input(workdir / f"f-{rows}-in.jsonl", rows)
        out = workdir / f"f-{rows}-out.jsonl"
        with Server("valid", rows) as server:
            command = cli_batch(source, out, server.base_url, "--concurrency", str(CONCURRENCY))
            first = run_measured(command)
            written = sum(1 for _ in out.open("rb")) if out.exists() else 0
            if first["rc"] != 0:
                progress(f"(f) {rows:,} rows: exit code {first['rc']}: {first['stderr'][-800:]}")
            progress(f"(f) {rows:,} rows: {first['wall_s']:.1f} s, peak {mib(first['maxrss_kb'])}")
            again = [run_measured(command) for _ in range(RESUME_REPEATS)]
        calls = server.stats["chat"]
        memory.append({"rows": rows, "written": written, "calls": calls, **first})
        resume.append(
            {
                "rows": rows,
                "walls": [r["wall_s"] for r in again],
                "peaks": [r["maxrss_kb"] for r in again],
                "calls_after": calls - rows,
                "rc": [r["rc"] for r in again],
                "summary": again[-1]["stderr"].strip(),
                "output_bytes": out.stat().st_size if out.exists() else 0,
            }
        )
        progress(f"(g) {rows:,} rows done: resumed in {min(resume[-1]['walls']):.2f} s")
    return memory, resume


def interpreter_floor() -> float:
    """Wall time of `python -m healjson batch --help` (interpreter start and the CLI's import)."""
    walls = [
        run_measured([sys.executable, "-m", "healjson", "batch", "--help"])["wall_s"]
        for _ in range(RESUME_REPEATS)
    ]
    return statistics.median(walls)


# --- the report --------------------------------------------------------------------------------


def fmt_counts(counter: Counter[str]) -> str:
    return ", ".join(f"{name} {count:,}" for name, count in counter.most_common()) or "-"


def contender_table(tallies: Sequence[Tally]) -> list[str]:
    rows = []
    for t in tallies:
        per_healed = f"{t.calls / t.healed:.3f}" if t.healed else "-"
        rows.append(
            [
                t.name,
                f"{t.rows:,}",
                f"{t.wall_s:,.1f} s",
                f"{t.rows_per_s:,.0f}",
                f"{t.calls:,}",
                per_healed,
                f"{t.healed:,}" + (f" ({t.wrong} wrong)" if t.wrong else ""),
                f"{sum(t.degraded.values()):,}: {fmt_counts(t.degraded)}",
                f"{t.missing:,}",
                mib(t.peak_kb) if t.peak_kb else "-",
            ]
        )
    return table(
        [
            "contender",
            "rows",
            "wall",
            "rows/s",
            "model calls",
            "calls per healed row",
            "healed (parsed)",
            "degraded / errors, by reason",
            "rows lost",
            "peak RSS",
        ],
        rows,
    )


def fate_table(tallies: Sequence[Tally], rows: int) -> list[str]:
    fate_of = fates(rows)
    counts = Counter(fate_of)
    header = ["fate", "rows", *(t.name.split(" ", 1)[0] for t in tallies)]
    body = []
    for name, _ in MIX:
        cells = [FATE_TEXT[name], f"{counts[name]:,}"]
        cells += [fmt_counts(t.by_fate.get(name, Counter())) for t in tallies]
        body.append(cells)
    return table(header, body)


def growth(values: Sequence[float]) -> list[str]:
    return [f"{b / a:.2f}x" for a, b in itertools.pairwise(values)]


def environment(args: argparse.Namespace) -> list[str]:
    libs = ", ".join(
        f"{name} {version(name)}"
        for name in ("healjson", "openai", "httpx2", "pydantic", "instructor", "ray", "pyarrow")
    )
    return [
        "# healjson scale benchmark",
        "",
        *stamp(),
        f"- {libs}",
        *machine(),
        f"- dataset: {args.rows:,} rows, seed {SEED}; concurrency {CONCURRENCY}; scripted "
        f"batches end {BATCH_DELAY_S} s after creation; every server in its own process",
        "",
    ]


# --- main --------------------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rows", type=int, default=None, help="dataset rows (default 10,000)")
    parser.add_argument("--quick", action="store_true", help="a smoke run (no results file)")
    parser.add_argument("--only", help="comma-separated parts among a-g (no results file)")
    parser.add_argument(
        "--memory-rows",
        help="input sizes of (f) and (g), comma-separated (default 1250,10000,80000: ~11 of "
        "the run's 15-17 minutes; not written)",
    )
    parser.add_argument("--serve", choices=("mix", "valid"), help=argparse.SUPPRESS)
    parser.add_argument("--barrier", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--batch-delay", type=float, default=BATCH_DELAY_S, help=argparse.SUPPRESS)
    parser.add_argument("--expired-as", default="expired", help=argparse.SUPPRESS)
    parser.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.rows is None:
        args.rows = QUICK_ROWS if args.quick else 10_000
    if args.serve:
        return serve(args)
    if args.child:
        sys.path.insert(0, str(BENCH))
        part = args.child[0]
        if part == "ray":
            print(json.dumps(child_ray(args)))
        elif part == "instructor":
            print(json.dumps(child_instructor(args)))
        elif part == "async":
            print(json.dumps(asyncio.run(_async_run(args.child[1], args.base_url, args.calls))))
        return 0

    parts = set(PARTS) if not args.only else set(args.only.split(","))
    started = time.perf_counter()
    header = environment(args)
    lines = list(header)
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        workdir = Path(tmp)
        tallies: list[Tally] = []
        if "a" in parts:
            progress("(a) healjson batch")
            tallies.append(bench_cli(args.rows, workdir, batch_api=False))
        if "b" in parts:
            progress("(b) healjson batch --batch-api")
            tallies.append(bench_cli(args.rows, workdir, batch_api=True))
        if "c" in parts:
            progress("(c) Ray Data")
            tallies += bench_ray(args.rows)
        if "d" in parts:
            progress("(d) instructor BatchProcessor")
            tallies.append(bench_instructor(args.rows, "expired"))
            tallies.append(bench_instructor(args.rows, "http_error"))
        results["tallies"] = tallies
        if "e" in parts:
            progress("(e) async, thousands at once")
            sizes = QUICK_ASYNC if args.quick else ASYNC_SIZES
            results["async"] = bench_async(sizes, bare=not args.quick)
        if "f" in parts or "g" in parts:
            progress("(f)/(g) memory against the input, resume")
            sizes = QUICK_MEMORY if args.quick else MEMORY_SIZES
            if args.memory_rows:
                sizes = tuple(int(n) for n in args.memory_rows.split(","))
            results["memory"], results["resume"] = bench_memory(sizes, workdir)
            results["floor"] = interpreter_floor()
    results["took_s"] = time.perf_counter() - started
    lines += report(args, results)
    if args.quick or args.only or args.memory_rows:
        print("\n".join(lines))
        took = results["took_s"]
        print(f"(not written: --quick / --only / --memory-rows) took {took:.0f} s", file=sys.stderr)
    else:
        publish(lines, RESULTS, f" ({results['took_s'] / 60:.1f} minutes)")
    return 0


def report(args: argparse.Namespace, results: dict[str, Any]) -> list[str]:
    lines: list[str] = []
    tallies: list[Tally] = results.get("tallies", [])
    if tallies:
        lines += [
            f"## 1. One dataset, every path ({args.rows:,} rows)",
            "",
            "Fates (exact counts, seeded shuffle): "
            + "; ".join(f"{FATE_TEXT[name]} {share:.0%}" for name, share in MIX)
            + ". *model calls*: requests the scripted server answered (HTTP requests, the "
            "SDK's own retries included; or batch lines). *calls per healed row*: model calls "
            "/ healed rows. *rows lost*: rows with no result at all. *peak RSS*: the process "
            "doing the work (the CLI; Ray: the larger actor; instructor: its process). "
            "*wall*: the process's whole life (interpreter start and imports included), except "
            "Ray (the dataset's execution, after `ray.init`).",
            "",
        ]
        lines += contender_table(tallies)
        lines += ["", "Per fate, what each contender made of the rows:", ""]
        lines += fate_table(tallies, args.rows)
        lines += [""]
        for t in tallies:
            lines += [f"- {t.name}: " + describe(t)]
        lines += [""]
        lines += findings({t.name.split(" ", 1)[0]: t for t in tallies})
    if "async" in results:
        lines += report_async(results["async"])
    if "memory" in results:
        lines += report_memory(results["memory"], results["resume"], results["floor"])
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    lines.append(
        f"The whole run took {results['took_s'] / 60:.1f} minutes; load average at the end {load} "
        "(the machine's 2 cores are shared: by the contender and its scripted server, and by "
        "whatever else runs)."
    )
    return lines


def findings(by: dict[str, Tally]) -> list[str]:
    """What section 1 says, from its own figures (a bullet only when its contenders ran)."""
    out = []
    a, b, c, c2, d, d2 = (by.get(k) for k in ("(a)", "(b)", "(c)", "(c')", "(d)", "(d')"))
    if a is not None and "cpu_s" in a.extra:
        text = (
            f"Throughput: (a) is bound by its own CPU, {a.extra['cpu_s'] / a.calls * 1e3:.1f} ms "
            "per model call in the `healjson batch` process, nearly all of it the openai SDK's "
            "async client (building the request, httpx, parsing the response): healjson's own "
            "work on a call is ~50 µs (`bench_overhead.py`, part 1b). One process drives one "
            "core; the scripted server takes part of the other"
        )
        if c is not None:
            text += (
                f". Ray's two actors are two such processes, on the same two cores as the "
                f"server: {c.rows_per_s:,.0f} rows/s against {a.rows_per_s:,.0f}"
            )
        if b is not None:
            text += (
                f". (b) uploads one file and downloads one per round ({b.rows_per_s:,.0f} rows/s "
                f"here, where a scripted batch ends {BATCH_DELAY_S} s after its creation); with "
                "a provider the batches' own turnaround (minutes to 24 h) is the wall time"
            )
        out.append("- " + text + ".")
    healjsons = [t for t in (a, b, c) if t is not None]
    if healjsons:
        first = healjsons[0]
        out.append(
            f"- Rows: every healjson path heals the same {first.healed:,} rows (each row a "
            f"local fix or a repair can save, every value checked against its ticket: "
            f"{sum(t.wrong for t in healjsons)} wrong) and degrades "
            f"{sum(first.degraded.values()):,} (the refusals and the rows the endpoint "
            "failed), losing none. Calls per healed row: "
            + ", ".join(f"{t.name.split(' ', 1)[0]} {t.calls / t.healed:.3f}" for t in healjsons)
            + f" ({first.attempts / first.healed:.3f} by healjson's own count; the difference "
            "in (a) and (c) is the SDK's two retries of each HTTP error)."
        )
    if d is not None:
        text = (
            f"- instructor's `BatchProcessor` (d): {dict(MIX)['expired']:.0%} of the requests "
            f"expired, so the batch ended `{d.extra.get('status')}` and `get_results` raised: "
            f"{d.missing:,} of {d.rows:,} rows lost. An OpenAI batch that expires keeps the "
            "answers of the requests that completed in its output file (healjson reads them: "
            "(b)); `BatchProcessor` reads results only from a `completed` batch"
        )
        out.append(text + ".")
    if d2 is not None:
        errors = sum(d2.degraded.values())
        lost = d2.rows - d2.healed
        healed_by_us = b.healed - d2.healed if b is not None else None
        out.append(
            f"- (d'), the same batch with the expired requests errored instead (so it ends "
            f"`{d2.extra.get('status')}`): {d2.healed:,} rows parsed (the valid ones), "
            f"{errors:,} `BatchError`s (fenced, prose-wrapped, cut and refused replies: "
            "`extraction_error`, its `json.loads` of the raw content fails; the contract: "
            f"`parsing_error`) and {d2.missing:,} rows not returned at all: the errored "
            "requests are in the batch's error file, which it never reads. No value for "
            f"{lost:,} rows"
            + (
                f", of which healjson heals {healed_by_us:,} (its {b.healed:,} against "
                f"{d2.healed:,})"
                if healed_by_us is not None
                else ""
            )
            + "; nothing is resubmitted."
        )
    if c2 is not None:
        refused = c2.by_fate.get("refused", Counter())
        out.append(
            f"- `HealReplies` (c') sees only each reply's text, as `ray.data.llm` gives it: a "
            f"refusal is plain prose with no JSON in it, re-asked until the attempts run out "
            f"({fmt_counts(refused)}, two more passes each), where the other paths read the "
            "API's `refusal` field and stop at once."
        )
    if a is not None and b is not None:
        out.append(
            f"- Memory: (a) {mib(a.peak_kb)}; (b) {mib(b.peak_kb)} (it holds a round's "
            "request lines until the round is submitted, and reads each ended batch's result "
            "file whole: memory in proportion to a round, one batch of up to 50,000 requests); "
            + (
                f"Ray {mib(c.peak_kb)} per actor, and the Ray processes together "
                f"{mib(c.extra['ray_total_peak_kb'])}; "
                if c is not None
                else ""
            )
            + (f"instructor {mib(d2.peak_kb)} (every result in memory)." if d2 else "")
        )
    return [*out, ""] if out else []


def describe(t: Tally) -> str:
    e = t.extra
    parts = []
    if "rounds" in e:
        rounds = "; ".join(f"round {r}: {b} batch(es), {n:,} requests" for r, b, n in e["rounds"])
        parts.append(f"{len(e['rounds'])} rounds ({rounds})")
    if "server" in e:
        s = e["server"]
        if s.get("chat"):
            parts.append(f"{s['chat']:,} HTTP requests ({s['chat_first']:,} first calls)")
        if s.get("lines"):
            parts.append(f"{s['lines']:,} batch lines ({s['lines_first']:,} first calls)")
    if t.attempts:
        parts.append(f"the rows count {t.attempts:,} attempts")
    if "cpu_s" in e and t.calls:
        server = e.get("server", {}).get("cpu_s")
        parts.append(
            f"client CPU {e['cpu_s']:.1f} s ({e['cpu_s'] / t.calls * 1e3:.1f} ms per model call, "
            "start-up included)"
            + (f", the scripted server's {server:.1f} s" if server is not None else "")
        )
    if "init_s" in e:
        parts.append(
            f"`HealBatch(concurrency={CONCURRENCY // RAY_ACTORS})` in each actor ({CONCURRENCY} "
            f"in flight in all), `batch_size={RAY_BATCH}`, `num_cpus=0.5` per actor; "
            f"`ray.init` {e['init_s']:.1f} s, the child process's whole life {e['life_s']:.1f} s; "
            f"actors' VmHWM {', '.join(mib(k) for k in e['actors_kb'])}; driver "
            f"{mib(e['driver_kb'])}; every Ray process together at most "
            f"{mib(e['ray_total_peak_kb'])}"
        )
    if "passes" in e:
        passes = "; ".join(
            f"{p['rows']:,} replies in, {p['pending']:,} to re-ask ({p['s']:.1f} s)"
            for p in e["passes"]
        )
        parts.append(
            f"{len(e['passes'])} passes ({passes}); *model calls* here = replies fed in; "
            f"every Ray process together at most {mib(e['ray_total_peak_kb'])}"
        )
    if "status" in e:
        parts.append(f"the batch ended `{e['status']}`")
        if e.get("raised"):
            parts.append(f"`get_results` raised `{e['raised'][:160]}`")
    if e.get("rc"):
        parts.append(f"exit code {e['rc']}")
    parts += t.notes
    return "; ".join(parts) + "."


def report_async(runs: list[dict[str, Any]]) -> list[str]:
    lines = [
        "## 2. The async path: thousands of calls at once",
        "",
        "`asyncio.gather` of N calls at once in a fresh child process (after "
        f"{ASYNC_WARMUP} warm-up calls), against a scripted server (own process, listen "
        "backlog 4,096) that holds every request until all N have arrived and then answers "
        "them all, so all N are in flight together (*held*: the most requests the server "
        "held at once). httpx pool: "
        "`DefaultAsyncHttpxClient(limits=httpx2.Limits(max_connections=N + 64))`, "
        "`max_retries=0`. *peak growth*: VmHWM after the gather minus VmRSS before it (the "
        "high-water mark reset first, `/proc/self/clear_refs`); *per call*: that over N.",
        "",
    ]
    body = []
    for r in runs:
        label = "`healjson.wrap(AsyncOpenAI)`" if r["kind"] == "healjson" else "bare `AsyncOpenAI`"
        body.append(
            [
                label,
                f"{r['calls']:,}",
                f"{r['held']:,}",
                f"{r['ok']:,}" + (f" ({r['failures'][0][:60]})" if r["failures"] else ""),
                f"{r['wall_s']:.1f} s",
                f"{r['cpu_s']:.1f} s",
                mib(r["rss_before_kb"]),
                mib(r["peak_kb"]),
                mib(r["peak_growth_kb"]),
                f"{r['peak_growth_kb'] / r['calls']:.1f} KiB",
            ]
        )
    lines += table(
        [
            "client",
            "calls at once",
            "held",
            "ok",
            "wall",
            "client CPU",
            "RSS before",
            "peak RSS",
            "peak growth",
            "per call",
        ],
        body,
    )
    lines.append("")
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for r in runs:
        by_kind.setdefault(r["kind"], []).append(r)
    for kind, items in by_kind.items():
        if len(items) == 2:
            small, large = items
            ratio = (large["peak_growth_kb"] / large["calls"]) / (
                small["peak_growth_kb"] / small["calls"]
            )
            lines.append(
                f"- {kind}: RSS per in-flight call at {large['calls']:,} / at "
                f"{small['calls']:,}: **{ratio:.2f}x** (bounded: ~1.0x)."
            )
    cpu = ", ".join(
        f"{r['calls']:,} at once {r['cpu_s'] / r['calls'] * 1e3:.1f} ms"
        for r in by_kind.get("healjson", [])
    )
    lines.append(
        f"- client CPU per call (healjson): {cpu}. It grows with the calls in flight, the bare "
        "client's as much: httpcore2's connection pool scans every connection for every "
        "request (`AsyncConnectionPool._assign_requests_to_connections`; a cProfile of the bare "
        "client at 1,500 calls at once, taken while writing this benchmark, put about half its "
        "CPU there), so N calls at once cost O(N²) in the HTTP stack. Memory is what this part "
        "measures; the CPU is the SDK's."
    )
    for b in by_kind.get("bare", []):
        for h in by_kind.get("healjson", []):
            if h["calls"] != b["calls"]:
                continue
            extra = (h["peak_growth_kb"] - b["peak_growth_kb"]) / h["calls"]
            lines.append(
                f"- at {h['calls']:,}: healjson's share of the per-call growth "
                f"{extra:+.1f} KiB per call over the bare client's "
                f"{b['peak_growth_kb'] / b['calls']:.1f} KiB."
            )
    lines.append("")
    return lines


def report_memory(memory: list[dict], resume: list[dict], floor: float) -> list[str]:
    lines = [
        "## 3. `healjson batch`: memory against the input's length, and resume time",
        "",
        f"An always-valid reply, `--concurrency {CONCURRENCY}`, a fresh output; peak RSS of the "
        "`healjson batch` process (`RUSAGE_CHILDREN` of a small runner). Then the same "
        f"command run again {RESUME_REPEATS} times on the finished output (every row already "
        "there: nothing to send), its wall time (the minimum of the runs, the steadiest figure "
        "on a shared machine; the process's whole life). For scale: "
        f"`healjson batch --help` (the interpreter's start and the CLI's import) takes "
        f"{floor:.2f} s; a re-run also imports the openai SDK and builds its client and the "
        "healer before it looks at the rows.",
        "",
    ]
    body = []
    for m, r in zip(memory, resume, strict=True):
        wall = min(r["walls"])
        body.append(
            [
                f"{m['rows']:,}",
                f"{m['written']:,}",
                f"{m['wall_s']:.1f} s",
                f"{m['rows'] / m['wall_s']:,.0f}",
                mib(m["maxrss_kb"]),
                f"{m['cpu_s'] / m['rows'] * 1e3:.1f} ms",
                f"{wall:.2f} s",
                mib(max(r["peaks"])),
                f"{r['calls_after']}",
                f"{r['output_bytes'] / 1e6:,.1f} MB",
            ]
        )
    lines += table(
        [
            "input rows",
            "written",
            "first run",
            "rows/s",
            "peak RSS",
            "client CPU per row",
            "re-run (all done)",
            "re-run peak RSS",
            "requests sent by the re-runs",
            "output size",
        ],
        body,
    )
    peaks = [m["maxrss_kb"] for m in memory]
    walls = [min(r["walls"]) for r in resume]
    sizes = [m["rows"] for m in memory]
    # the re-run's cost per row on each step: equal steps mean linear (quadratic: 8x per step)
    per_row = [(b - a) / (nb - na) for (a, b), (na, nb) in
               zip(itertools.pairwise(walls), itertools.pairwise(sizes), strict=True)]  # fmt: skip
    lines += [
        "",
        f"- peak RSS growth per 8x rows: **{', '.join(growth(peaks))}** (target ~1.0x); "
        f"from {sizes[0]:,} to {sizes[-1]:,} rows the peak grows "
        f"{(peaks[-1] - peaks[0]) * 1024 / (sizes[-1] - sizes[0]):,.0f} bytes per input row. "
        "Most of it is the set of distinct ids the run keeps to skip repeated ones "
        "(`select` in `healjson/_batch/input_file.py`; ~110 bytes per id under tracemalloc at "
        "80,000 ids, measured while writing this benchmark): memory is O(distinct ids), flat "
        "in everything else (the rows, the replies, the output).",
        f"- re-run wall growth per 8x rows: **{', '.join(growth(walls))}** (target ≤ 8x; "
        "quadratic: 64x). The fixed start-up dominates the small sizes; the rows' own cost, "
        "per row on each step ("
        + ", ".join(
            f"{na:,} → {nb:,}: {cost * 1e6:,.1f} µs/row"
            for cost, (na, nb) in zip(per_row, itertools.pairwise(sizes), strict=True)
        )
        + (
            f"), grows {per_row[1] / per_row[0]:.2f}x from one step to the next "
            "(linear: ~1x; quadratic: 8x)"
            if len(per_row) == 2 and per_row[0] > 0
            else ")"
        )
        + "; the first step adds well under a second, about the start-up's own spread from "
        "run to run, so the last step's cost per row is the figure to read.",
        f"- re-run peak RSS growth per 8x rows: "
        f"{', '.join(growth([max(r['peaks']) for r in resume]))}.",
        "",
    ]
    for m in memory:
        if m["rc"] != 0 or m["written"] != m["rows"]:
            lines.append(
                f"- {m['rows']:,} rows: exit code {m['rc']}, {m['written']:,} written: "
                f"`{m['stderr'][-300:]}`"
            )
    return lines


if __name__ == "__main__":
    sys.exit(main())
