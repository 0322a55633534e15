"""Benchmark a DSPy program with its stock chat adapter against the same program with
`healjson.dspy.HealAdapter`.

Run from the repository root:

    .venv/bin/python benchmarks/bench_dspy.py [--runs 200] [--seed 25]

The workload is `agent_workload.generate(runs, seed)`'s tickets (the agent benchmarks' runs: 3
to 6 tool steps of `search`, `get_weather`, `book_room`, then a `Report`), played as a DSPy
program: one `dspy.Predict` per step, whose output fields are the step's arguments (the tool's
fields: `str`, `int`, a `Literal`), then one for the report. The program checks each step's
arguments against the tool's rule and predicts the step again (at most twice more) when it
breaks, then "runs" the tool (records its arguments). Both arms are that program with
`dspy.LM("openai/scripted-model")` over real HTTP to a `ScriptedServer` whose callable item
(`DSPyResponder`) answers each step: its first answer is the ticket in DSPy's chat format, or
broken the way DSPy's issues describe (seeded, `DSPY_MALFORMATIONS`): a field header in another
case, the answer as a JSON object, in a ```json fence, wrapped in an object, a number written as
a word, an answer cut by the token limit, a value breaking the tool's rule. Asked again (any
later request for the step), it answers clean: as a JSON object when the request is the JSON
adapter's (DSPy's fallback), else in the chat format.

- A (DSPy alone): `dspy.ChatAdapter()` (its default JSON-adapter fallback on a parse error);
- H (DSPy + healjson): `HealAdapter(contracts=...)` around it, the tools' rules as contracts.

Per arm: LM calls, tokens (the request's messages as JSON / 4, the answer / 4), runs failed (an
exception out of the program), wrong values (each executed step and the report against its
ticket: `agent_workload.check_run`), wall time (indicative). Again with a stubborn model, which
repeats its first (broken) answer once when asked again (`--stubborn-runs`, default the first
100 runs). Results are printed and written to `benchmarks/results/dspy.md`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import re
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any, Final, Literal

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # DSPy's model map: its own copy

import dspy
from pydantic import BaseModel

import healjson
from _machine import ROOT, machine, publish, stamp, table
from agent_workload import RULES, TOOLS, Report, Run, breach, check_run, generate
from healjson.dspy import HealAdapter
from healjson.testing import ScriptedReply, ScriptedServer

RESULTS = ROOT / "benchmarks" / "results" / "dspy.md"

DSPY_MALFORMATIONS: Final = (
    "clean",
    "header_case",
    "json_answer",
    "fenced_json",
    "wrapped_json",
    "number_word",
    "cut",
    "contract_breach",
)
DSPY_WEIGHTS: Final = (44, 8, 8, 8, 8, 8, 8, 8)
_WORDS: Final = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
]
_STEP = re.compile(r"run (\d+) step (\d+)")


def _make_signature(name: str, model: type[BaseModel]) -> Any:
    fields: dict[str, Any] = {"step": (str, dspy.InputField())}
    for key, info in model.model_fields.items():
        fields[key] = (info.annotation, dspy.OutputField())
    return dspy.Signature(fields, f"Give the fields of `{name}` for the step.")


SIGNATURES: Final = {
    **{name: _make_signature(name, model) for name, model in TOOLS.items()},
    "report": _make_signature("report", Report),
}


# ---------------------------------------------------------------------------------------------
# The answers: the tickets, in DSPy's chat format or broken
# ---------------------------------------------------------------------------------------------


def chat_text(ticket: Mapping[str, Any]) -> str:
    parts = [f"[[ ## {key} ## ]]\n{value}" for key, value in ticket.items()]
    return "\n\n".join([*parts, "[[ ## completed ## ]]"])


def broken(kind: str, name: str, ticket: Mapping[str, Any], rng: random.Random) -> str:
    """The step's first answer, broken as `kind` says (`clean`: as the chat format wants)."""
    if kind == "header_case":
        key = rng.choice(list(ticket))
        return chat_text({(k.capitalize() if k == key else k): v for k, v in ticket.items()})
    if kind == "json_answer":
        return json.dumps(dict(ticket))
    if kind == "fenced_json":
        return "```json\n" + json.dumps(dict(ticket), indent=2) + "\n```"
    if kind == "wrapped_json":
        return json.dumps({"output": dict(ticket)})
    if kind == "number_word":
        ints = [k for k, v in ticket.items() if isinstance(v, int) and 0 <= v < len(_WORDS)]
        if ints:
            key = rng.choice(ints)
            return chat_text({**ticket, key: _WORDS[ticket[key]]})
    if kind == "cut":
        whole = chat_text(ticket)
        return whole[: whole.rindex("[[ ## ", 0, whole.rindex("[[ ## completed"))]
    if kind == "contract_breach" and name in TOOLS:
        key, low, high = RULES[name]
        return chat_text({**ticket, key: rng.choice((low - 1, high * 10))})
    return chat_text(ticket)


@dataclass(frozen=True, slots=True)
class Step:
    name: str
    ticket: dict[str, Any]
    malformation: str
    text: str


def steps_of(run: Run, seed: int) -> list[Step]:
    """The run's steps with their first answers (seeded per run)."""
    rng = random.Random(f"{seed}-{run.index}")
    out = []
    for turn in run.turns:
        name = turn.name if turn.kind == "tool" else "report"
        choices = DSPY_MALFORMATIONS if turn.kind == "tool" else DSPY_MALFORMATIONS[:-1]
        kind = rng.choices(choices, DSPY_WEIGHTS[: len(choices)])[0]
        out.append(Step(name, turn.ticket, kind, broken(kind, name, turn.ticket, rng)))
    return out


@dataclass
class DSPyResponder:
    """Answers one run's LM requests (the callable item of a `ScriptedServer(repeat=True)`):
    each request names its step (`run R step S` in the user's message); the step's first
    request gets its first answer, a later one the clean answer (JSON for the JSON adapter's
    request: `_json_request`), or with `repeats=N` the first answer N more times before that."""

    steps: list[Step] = field(default_factory=list)
    repeats: int = 0
    asked: Counter[int] = field(default_factory=Counter)
    served: list[tuple[int, int, int]] = field(default_factory=list)  # (step, prompt, answer)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def set_steps(self, steps: list[Step]) -> None:
        with self._lock:
            self.steps, self.asked, self.served = steps, Counter(), []

    def __call__(self, body: dict[str, Any]) -> ScriptedReply:
        with self._lock:
            messages = body.get("messages") or []
            found = next(
                (
                    _STEP.search(str(m.get("content")))
                    for m in messages
                    if m.get("role") == "user" and _STEP.search(str(m.get("content")))
                ),
                None,
            )
            index = int(found.group(2)) if found else 0
            step = self.steps[index]
            self.asked[index] += 1
            first = self.asked[index] <= 1 + self.repeats
            if first:
                text = step.text
            elif _json_request(messages):
                text = json.dumps(step.ticket)
            else:
                text = chat_text(step.ticket)
            finish = "length" if first and step.malformation == "cut" else "stop"
            prompt, answer = len(json.dumps(messages)) // 4, len(text) // 4
            self.served.append((index, prompt, answer))
            usage = {"prompt_tokens": prompt, "completion_tokens": answer}
            return ScriptedReply(content=text, finish_reason=finish, usage=usage)


def _json_request(messages: list[Any]) -> bool:
    """Whether the request is the JSON adapter's (DSPy's fallback): its user turn asks for a
    JSON object."""
    last = messages[-1] if messages else {}
    return "Respond with a JSON object" in str(last.get("content"))


# ---------------------------------------------------------------------------------------------
# The program
# ---------------------------------------------------------------------------------------------


class Planner(dspy.Module):  # type: ignore[misc]
    """One prediction per step (predicted again, at most twice, when the tool's rule breaks),
    then the report."""

    def __init__(self) -> None:
        super().__init__()
        self.predict = {name: dspy.Predict(signature) for name, signature in SIGNATURES.items()}

    def forward(self, run: Run, steps: list[Step], executed: list[Any]) -> dict[str, Any]:
        for number, step in enumerate(steps[:-1]):
            for _ in range(3):
                found = self.predict[step.name](step=f"run {run.index} step {number}: {step.name}")
                args = {key: found[key] for key in TOOLS[step.name].model_fields}
                if breach(step.name, args) is None:
                    break
            else:
                raise ValueError(f"{step.name}: the rule still breaks after 3 predictions")
            executed.append((step.name, args))
        last = len(steps) - 1
        found = self.predict["report"](step=f"run {run.index} step {last}: report")
        return {key: found[key] for key in Report.model_fields}


@dataclass
class Arm:
    name: str
    adapter: Any
    server: ScriptedServer
    responder: DSPyResponder
    lm: Any
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failed: int = 0
    wrong: int = 0
    wall_s: float = 0.0
    failures: Counter[str] = field(default_factory=Counter)
    failed_runs: set[int] = field(default_factory=set)
    failed_on: Counter[str] = field(default_factory=Counter)
    extra_calls: Counter[str] = field(default_factory=Counter)
    calls_by_run: dict[int, int] = field(default_factory=dict)


def make_arm(name: Literal["A", "H"], repeats: int) -> Arm:
    responder = DSPyResponder(repeats=repeats)
    server = ScriptedServer([responder], repeat=True).start()
    lm = dspy.LM("openai/scripted-model", api_base=server.base_url, api_key="sk-test", cache=False)
    if name == "A":
        adapter: Any = dspy.ChatAdapter()
    else:

        @healjson.contract()
        def tool_rule(value: Any) -> healjson.Violation | None:
            data = value.model_dump()
            for tool, (key, _, _) in RULES.items():
                if set(data) == set(TOOLS[tool].model_fields) and key in data:
                    broken_rule = breach(tool, data)
                    return healjson.Violation(broken_rule) if broken_rule else None
            return None

        adapter = HealAdapter(contracts=[tool_rule])
    return Arm(name, adapter, server, responder, lm)


def run_one(arm: Arm, program: Planner, run: Run, steps: list[Step]) -> None:
    arm.responder.set_steps(steps)
    executed: list[tuple[str, dict[str, Any]]] = []
    output: Mapping[str, Any] | None = None
    started = time.perf_counter()
    try:
        with dspy.context(lm=arm.lm, adapter=arm.adapter):
            output = program(run=run, steps=steps, executed=executed)
    except Exception as exc:
        arm.failed += 1
        arm.failures[type(exc).__name__] += 1
        arm.failed_runs.add(run.index)
        last = arm.responder.served[-1][0] if arm.responder.served else 0
        arm.failed_on[steps[last].malformation] += 1
    arm.wall_s += time.perf_counter() - started
    arm.calls += len(arm.responder.served)
    arm.calls_by_run[run.index] = len(arm.responder.served)
    arm.prompt_tokens += sum(p for _, p, _ in arm.responder.served)
    arm.completion_tokens += sum(a for _, _, a in arm.responder.served)
    arm.wrong += check_run(run, executed, output)
    for index, count in arm.responder.asked.items():
        arm.extra_calls[steps[index].malformation] += count - 1


def play(runs: list[Run], seed: int, repeats: int) -> list[Arm]:
    arms = [make_arm("A", repeats), make_arm("H", repeats)]
    program = Planner()
    try:
        for run in runs:
            steps = steps_of(run, seed)
            for arm in arms if run.index % 2 == 0 else arms[::-1]:
                run_one(arm, program, run, steps)
    finally:
        for arm in arms:
            arm.lm.close()
            arm.server.stop()
    return arms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--stubborn-runs", type=int, default=100)
    args = parser.parse_args()
    logging.getLogger("healjson").setLevel(logging.CRITICAL)
    logging.getLogger("dspy").setLevel(logging.CRITICAL)
    started = time.perf_counter()
    runs = generate(args.runs, args.seed)
    arms = play(runs, args.seed, 0)
    stubborn = play(runs[: args.stubborn_runs], args.seed, 1)
    elapsed = time.perf_counter() - started
    publish(report(runs, arms, stubborn, args, elapsed), RESULTS, f" in {elapsed:.0f} s")
    ok = all(
        paired(pair)[1] < paired(pair)[0]
        and pair[1].wrong == 0
        and pair[1].failed <= pair[0].failed
        for pair in (arms, stubborn)
    )
    return 0 if ok else 1


def mix_of(runs: list[Run], seed: int) -> Counter[str]:
    return Counter(step.malformation for run in runs for step in steps_of(run, seed))


def arm_rows(arms: list[Arm], runs: int) -> list[list[str]]:
    return [
        [
            "DSPy alone (ChatAdapter)" if arm.name == "A" else "DSPy + HealAdapter",
            str(runs),
            str(arm.failed) + (f" ({dict(arm.failures)})" if arm.failures else ""),
            f"{arm.calls:,}",
            f"{arm.calls / runs:.2f}",
            f"{arm.prompt_tokens:,}",
            f"{arm.completion_tokens:,}",
            str(arm.wrong),
            f"{arm.wall_s:.1f}",
        ]
        for arm in arms
    ]


HEADER: Final = [
    "arm",
    "runs",
    "failed",
    "LM calls",
    "calls / run",
    "prompt tok",
    "completion tok",
    "wrong values",
    "wall s (indicative)",
]


def paired(arms: list[Arm]) -> tuple[int, int, int]:
    """(calls alone, calls healjson, runs) over the runs both arms completed: the same work."""
    alone, healed = arms
    done = [i for i in alone.calls_by_run if i not in alone.failed_runs | healed.failed_runs]
    return (
        sum(alone.calls_by_run[i] for i in done),
        sum(healed.calls_by_run[i] for i in done),
        len(done),
    )


def verdict(alone: Arm, healed: Arm) -> list[str]:
    calls_alone, calls_healed, both = paired([alone, healed])
    fewer = 1 - calls_healed / calls_alone if calls_alone else 0.0
    return [
        f"- LM calls on the {both} runs both arms completed (the same work): HealAdapter "
        f"{calls_healed:,}, ChatAdapter {calls_alone:,}: **{fewer:.1%} fewer** (target: fewer) "
        "— " + ("met" if calls_healed < calls_alone else "missed"),
        f"- LM calls in all: HealAdapter {healed.calls:,}, ChatAdapter {alone.calls:,} (a failed "
        "run stops early)",
        f"- runs failed: HealAdapter {healed.failed}, ChatAdapter {alone.failed} (target: "
        "fewer) — "
        + (
            "met"
            if healed.failed < alone.failed
            else "equal (neither arm fails)"
            if healed.failed == alone.failed == 0
            else "missed"
        ),
        f"- wrong values: HealAdapter {healed.wrong}, ChatAdapter {alone.wrong} (target: 0) — "
        + ("met" if healed.wrong == 0 else "missed"),
    ]


def report(
    runs: list[Run],
    arms: list[Arm],
    stubborn: list[Arm],
    args: argparse.Namespace,
    elapsed: float,
) -> list[str]:
    alone, healed = arms
    mix = mix_of(runs, args.seed)
    steps = sum(mix.values())
    return [
        "# DSPy program: the stock chat adapter vs HealAdapter",
        "",
        *stamp(),
        f"- healjson {version('healjson')}, dspy {version('dspy')}, openai {version('openai')}, "
        f"pydantic {version('pydantic')}",
        *machine(),
        f"- run time: {elapsed:.0f} s",
        "",
        "## Targets (a model that answers a re-ask cleanly)",
        "",
        *verdict(alone, healed),
        "",
        "## Targets (a stubborn model: its broken answer once more; the first "
        f"{args.stubborn_runs} runs)",
        "",
        *verdict(*stubborn),
        "",
        "## Workload",
        "",
        f"`agent_workload.generate(runs={args.runs}, seed={args.seed})`'s tickets as {len(runs)} "
        f"runs of a DSPy program ({steps} predictions, the fewest LM calls the runs can make); "
        "first answers by malformation: "
        + ", ".join(f"{name} {mix[name]}" for name in DSPY_MALFORMATIONS)
        + ". Both arms: the same `Planner` program, `dspy.LM('openai/scripted-model', "
        "cache=False)`; A with `dspy.ChatAdapter()`, H with `HealAdapter(contracts=[tool "
        "rules])` around it. Arms alternate run by run.",
        "",
        "## Per arm",
        "",
        *table(HEADER, arm_rows(arms, len(runs))),
        "",
        f"Stubborn model, the first {args.stubborn_runs} runs:",
        "",
        *table(HEADER, arm_rows(stubborn, args.stubborn_runs)),
        "",
        "## By malformation (a model that answers a re-ask cleanly)",
        "",
        *table(
            [
                "malformation",
                "predictions",
                "extra calls alone",
                "extra calls healjson",
                "failed runs alone",
                "failed runs healjson",
            ],
            [
                [
                    name,
                    str(mix[name]),
                    str(alone.extra_calls[name]),
                    str(healed.extra_calls[name]),
                    str(alone.failed_on[name]),
                    str(healed.failed_on[name]),
                ]
                for name in DSPY_MALFORMATIONS
            ],
        ),
        "",
        "Reading it: the chat adapter fails to parse a header in another case, a JSON answer "
        "(bare, fenced or wrapped) and a number written as a word, and re-issues the whole "
        "generation through its JSON adapter: one more call each. HealAdapter reads them "
        "locally. An answer cut by the token limit costs both one more call (nothing local may "
        "finish it); a rule breach costs both one more call (the program's own re-prediction "
        "for the stock adapter, healjson's repair with the diagnostic for HealAdapter). With "
        "a stubborn model the JSON fallback gets the broken answer again and fails the run; "
        "HealAdapter heals the repeat as it healed the first. Wall time: indicative (a shared "
        "2-core machine); the other figures are exact and the same on every run.",
    ]


if __name__ == "__main__":
    raise SystemExit(main())
