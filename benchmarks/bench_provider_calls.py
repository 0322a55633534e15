"""Model calls to a valid value per provider: the calls benchmark's scenario set through each
native client healjson wraps.

Run from the repository root:

    .venv/bin/python benchmarks/bench_provider_calls.py

The 29 scenarios of `benchmarks/scenarios/packs.jsonl` (every malformation class x the three
contract packs; see `bench_calls.py`), each a scripted sequence of replies ending with the good
one, through a fresh `healjson.testing.ScriptedServer` per scenario and the real SDK
(`max_retries=0`), healjson with the pack's contracts and examples and the default policy:

- OpenAI `wrap(OpenAI())` (strict `json_schema`), and `json_mode="constrained"`;
- Anthropic `wrap(Anthropic()).messages.create` (native `output_config`);
- Gemini `wrap(genai.Client()).models.generate_content` (`response_json_schema`);
- Ollama `wrap(ollama.Client()).chat` (`format=<JSON Schema>`).

The *floor* is the fewest calls any healer can make: 1 when the first reply holds the expected
value (a valid answer, or one a local repair recovers), else 2 (the good answer needs a second
call). Results are printed and written to `benchmarks/results/provider_calls.md`.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import anthropic
import ollama
import openai
from google import genai
from google.genai import types as genai_types

import healjson
from _machine import publish, stamp, table
from bench_calls import MAX_CALLS, Case, Item, _is_expected, _valid, load_cases
from healjson.testing import ScriptedServer

RESULTS = Path(__file__).resolve().parent / "results" / "provider_calls.md"
logging.getLogger("healjson").setLevel(logging.ERROR)  # the enforcement notice: not measured


def _openai(json_mode: str) -> Callable[[ScriptedServer, Case], Any]:
    def heal(server: ScriptedServer, case: Case) -> Any:
        with openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as sdk:
            return healjson.wrap(sdk, json_mode=json_mode).chat.completions.create(
                model="m",
                messages=case.messages,
                response_model=case.pack.model,
                contracts=case.pack.contracts,
                examples=case.pack.examples,
            )

    return heal


def _anthropic(server: ScriptedServer, case: Case) -> Any:
    with anthropic.Anthropic(base_url=server.anthropic_base_url, api_key="k", max_retries=0) as sdk:
        return healjson.wrap(sdk).messages.create(
            model="c",
            max_tokens=2048,
            messages=case.messages,
            response_model=case.pack.model,
            contracts=case.pack.contracts,
            examples=case.pack.examples,
        )


def _gemini(server: ScriptedServer, case: Case) -> Any:
    system = "\n\n".join(m["content"] for m in case.messages if m.get("role") == "system")
    contents = [
        {"role": "model" if m["role"] == "assistant" else "user", "parts": [{"text": m["content"]}]}
        for m in case.messages
        if m.get("role") != "system"
    ]
    client = genai.Client(
        api_key="k", http_options=genai_types.HttpOptions(base_url=server.gemini_base_url)
    )
    try:
        return healjson.wrap(client).models.generate_content(
            model="g",
            contents=contents,
            config={"system_instruction": system} if system else None,
            response_model=case.pack.model,
            contracts=case.pack.contracts,
            examples=case.pack.examples,
        )
    finally:
        client.close()


def _ollama(server: ScriptedServer, case: Case) -> Any:
    client = ollama.Client(host=server.ollama_host)
    try:
        return healjson.wrap(client).chat(
            model="o",
            messages=case.messages,
            response_model=case.pack.model,
            contracts=case.pack.contracts,
            examples=case.pack.examples,
        )
    finally:
        client.close()


CONTENDERS: list[tuple[str, Callable[[ScriptedServer, Case], Any]]] = [
    ("OpenAI (strict `json_schema`)", _openai("json_schema")),
    ('OpenAI-compatible, `json_mode="constrained"`', _openai("constrained")),
    ("Anthropic (`output_config`)", _anthropic),
    ("Gemini (`response_json_schema`)", _gemini),
    ("Ollama (`format=<JSON Schema>`)", _ollama),
]


HEADER = ["client and tier", "scenarios", "calls", "floor", "at the floor", "healed", "exceptions"]


def floor(case: Case) -> int:
    return 1 if case.scenario.locally_fixable or case.scenario.kind == "valid" else 2


def run(heal: Callable[[ScriptedServer, Case], Any], case: Case, script: Sequence[Item]) -> tuple:
    with ScriptedServer(script) as server:
        try:
            outcome = heal(server, case)
        except Exception as exc:  # counted: healjson should raise none
            return len(server.requests), False, type(exc).__name__
        calls = sum(1 for r in server.requests if r.method == "POST")
    healed = outcome.ok and _valid(case, outcome.value) and _is_expected(case, outcome.value)
    return calls, healed, None


def main() -> int:
    started = time.monotonic()
    cases = load_cases()
    rows, above = [], []
    for label, heal in CONTENDERS:
        calls = healed = at_floor = 0
        errors: list[str] = []
        for case in cases:
            made, ok, error = run(heal, case, case.script(MAX_CALLS))
            calls += made
            healed += ok
            at_floor += made == floor(case)
            if error:
                errors.append(f"{case.scenario.id}: {error}")
            elif made != floor(case):
                above.append(f"{label}: `{case.scenario.id}` ({case.scenario.kind}) {made} calls")
        rows.append(
            [
                label,
                str(len(cases)),
                str(calls),
                str(sum(floor(case) for case in cases)),
                f"{at_floor}/{len(cases)}",
                f"{healed}/{len(cases)}",
                str(len(errors)),
            ]
        )
        print(label, calls, healed, errors, flush=True)
    lines = [
        "# Model calls to a valid value, per provider",
        "",
        *stamp(),
        f"- run time: {time.monotonic() - started:.0f} s",
        "",
        "`.venv/bin/python benchmarks/bench_provider_calls.py`: the 29 scenarios of "
        "`benchmarks/scenarios/packs.jsonl` through each native client healjson wraps (the real "
        "SDK against a fresh scripted server per scenario, the pack's contracts and examples, "
        "the default policy). Floor: 1 call when the first reply holds the expected value "
        "(valid, or locally repairable), else 2.",
        "",
        *table(
            [
                "client and tier",
                "scenarios",
                "calls",
                "floor",
                "at the floor",
                "healed",
                "exceptions",
            ],
            rows,
        ),
        "",
        "Scenarios above the floor: " + ("; ".join(above) if above else "none."),
    ]
    publish(lines, RESULTS)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
