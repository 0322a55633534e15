"""Happy-path overhead per provider, counted in instructions: each native client healed against
the same bare SDK request, and the local servers' constrained tier.

Run from the repository root (needs valgrind):

    .venv/bin/python benchmarks/bench_providers.py

As `bench_instructions.py` (whose method this is): valgrind's callgrind counts the user-space
instructions of a fresh client process making SHORT and then LONG calls after a warm-up; the
difference over LONG - SHORT is the count per call, free of start-up and imports, and the same
whatever else the machine does (wall-clock and CPU-time ratios on a loaded 2-core machine move
by more than the 5% target). The scripted server runs in a separate process, not counted.

Pairs, each the bare SDK making the very request healjson makes, then `model_validate_json` of
the answer, against healjson with `response_model=Order`:

* OpenAI `json_mode="constrained"`: `chat.completions.create` with the non-strict
  `response_format` json_schema (the full schema);
* Anthropic: `messages.create` with `output_config.format` (the schema in Anthropic's dialect);
* Gemini: `models.generate_content` with `response_mime_type` and `response_json_schema` (the
  schema in Gemini's dialect), the answer read from `response.text`.

Results are printed and written to `benchmarks/results/providers.md`.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import publish, stamp, table
from bench_overhead import REPLY, ServerProcess

SHORT, LONG = 20, 60
WARMUP = 10
RESULTS = Path(__file__).resolve().parent / "results" / "providers.md"
TARGET = 1.05

# the child: builds one contender (`provider`, `kind`) against the server, warms up, calls `n`
CHILD = """
import sys, gc
sys.path.insert(0, {bench!r})
import bench_overhead as b
import healjson
provider, kind, n, port = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
root = f"http://127.0.0.1:{{port}}"
Order, MESSAGES = b.Order, b.MESSAGES
if provider == "openai":
    import openai
    from healjson._providers.openai_chat import constrained_format
    client = openai.OpenAI(base_url=root + "/v1", api_key="sk-bench", max_retries=0)
    if kind == "A":
        form = constrained_format(Order.model_json_schema())
        def run():
            done = client.chat.completions.create(
                model="m", messages=MESSAGES, response_format=form)
            return Order.model_validate_json(done.choices[0].message.content)
    else:
        healed = healjson.wrap(client, json_mode="constrained")
        def run():
            return healed.chat.completions.create(
                model="m", messages=MESSAGES, response_model=Order).value
elif provider == "anthropic":
    import anthropic
    from healjson._providers.anthropic_schema import anthropic_schema
    client = anthropic.Anthropic(base_url=root, api_key="sk-bench", max_retries=0)
    system, turns = MESSAGES[0]["content"], MESSAGES[1:]
    if kind == "A":
        config = {{"format": {{"type": "json_schema",
                               "schema": anthropic_schema(Order.model_json_schema())}}}}
        def run():
            done = client.messages.create(model="c", max_tokens=1024, system=system,
                                          messages=turns, output_config=config)
            return Order.model_validate_json(done.content[0].text)
    else:
        healed = healjson.wrap(client)
        def run():
            return healed.messages.create(model="c", max_tokens=1024, system=system,
                                          messages=turns, response_model=Order).value
else:
    from google import genai
    from google.genai import types
    from healjson._providers.gemini_schema import gemini_schema
    client = genai.Client(api_key="k", http_options=types.HttpOptions(base_url=root))
    system, text = MESSAGES[0]["content"], MESSAGES[1]["content"]
    if kind == "A":
        config = {{"system_instruction": system, "response_mime_type": "application/json",
                   "response_json_schema": gemini_schema(Order.model_json_schema())}}
        def run():
            done = client.models.generate_content(model="g", contents=text, config=config)
            return Order.model_validate_json(done.text)
    else:
        healed = healjson.wrap(client)
        def run():
            return healed.models.generate_content(
                model="g", contents=text, config={{"system_instruction": system}},
                response_model=Order).value
for _ in range({warmup}):
    assert run() == b.EXPECTED
gc.collect()
for _ in range(n):
    run()
"""

PROVIDERS = (
    ("openai", "OpenAI-compatible, `json_mode='constrained'`"),
    ("anthropic", "Anthropic, `output_config` (native structured output)"),
    ("gemini", "Gemini, `response_json_schema`"),
)


def collected(provider: str, kind: str, calls: int, port: str, workdir: Path) -> int:
    """Instructions callgrind counted for a client process making `calls` calls."""
    script = CHILD.format(bench=str(Path(__file__).resolve().parent), warmup=WARMUP)
    out = workdir / f"callgrind.{provider}.{kind}.{calls}"
    done = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}",
            sys.executable,
            "-c",
            script,
            provider,
            kind,
            str(calls),
            port,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    found = re.findall(r"Collected : (\d+)", done.stderr)
    if done.returncode != 0 or not found:
        raise RuntimeError(f"{provider} {kind} failed:\n{done.stderr[-3000:]}")
    return int(found[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--only", choices=[name for name, _ in PROVIDERS], action="append")
    args = parser.parse_args()
    if shutil.which("valgrind") is None:
        print("valgrind is not installed: nothing to count", file=sys.stderr)
        return 1
    chosen = [(name, label) for name, label in PROVIDERS if not args.only or name in args.only]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        server = ServerProcess([REPLY], Path(tmp), "content")
        port = server.base_url.rsplit(":", 1)[1].split("/", 1)[0]
        try:
            for name, label in chosen:
                counts = {
                    (kind, n): collected(name, kind, n, port, Path(tmp))
                    for kind in ("A", "B")
                    for n in (SHORT, LONG)
                }
                per = {k: (counts[(k, LONG)] - counts[(k, SHORT)]) / (LONG - SHORT) for k in "AB"}
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
        finally:
            server.stop()
    lines = [
        "# Happy-path instructions per call, per provider",
        "",
        *stamp(),
        "",
        f"`.venv/bin/python benchmarks/bench_providers.py`: callgrind over a fresh client process "
        f"per contender making {SHORT} and {LONG} calls after {WARMUP} warm-up calls; per call = "
        f"the difference / {LONG - SHORT}. A: the bare SDK with healjson's very request + "
        f"`model_validate_json`; B: healjson with `response_model`. Target: B / A <= {TARGET}x.",
        "",
        *table(
            ["provider and tier", "A per call", "B per call", "B - A", "B / A", "within target"],
            rows,
        ),
    ]
    publish(lines, RESULTS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
