"""Happy-path overhead per provider, counted in instructions: each native client healed against
the same bare SDK request, and the local servers' constrained tier.

Run from the repository root (needs valgrind):

    .venv/bin/python benchmarks/bench_providers.py

As `bench_instructions.py`, valgrind's callgrind counts the user-space instructions of the
client, the same count whatever else the machine does (wall-clock and CPU-time ratios on a
loaded 2-core machine move by more than the 5% target). To pay the start-up under valgrind once
per provider, both contenders run in one client process: after a warm-up of each, blocks of
CALLS calls alternate A, B, A, B, each block's count taken alone (callgrind's client requests
`CALLGRIND_ZERO_STATS` before it and `CALLGRIND_DUMP_STATS_AT` after it, through a two-function
C library built at start with the system compiler and valgrind's headers). The scripted server
runs in a separate process, not counted.

Pairs, each the bare SDK making the very request healjson makes, then `model_validate_json` of
the answer, against healjson with `response_model=Order`:

* OpenAI's default strict tier: `chat.completions.create` with the strict `response_format`
  (`bench_instructions.py`'s pair, counted this way);
* OpenAI `json_mode="constrained"`: `chat.completions.create` with the non-strict
  `response_format` json_schema (the full schema);
* Anthropic: `messages.create` with `output_config.format` (the schema in Anthropic's dialect);
* Gemini: `models.generate_content` with `response_mime_type` and `response_json_schema` (the
  schema in Gemini's dialect), the answer read from `response.text`;
* Ollama: `chat` with `format=` the JSON schema (`stream=False`), the answer read from
  `response.message.content`.

With `--cpu`, each provider's pair is also timed in CPU by interleaved pairs (outside valgrind:
A and B call by call, which goes first alternating; the median of the per-pair ratios), the
secondary figure (it moves with the machine's load). Results are printed and written to
`benchmarks/results/providers.md`.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import publish, stamp, table
from bench_overhead import REPLY, ServerProcess

CALLS = 30  # calls per block
BLOCKS = 2  # blocks per contender, alternating
WARMUP = 10
RESULTS = Path(__file__).resolve().parent / "results" / "providers.md"
TARGET = 1.02  # instructions: B / A (the CPU target, by interleaved pairs, is CPU_TARGET)
CPU_TARGET = 1.05
HOOKS_C = """
#include <valgrind/callgrind.h>
void cg_zero(void) { CALLGRIND_ZERO_STATS; }
void cg_dump(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
"""

# the child: builds both contenders for `provider` against the server, warms up, then blocks
CHILD = """
import ctypes, gc, sys
sys.path.insert(0, {bench!r})
import bench_overhead as b
import healjson
provider, port = sys.argv[1], sys.argv[2]
root = f"http://127.0.0.1:{{port}}"
Order, MESSAGES = b.Order, b.MESSAGES
runs = {{}}
if provider == "openai-strict":
    import openai
    client = openai.OpenAI(base_url=root + "/v1", api_key="sk-bench", max_retries=0)
    def bare():
        done = client.chat.completions.create(
            model="m", messages=MESSAGES, response_format=b.RESPONSE_FORMAT)
        return Order.model_validate_json(done.choices[0].message.content)
    healed = healjson.wrap(client)
    def heal():
        return healed.chat.completions.create(
            model="m", messages=MESSAGES, response_model=Order).value
elif provider == "openai":
    import openai
    from healjson._providers.openai_chat import constrained_format
    client = openai.OpenAI(base_url=root + "/v1", api_key="sk-bench", max_retries=0)
    form = constrained_format(Order.model_json_schema())
    def bare():
        done = client.chat.completions.create(model="m", messages=MESSAGES, response_format=form)
        return Order.model_validate_json(done.choices[0].message.content)
    healed = healjson.wrap(client, json_mode="constrained")
    def heal():
        return healed.chat.completions.create(
            model="m", messages=MESSAGES, response_model=Order).value
elif provider == "anthropic":
    import anthropic
    from healjson._providers.anthropic_messages.schema import anthropic_schema
    client = anthropic.Anthropic(base_url=root, api_key="sk-bench", max_retries=0)
    system, turns = MESSAGES[0]["content"], MESSAGES[1:]
    config = {{"format": {{"type": "json_schema",
                           "schema": anthropic_schema(Order.model_json_schema())}}}}
    def bare():
        done = client.messages.create(model="c", max_tokens=1024, system=system,
                                      messages=turns, output_config=config)
        return Order.model_validate_json(done.content[0].text)
    healed = healjson.wrap(client)
    def heal():
        return healed.messages.create(model="c", max_tokens=1024, system=system,
                                      messages=turns, response_model=Order).value
elif provider == "ollama":
    import ollama
    client = ollama.Client(host=root)
    schema = Order.model_json_schema()
    def bare():
        done = client.chat(model="o", messages=MESSAGES, format=schema, stream=False)
        return Order.model_validate_json(done.message.content)
    healed = healjson.wrap(client)
    def heal():
        return healed.chat(model="o", messages=MESSAGES, response_model=Order).value
else:
    from google import genai
    from google.genai import types
    from healjson._providers.gemini_generate.schema import gemini_schema
    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=root))
    system, text = MESSAGES[0]["content"], MESSAGES[1]["content"]
    config = {{"system_instruction": system, "response_mime_type": "application/json",
               "response_json_schema": gemini_schema(Order.model_json_schema())}}
    def bare():
        done = client.models.generate_content(model="g", contents=text, config=config)
        return Order.model_validate_json(done.text)
    healed = healjson.wrap(client)
    def heal():
        return healed.models.generate_content(
            model="g", contents=text, config={{"system_instruction": system}},
            response_model=Order).value
contenders = {{"A": bare, "B": heal}}
for run in contenders.values():
    for _ in range({warmup}):
        assert run() == b.EXPECTED
"""
# counted under callgrind: blocks of calls, each block's count dumped alone
COUNT = """
hooks = ctypes.CDLL({hooks!r})
for block in range({blocks}):
    for kind, run in contenders.items():
        gc.collect()
        hooks.cg_zero()
        for _ in range({calls}):
            run()
        hooks.cg_dump(f"{{kind}}-{{block}}".encode())
"""
# timed (CPU): A and B call by call, which goes first alternating; the per-pair ratios
TIME = """
import json, statistics, time
clock = time.process_time_ns
times = {{"A": [], "B": []}}
gc.collect()
for index in range({pairs}):
    for kind in ("A", "B") if index % 2 == 0 else ("B", "A"):
        start = clock()
        contenders[kind]()
        times[kind].append(clock() - start)
ratios = [b_ / a_ for a_, b_ in zip(times["A"], times["B"])]
q1, median, q3 = statistics.quantiles(ratios, n=4)
print(json.dumps({{"ratio": median, "q1": q1, "q3": q3,
                   "A": statistics.median(times["A"]), "B": statistics.median(times["B"])}}))
"""
PAIRS = 600  # timed pairs per provider (`--cpu`)

PROVIDERS = (
    ("openai-strict", "OpenAI, strict `json_schema` (the default)"),
    ("openai", "OpenAI-compatible, `json_mode='constrained'`"),
    ("anthropic", "Anthropic, `output_config` (native structured output)"),
    ("gemini", "Gemini, `response_json_schema`"),
    ("ollama", "Ollama, `format=<JSON Schema>` (structured outputs)"),
)


def hooks_library(workdir: Path) -> Path:
    """The two callgrind client requests as a C library (`cg_zero`, `cg_dump`)."""
    source, library = workdir / "cg_hooks.c", workdir / "libcg_hooks.so"
    source.write_text(HOOKS_C, encoding="utf-8")
    subprocess.run(["cc", "-shared", "-fPIC", "-O1", "-o", str(library), str(source)], check=True)
    return library


def started(provider: str, port: str, workdir: Path, hooks: Path) -> subprocess.Popen[str]:
    """The client process of `provider` under callgrind (the providers run side by side: the
    counts do not depend on what else runs)."""
    script = CHILD.format(bench=str(Path(__file__).resolve().parent), warmup=WARMUP)
    script += COUNT.format(hooks=str(hooks), blocks=BLOCKS, calls=CALLS)
    out = workdir / f"callgrind.{provider}"
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
    return subprocess.Popen(
        [*command, sys.executable, "-c", script, provider, port],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def counted(provider: str, process: subprocess.Popen[str], workdir: Path) -> dict[str, int]:
    """Instructions per contender (A, B), summed over its blocks."""
    _, errors = process.communicate()
    if process.returncode != 0:
        raise RuntimeError(f"{provider} failed:\n{errors[-3000:]}")
    totals = {"A": 0, "B": 0}
    dumps = 0
    for path in workdir.glob(f"callgrind.{provider}.*"):
        text = path.read_text(encoding="utf-8", errors="replace")
        label = re.search(r"^desc: Trigger: Client Request: (\w)-\d+", text, re.MULTILINE)
        total = re.search(r"^summary: (\d+)", text, re.MULTILINE)
        if label and total:
            totals[label.group(1)] += int(total.group(1))
            dumps += 1
    if dumps != 2 * BLOCKS:
        raise RuntimeError(f"{provider}: {dumps} block dumps found, {2 * BLOCKS} expected")
    return totals


def timed(provider: str, port: str) -> dict[str, float]:
    """CPU per call of A and B, and the median of their per-pair ratios (with its IQR), in a
    client process of `provider` (not under valgrind); the providers one after the other."""
    script = CHILD.format(bench=str(Path(__file__).resolve().parent), warmup=WARMUP)
    script += TIME.format(pairs=PAIRS)
    done = subprocess.run(
        [sys.executable, "-c", script, provider, port],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"{provider} failed:\n{done.stderr[-3000:]}")
    result: dict[str, float] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def sdk_versions() -> str:
    """The installed versions of the SDKs the providers' contenders call."""
    from importlib.metadata import version

    names = ("openai", "anthropic", "google-genai", "ollama")
    return ", ".join(f"{name} {version(name)}" for name in names)


def cpu_table(chosen: list[tuple[str, str]], port: str) -> list[str]:
    """`--cpu`: the providers' CPU ratios by interleaved pairs, as a table."""
    rows = []
    for name, label in chosen:
        found = timed(name, port)
        rows.append(
            [
                label,
                f"{found['A'] / 1e3:,.1f} µs",
                f"{found['B'] / 1e3:,.1f} µs",
                f"**{found['ratio']:.3f}x** ({found['q1']:.3f}-{found['q3']:.3f})",
                "yes" if found["ratio"] <= CPU_TARGET else "no",
            ]
        )
        print(label, f"CPU {found['ratio']:.3f}x", flush=True)
    with open("/proc/loadavg", encoding="utf-8") as loadavg:
        load = loadavg.read().split()[:3]
    return [
        "",
        f"CPU per call by interleaved pairs (`--cpu`): {PAIRS} pairs per provider, A and B call "
        "by call, which goes first alternating, `time.process_time_ns()` around each call; "
        f"B / A is the median of the per-pair ratios (IQR). Load average at the end: "
        f"{', '.join(load)}.",
        "",
        *table(
            ["provider and tier", "A CPU per call", "B CPU per call", "B / A (IQR)", "within"],
            rows,
        ),
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", choices=[name for name, _ in PROVIDERS], action="append")
    parser.add_argument("--results", type=Path, default=RESULTS, help="the table's file")
    parser.add_argument("--cpu", action="store_true", help="also time CPU by interleaved pairs")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: nothing to count", file=sys.stderr)
        return 1
    chosen = [(name, label) for name, label in PROVIDERS if not args.only or name in args.only]
    rows = []
    calls = CALLS * BLOCKS
    with tempfile.TemporaryDirectory() as tmp:
        hooks = hooks_library(Path(tmp))
        server = ServerProcess([REPLY], Path(tmp), "content")
        port = server.base_url.rsplit(":", 1)[1].split("/", 1)[0]
        try:
            running = [
                (name, label, started(name, port, Path(tmp), hooks)) for name, label in chosen
            ]
            for name, label, process in running:
                totals = counted(name, process, Path(tmp))
                per = {kind: totals[kind] / calls for kind in "AB"}
                ratio = per["B"] / per["A"]
                rows.append(
                    [
                        label,
                        f"{per['A']:,.0f}",
                        f"{per['B']:,.0f}",
                        f"+{per['B'] - per['A']:,.0f}",
                        f"**{ratio:.4f}x**",
                        "yes" if ratio <= TARGET else f"no (+{(ratio - TARGET) * 100:.1f} pts)",
                    ]
                )
                print(label, f"{ratio:.4f}x", flush=True)
            cpu = cpu_table(chosen, port) if args.cpu else []
        finally:
            server.stop()
    lines = [
        "# Happy-path instructions per call, per provider",
        "",
        *stamp(),
        f"- SDKs: {sdk_versions()}",
        "",
        f"`.venv/bin/python benchmarks/bench_providers.py`: callgrind over one client process per "
        f"provider: {WARMUP} warm-up calls of each contender, then {BLOCKS} blocks of {CALLS} "
        f"calls each, alternating A, B; per call = a contender's blocks / {CALLS * BLOCKS}. A: "
        f"the bare SDK with healjson's very request + `model_validate_json`; B: healjson with "
        f"`response_model`. Target: B / A <= {TARGET}x in instructions (and <= {CPU_TARGET}x in "
        f"CPU, `--cpu`).",
        "",
        *table(
            ["provider and tier", "A per call", "B per call", "B - A", "B / A", "within target"],
            rows,
        ),
        *cpu,
    ]
    publish(lines, args.results.resolve())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
