"""The cost of getting a valid value: calls, wrong values and dollars, on public failed outputs
and on the scripted scenario set.

Run from the repository root:

    .venv/bin/python benchmarks/bench_cost.py

Part 1: real failed outputs. The model replies of two public test suites, kept in
`tests/corpus/` with their attribution and licences (BAML's `jsonish` parser tests, Apache-2.0;
json_repair's tests, MIT; see its README): every reply that is *not* strict JSON (what a plain
`json.loads` + validation would reject) with the value its suite expects, and every reply that
holds no answer at all (BAML's must-fail rows, json_repair's "no JSON found" rows). For each
contender and reply: **recovered without a call** (a value, equal to the expected one, read
locally), **wrong value** (a value that is not the expected one, or any value from a reply with
no answer: a silent error), or a **re-ask** (the contender asks the model again). Calls to valid
count the first call plus one re-ask, assuming the re-ask answers well (a lower bound for all
contenders alike). Contenders:

- healjson: `healjson.validate(reply, T)` (L1 + L2, the schema as a type, no call);
- json_repair (installed): `json_repair.loads(reply)`, then the same validation (lax);
- instructor `Mode.JSON`, modelled: its JSON mode parses the reply with
  `model_validate_json` and re-asks on any failure (measured against the scripted server in
  `bench_calls.py`); here that parse, applied to each reply;
- BAML's parser: `baml-py` needs a generated `baml_client` project and does not expose its parser
  alone; its recorded behaviour is the BAML rows' expected values (BAML produced them), so on its
  own rows it recovers every value by definition, and on json_repair's rows it is not measured.

StructuredRAG's failed generations are not included: its public repository (weaviate/
structured-rag) keeps only aggregate scores for the 2024 trials the paper reports, and the full
responses of two 2026 runs (AssessAnswerability on gpt-5.4-mini / nano) that parsed, so there is
no set of failed outputs with expected values to read.

Part 2: dollars to valid on `benchmarks/scenarios/packs.jsonl` (29 scenarios, every malformation
class on the three contract packs; `bench_calls.py`'s runs: healjson against instructor
`Mode.JSON` over the real OpenAI SDK and the scripted server), priced as gpt-4o-mini through
genai-prices, with prompt caching accounted as OpenAI applies it: a request whose first 1,024 or
more tokens (in steps of 128) repeat an earlier request of the same run, byte for byte, reads them
from the cache at the cached-input price. Tokens are characters / 4 of what each request sent
(messages, `response_format`, tools), as the scripted server counts. Twice: the scenarios' own
short prompts (below OpenAI's 1,024-token minimum: nothing is cached), and with a 2,000-token
system prompt shared by every request (what production prompts look like). A third row runs
healjson's scenarios again with a `ResponseCache`: the second pass is served from it.

Results are printed and written to `benchmarks/results/cost.md`.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import json_repair
from genai_prices import Usage as PriceUsage
from genai_prices import calc_price
from pydantic import TypeAdapter
from pydantic_core import to_json

import healjson
from _machine import machine, publish, stamp, table
from bench_calls import Case, Run, _outside_messages, load_cases, run_healjson, run_instructor
from corpus_agreement import Unsupported, load, row_schema, same, type_from_schema
from healjson.testing._wire import content_text

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "cost.md"
PRICED_MODEL = "gpt-4o-mini"
CACHE_MIN, CACHE_STEP = 1_024, 128
LONG_SYSTEM = ("You are a careful extraction service for a large support organisation. " * 220)[
    :8_000
]  # ~2,000 tokens at 4 characters a token


# --- part 1: real failed outputs ----------------------------------------------------------------


@dataclass
class Tally:
    rows: int = 0
    local: int = 0
    wrong: int = 0
    reask: int = 0
    wrong_ids: list[str] = field(default_factory=list)

    def add(self, verdict: str, row_id: str) -> None:
        self.rows += 1
        if verdict == "local":
            self.local += 1
        elif verdict == "wrong":
            self.wrong += 1
            self.wrong_ids.append(row_id)
        else:
            self.reask += 1


def _validated(value: Any, target: Any) -> tuple[bool, Any]:
    """`value` validated (lax) against `target`, dumped back to JSON data."""
    if target is None:
        return True, value
    adapter = TypeAdapter(target)
    try:
        instance = adapter.validate_json(to_json(value, inf_nan_mode="constants"))
    except Exception:
        return False, None
    return True, adapter.dump_python(instance, mode="json", by_alias=True)


def _verdict(got: tuple[bool, Any] | None, row: dict[str, Any], no_answer: bool) -> str:
    """`local` (the expected value), `wrong` (another value, or any from no answer), `reask`."""
    if got is None or not got[0]:
        return "reask"
    if no_answer or not same(got[1], row["expected"]):
        return "wrong"
    return "local"


def healjson_reads(row: dict[str, Any], target: Any) -> tuple[bool, Any] | None:
    outcome = healjson.validate(row["input"], target if target is not None else Any)
    if not outcome.ok:
        return None
    return _validated(TypeAdapter(Any).dump_python(outcome.value, mode="json"), target)


def json_repair_reads(row: dict[str, Any], target: Any) -> tuple[bool, Any] | None:
    try:
        value = json_repair.loads(row["input"])
    except Exception:
        return None
    if value == "" and row["input"].strip() not in ('""', "''"):
        return None  # json_repair's "no JSON found"
    return _validated(value, target)


def instructor_reads(row: dict[str, Any], target: Any) -> tuple[bool, Any] | None:
    adapter = TypeAdapter(target if target is not None else Any)
    try:
        instance = adapter.validate_json(row["input"])
    except Exception:
        return None
    return True, adapter.dump_python(instance, mode="json", by_alias=True)


CONTENDERS = {
    "healjson": healjson_reads,
    "json_repair": json_repair_reads,
    "instructor `Mode.JSON` (modelled)": instructor_reads,
}


def corpus_rows() -> list[tuple[str, dict[str, Any], Any, bool]]:
    """(set, row, target, no_answer) for every failed output of the two corpora."""
    out = []
    for row in load("json_repair_dev.jsonl"):
        options = row.get("options") or {}
        if row.get("input_is_strict_json") or "schema" in options or "strict" in options:
            continue
        if row["outcome"] in ("value", "empty"):
            out.append(("json_repair", row, None, row["outcome"] == "empty"))
    for row in load("baml_dev.jsonl"):
        if row.get("input_is_strict_json") or row.get("needs_alias"):
            continue
        try:
            target = type_from_schema(row_schema(row))
        except Unsupported:
            continue
        out.append(("BAML", row, target, row["outcome"] == "error"))
    return out


def part_one(lines: list[str]) -> None:
    rows = corpus_rows()
    tallies: dict[tuple[str, str], Tally] = {}
    for source, row, target, no_answer in rows:
        for name, reads in CONTENDERS.items():
            got = reads(row, target)
            tallies.setdefault((name, source), Tally()).add(
                _verdict(got, row, no_answer), row["id"]
            )
            tallies.setdefault((name, "all"), Tally()).add(_verdict(got, row, no_answer), row["id"])
    baml_rows = [r for s, r, _, _ in rows if s == "BAML"]
    baml_values = sum(1 for r in baml_rows if r["outcome"] == "value")
    lines += ["## Part 1: public failed outputs (no model call made)", ""]
    counts = {s: sum(1 for src, *_ in rows if src == s) for s in ("json_repair", "BAML")}
    empty = sum(1 for src, _, _, none in rows if none)
    lines.append(
        f"{len(rows)} replies that are not strict JSON: {counts['json_repair']} from json_repair's "
        f"tests, {counts['BAML']} from BAML's; {empty} of them hold no answer at all (a value "
        "read from one is a wrong value). json_repair's rows carry no schema (read as any JSON "
        "value); BAML's are read against their target type."
    )
    lines.append("")
    body = []
    for source in ("json_repair", "BAML", "all"):
        for name in CONTENDERS:
            tally = tallies[(name, source)]
            calls = (tally.local + tally.wrong + 2 * tally.reask) / tally.rows
            body.append(
                [
                    source,
                    name,
                    f"{tally.local} ({tally.local / tally.rows:.0%})",
                    str(tally.wrong),
                    str(tally.reask),
                    f"{calls:.2f}",
                ]
            )
        if source == "BAML":
            body.append(
                [source, "BAML's parser (recorded: its own expected values)", f"{baml_values}",
                 "0 by definition", str(len(baml_rows) - baml_values), "-"]
            )  # fmt: skip
    lines += table(
        ["replies", "contender", "recovered without a call", "wrong values", "re-asks",
         "calls to valid (lower bound)"],
        body,
    )  # fmt: skip
    lines.append("")
    for name in CONTENDERS:
        wrong = tallies[(name, "all")].wrong_ids
        if wrong:
            shown = ", ".join(f"`{i}`" for i in wrong[:12]) + (" ..." if len(wrong) > 12 else "")
            lines.append(f"- {name}, wrong values: {shown}")
    lines.append("")


# --- part 2: dollars to valid -------------------------------------------------------------------


def _request_texts(run: Run) -> list[str]:
    chats = [r for r in run.requests if r.method == "POST" and r.path.endswith("/completions")]
    out = []
    for request in chats:
        body = request.body or {}
        text = "".join(
            json.dumps(m, ensure_ascii=False, sort_keys=True) if not isinstance(m, dict) else
            f"{m.get('role')}:{content_text(m.get('content'))}\n"
            for m in request.messages
        )  # fmt: skip
        out.append(_outside_messages(body) + text)
    return out


def _cached_tokens(text: str, earlier: Sequence[str]) -> int:
    """Tokens of `text` OpenAI's cache can serve: the longest prefix shared byte for byte with an
    earlier request of the run, from 1,024 tokens on, in steps of 128."""
    best = 0
    for other in earlier:
        n = 0
        limit = min(len(text), len(other))
        while n < limit and text[n] == other[n]:
            n += 1
        best = max(best, n)
    tokens = best // 4
    return 0 if tokens < CACHE_MIN else tokens - (tokens - CACHE_MIN) % CACHE_STEP


def dollars(run: Run, completion: int) -> tuple[float, int, int]:
    """USD of a run's requests (gpt-4o-mini, cached input at its price), prompt and cached
    tokens."""
    texts = _request_texts(run)
    prompt = sum(len(t) // 4 for t in texts)
    cached = sum(_cached_tokens(t, texts[:i]) for i, t in enumerate(texts))
    usage = PriceUsage(input_tokens=prompt, cache_read_tokens=cached, output_tokens=completion)
    price = calc_price(usage, model_ref=PRICED_MODEL, provider_id="openai")
    return float(price.total_price), prompt, cached


def with_system(case: Case, text: str) -> Case:
    """The case with a long shared system prompt in front of its messages."""
    scenario = case.scenario
    messages = [{"role": "system", "content": text}, *scenario.messages]
    changed = dataclasses.replace(scenario, messages=tuple(messages))
    return Case(case.pack_name, case.pack, changed, case.checked_model)


def part_two(lines: list[str]) -> None:
    cases = load_cases()
    calls = 3
    rows = []
    for label, long in (("scenario prompts (short)", False), ("+ 2,000-token system prompt", True)):
        totals: dict[str, list[float]] = {
            "healjson": [0, 0, 0, 0, 0],
            "instructor": [0, 0, 0, 0, 0],
        }
        for case in cases:
            used = with_system(case, LONG_SYSTEM) if long else case
            script = used.script(calls)
            for name, run in (
                ("healjson", run_healjson(used, script)),
                ("instructor", run_instructor(used, script)),
            ):
                cost, prompt, cached = dollars(run, run.completion_tokens)
                total = totals[name]
                total[0] += cost
                total[1] += run.calls
                total[2] += run.correct
                total[3] += prompt
                total[4] += cached
        for name, (cost, n_calls, correct, prompt, cached) in totals.items():
            rows.append(
                [label, name, f"{int(n_calls)}", f"{int(correct)}/{len(cases)}", f"{int(prompt):,}",
                 f"{int(cached):,}", f"${cost / len(cases) * 1000:.4f}",
                 f"${cost / max(correct, 1) * 1000:.4f}"]
            )  # fmt: skip
    first = second = 0
    for case in cases:
        store = healjson.ResponseCache.memory()  # per scenario: their prompts repeat across classes
        for passes in (1, 2):
            from healjson.testing import ScriptedServer

            with ScriptedServer(case.script(calls)) as server:
                import openai

                client = healjson.wrap(
                    openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0),
                    cache=store,
                )
                client.chat.completions.create(
                    model="gpt-4o-mini",
                    messages=case.messages,
                    response_model=case.pack.model,
                    contracts=case.pack.contracts,
                    examples=case.pack.examples,
                )
                if passes == 1:
                    first += len(server.requests)
                else:
                    second += len(server.requests)
    lines += ["## Part 2: dollars to valid on the scripted scenario set", ""]
    lines += table(
        ["prompts", "contender", "model calls", "expected value", "prompt tokens",
         "of which cached", "USD per 1,000 scenarios", "USD per 1,000 valid values"],
        rows,
    )  # fmt: skip
    lines += [
        "",
        f"With a `ResponseCache` (one per scenario: the scenarios of a pack share their prompt), "
        f"the {len(cases)} scenarios made {first} model calls the first time and {second} the "
        "second time: every answer served from the cache and judged again, $0 and no latency.",
        "",
    ]


def main() -> int:
    lines = ["# Cost to valid", "", *stamp(), *machine()]
    lines += [
        f"- healjson {version('healjson')}, json_repair {version('json-repair')}, instructor "
        f"{version('instructor')}, genai-prices {version('genai-prices')}",
        "",
    ]
    part_one(lines)
    part_two(lines)
    publish(lines, RESULTS)
    return 0


if __name__ == "__main__":
    sys.exit(main())
