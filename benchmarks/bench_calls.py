"""Benchmark model calls and tokens to a valid value: healjson against instructor.

Run from the repository root:

    .venv/bin/python benchmarks/bench_calls.py

The scenarios are `benchmarks/scenarios/packs.jsonl` (built by `pack_scenarios.py`): every
malformation class of `healjson._cli.scenarios.malformations` (fenced JSON, prose around the JSON, a
trailing comma, single quotes, Python literals, a quoted number, two candidates of which the
second validates, a truncated answer, a schema violation, a contract violation, a valid first
answer) on each of the three contract packs in `healjson_contracts` (support tickets, invoices,
itineraries), derived from the pack's first golden example; a class that does not apply to that
value is left out. Each scenario is a scripted sequence of model replies ending with the good
answer, padded with it up to the most calls either contender may make, so neither runs out
because the other needed fewer. Both contenders talk to a fresh `healjson.testing.ScriptedServer`
per scenario through the real OpenAI SDK (`max_retries=0`):

- H: `healjson.wrap(OpenAI())` with the default policy (`max_attempts=3`), the pack's contracts
  and golden examples (`contracts=pack.contracts, examples=pack.examples`);
- I: `instructor.from_openai(OpenAI(), mode=Mode.JSON)` with `max_retries=2` (up to 3 calls), on
  a subclass of the pack's model whose pydantic `model_validator` runs the same contracts (under
  the same request, for the rule that reads the customer's message) and raises `ValueError` with
  their messages, so that instructor retries on them; `Mode.MD_JSON` the same, for reference.

Per scenario it records the model calls (the server's request count), whether a valid value came
back (and whether it is the expected one), exceptions raised to the caller, and tokens. Tokens use
the server's own estimate, characters / 4 (prompt: the text of every message; completion: the
reply's content); healjson's summed `usage` is checked against it. That estimate leaves out what a
request carries outside its messages, so a second prompt figure adds `response_format` / `tools`
(JSON text / 4): healjson sends its strict JSON schema there, instructor's JSON mode sends its
schema inside a message. tiktoken (`o200k_base`) is used too when it is installed with its
encoding cached (never downloaded here).

A third part compares the packs' rule policies (`@contract(on_fail=...)`) with the same rules
all `on_fail="reask"`, healjson against itself: on the scenarios of `policy_scenarios()` (a
schema-valid first reply that breaks a rule a pack declares `on_fail="fix"`, then the good value)
and on the scenarios above.

A second part sends an always-invalid reply with up to 5 attempts each (healjson
`max_attempts=5`, instructor `max_retries=4`) on the support-ticket pack and tabulates the size of
every request's messages.

Results are printed and written to `benchmarks/results/calls.md`.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import logging
import os
import platform
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

import openai
import pydantic
from pydantic import BaseModel, ConfigDict, model_validator

import healjson
from _machine import processor, publish, stamp, table
from healjson._cli.scenarios import CLASSES, EvalScenario
from healjson.testing import RecordedRequest, ScriptedReply, ScriptedServer
from healjson.testing._wire import content_text
from pack_scenarios import pack_scenarios, policy_scenarios

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "calls.md"
logging.getLogger("instructor").setLevel(logging.CRITICAL + 1)  # it logs every failed retry

TARGET_FEWER_CALLS = 0.25  # issue target: >= 25% fewer model calls than instructor, 0 exceptions
MAX_CALLS = 3  # healjson max_attempts=3; instructor max_retries=2
GROWTH_ATTEMPTS = 5
LONG_ATTEMPTS = 8
GROWTH_PACK = "support_ticket"
MODEL_NAME = "gpt-4o-mini"

try:  # only if it is installed and its encoding is cached locally: never download here
    os.environ.setdefault("TIKTOKEN_OFFLINE", "1")
    import tiktoken

    ENCODING: Any = tiktoken.get_encoding("o200k_base")
except Exception as exc:  # ImportError, or no cached encoding offline
    ENCODING = None
    TIKTOKEN_STATE = f"not available ({type(exc).__name__}: {exc})"
else:
    TIKTOKEN_STATE = f"tiktoken {version('tiktoken')}, `o200k_base`"


# --- the pack's contracts as a pydantic validator, for instructor ------------------------------


def contract_problems(
    contracts: Iterable[healjson.Contract], value: Any, ctx: healjson.ContractContext
) -> list[str]:
    """Every broken rule as one line: the constraint and the prescription, as healjson states it.

    Generic over the `Contract` protocol: a rule returns None (or True), a `Violation`, a string,
    False, or an iterable of those; `Contract.__call__` passes `ctx` only to rules that take it.
    """
    out: list[str] = []

    def collect(rule: healjson.Contract, result: Any) -> None:
        if result is None or result is True:
            return
        if result is False:
            out.append(f"{rule.name}: {rule.description or 'rule broken'}")
        elif isinstance(result, str):
            out.append(f"{rule.name}: {result}")
        elif isinstance(result, healjson.Violation):
            fix = f" Fix: {result.prescription}" if result.prescription else ""
            out.append(f"{rule.name}: {result.constraint}.{fix}")
        elif isinstance(result, Iterable):
            for item in result:
                collect(rule, item)
        else:
            raise TypeError(f"contract {rule.name} returned {result!r}")

    for rule in contracts:
        result = rule(value, ctx)
        if inspect.isawaitable(result):
            raise TypeError(f"contract {rule.name} is async; a pydantic validator cannot await it")
        collect(rule, result)
    return out


def with_contracts(
    pack: healjson.ContractPack, messages: Sequence[Mapping[str, Any]]
) -> type[BaseModel]:
    """A subclass of the pack's model whose `model_validator` runs the pack's contracts.

    The request is bound here (`messages`), so a rule that reads the customer's message sees the
    same text it sees under healjson. Same name, JSON-schema title and docstring as the model, so
    instructor sends the same schema healjson does.
    """
    model: type[BaseModel] = pack.model
    rules = pack.contracts
    ctx = healjson.ContractContext(messages=tuple(dict(m) for m in messages))

    class WithContracts(model):  # type: ignore[misc, valid-type]
        __doc__ = model.__doc__
        model_config = ConfigDict(title=model.__name__)

        @model_validator(mode="after")
        def _pack_contracts(self) -> Any:
            problems = contract_problems(rules, self, ctx)
            if problems:
                raise ValueError("; ".join(problems))
            return self

    WithContracts.__name__ = WithContracts.__qualname__ = model.__name__
    return WithContracts


# --- the scenarios -----------------------------------------------------------------------------

Item = str | ScriptedReply


@dataclass(frozen=True)
class Case:
    """One scenario of one pack, with what each contender is given."""

    pack_name: str
    pack: healjson.ContractPack
    scenario: EvalScenario
    checked_model: type[BaseModel]  # instructor's response_model: the pack's model + contracts

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [dict(m) for m in self.scenario.messages]

    @property
    def ctx(self) -> healjson.ContractContext:
        return healjson.ContractContext(messages=tuple(self.messages))

    def script(self, calls: int) -> list[Item]:
        """The replies, padded with the last (good) one up to `calls`."""
        return [_item(reply) for reply in self.scenario.script(calls)]

    def stubborn_script(self, calls: int) -> list[Item]:
        """A model that repeats its first, malformed reply every time it is asked."""
        return [_item(self.scenario.replies[0])] * calls


def _item(reply: str | Mapping[str, Any]) -> Item:
    return reply if isinstance(reply, str) else ScriptedReply(**dict(reply))


def load_cases() -> list[Case]:
    cases = []
    for name, pack, scenarios in pack_scenarios():
        checked: dict[tuple[str, ...], type[BaseModel]] = {}
        for scenario in scenarios:
            key = tuple(json.dumps(m, sort_keys=True) for m in scenario.messages)
            if key not in checked:
                checked[key] = with_contracts(pack, scenario.messages)
            cases.append(Case(name, pack, scenario, checked[key]))
    return cases


# --- running one scenario ----------------------------------------------------------------------


@dataclass
class Run:
    calls: int = 0
    valid: bool = False
    correct: bool = False
    exception: str | None = None
    prompt_tokens: int = 0
    prompt_tokens_with_format: int = 0
    completion_tokens: int = 0
    tiktoken_prompt: int | None = None
    tiktoken_completion: int | None = None
    requests: list[RecordedRequest] = field(default_factory=list)


def _content(item: Item) -> str:
    return item if isinstance(item, str) else item.content or ""


def _outside_messages(body: dict[str, Any]) -> str:
    """What a request sends the model besides its messages: `response_format`, `tools`."""
    extra = {key: body[key] for key in ("response_format", "tools") if key in body}
    return json.dumps(extra, separators=(",", ":")) if extra else ""


def _account(run: Run, script: Sequence[Item]) -> None:
    chats = [r for r in run.requests if r.method == "POST" and r.path.endswith("/completions")]
    run.calls = len(chats)
    tik_prompt = tik_completion = 0
    for index, request in enumerate(chats):
        body = request.body or {}
        text = "".join(
            content_text(m.get("content")) for m in request.messages if isinstance(m, dict)
        )
        run.prompt_tokens += len(text) // 4  # the server's formula (per request)
        run.prompt_tokens_with_format += (len(text) + len(_outside_messages(body))) // 4
        served = _content(script[index]) if index < len(script) else ""
        run.completion_tokens += len(served) // 4
        if ENCODING is not None:
            tik_prompt += len(ENCODING.encode(text + _outside_messages(body)))
            tik_completion += len(ENCODING.encode(served))
    if ENCODING is not None:
        run.tiktoken_prompt, run.tiktoken_completion = tik_prompt, tik_completion


def _is_expected(case: Case, value: BaseModel) -> bool:
    """`value` (either contender's instance) equals the scenario's expected value.

    Compared as instances of the pack's model (so `Decimal("120") == Decimal("120.0")`).
    """
    if not case.scenario.has_expected:
        return True
    model = case.pack.model
    mine = model.model_validate(value.model_dump())
    return bool(mine == model.model_validate(case.scenario.expected))


def _valid(case: Case, value: BaseModel) -> bool:
    """Schema and every contract, checked independently of either contender."""
    try:
        instance = case.pack.model.model_validate(value.model_dump())
    except pydantic.ValidationError:
        return False
    return not contract_problems(case.pack.contracts, instance, case.ctx)


def all_reask(rules: Sequence[healjson.Contract]) -> tuple[healjson.Contract, ...]:
    """The same rules, every one `on_fail="reask"` (the default before rule policies)."""
    return tuple(dataclasses.replace(rule, on_fail="reask", fix=None) for rule in rules)


def load_policy_cases() -> list[Case]:
    return [
        Case(name, pack, scenario, with_contracts(pack, scenario.messages))
        for name, pack, scenario in policy_scenarios()
    ]


def run_healjson(
    case: Case,
    script: Sequence[Item],
    policy: healjson.HealPolicy | None = None,
    *,
    contracts: Sequence[healjson.Contract] | None = None,
) -> Run:
    run = Run()
    with ScriptedServer(script) as server:
        client = healjson.wrap(
            openai.OpenAI(base_url=server.base_url, api_key="sk-bench", max_retries=0)
        )
        try:
            outcome = client.chat.completions.create(
                model=MODEL_NAME,
                messages=case.messages,
                response_model=case.pack.model,
                contracts=case.pack.contracts if contracts is None else contracts,
                examples=case.pack.examples,
                policy=policy,
            )
        except Exception as exc:
            run.exception = type(exc).__name__
        else:
            run.valid = outcome.ok and _valid(case, outcome.value)
            run.correct = run.valid and _is_expected(case, outcome.value)
        run.requests = server.requests
    _account(run, script)
    if run.exception is None:  # the server's reported usage, as healjson summed it
        usage = outcome.usage
        if (usage.prompt_tokens, usage.completion_tokens) != (
            run.prompt_tokens,
            run.completion_tokens,
        ):
            raise AssertionError(f"token accounting differs from the server's usage: {usage}")
    return run


def run_instructor(
    case: Case, script: Sequence[Item], max_retries: int = MAX_CALLS - 1, mode: str = "JSON"
) -> Run:
    import instructor  # its contenders only: instructor is installed in the floor venv

    run = Run()
    with ScriptedServer(script) as server:
        client = instructor.from_openai(
            openai.OpenAI(base_url=server.base_url, api_key="sk-bench", max_retries=0),
            mode=instructor.Mode[mode],
        )
        try:
            value = client.chat.completions.create(
                model=MODEL_NAME,
                messages=case.messages,
                response_model=case.checked_model,
                max_retries=max_retries,
            )
        except Exception as exc:
            run.exception = type(exc).__name__
        else:
            run.valid = _valid(case, value)
            run.correct = run.valid and _is_expected(case, value)
        run.requests = server.requests
    _account(run, script)
    return run


# --- part 2: prompt growth ---------------------------------------------------------------------

ALWAYS_INVALID = {
    "schema-invalid JSON": json.dumps(
        {"urgency": 9, "category": "shipping", "summary": "Bad", "orderId": "482913"}
    ),
    "no JSON (prose)": "I'm sorry, I can't tell which order this is about.",
}


def _sizes(run: Run) -> list[tuple[int, int, int]]:
    """(messages, characters of message text, request body bytes) per request."""
    out = []
    for request in run.requests:
        text = "".join(
            content_text(m.get("content")) for m in request.messages if isinstance(m, dict)
        )
        out.append((len(request.messages), len(text), len(request.raw)))
    return out


def bench_growth(case: Case, lines: list[str]) -> list[tuple[str, list[int], list[int]]]:
    summary = []
    for label, reply in ALWAYS_INVALID.items():
        script: list[Item] = [reply] * GROWTH_ATTEMPTS
        healed = run_healjson(case, script, healjson.HealPolicy(max_attempts=GROWTH_ATTEMPTS))
        ins = run_instructor(case, script, max_retries=GROWTH_ATTEMPTS - 1)
        h_sizes, i_sizes = _sizes(healed), _sizes(ins)
        rows = []
        for n in range(GROWTH_ATTEMPTS):
            h = h_sizes[n] if n < len(h_sizes) else None
            i = i_sizes[n] if n < len(i_sizes) else None
            rows.append(
                [
                    str(n + 1),
                    f"{h[0]}" if h else "-",
                    f"{h[1]:,}" if h else "-",
                    f"{h[2]:,}" if h else "-",
                    f"{i[0]}" if i else "-",
                    f"{i[1]:,}" if i else "-",
                    f"{i[2]:,}" if i else "-",
                ]
            )
        lines += [f"### Always {label}: `{reply[:90]}`", ""]
        lines += table(
            [
                "request",
                "healjson messages",
                "healjson message chars",
                "healjson body bytes",
                "instructor messages",
                "instructor message chars",
                "instructor body bytes",
            ],
            rows,
        )
        lines += [
            "",
            f"healjson: {healed.calls} calls, ended with "
            f"{'a value' if healed.valid else 'Degraded (no exception)'}; instructor: "
            f"{ins.calls} calls, raised `{ins.exception}`. Total prompt tokens (message text / 4): "
            f"healjson {healed.prompt_tokens:,}, instructor {ins.prompt_tokens:,}; with "
            f"`response_format`/`tools`: healjson {healed.prompt_tokens_with_format:,}, "
            f"instructor {ins.prompt_tokens_with_format:,}.",
            "",
        ]
        summary.append((label, [s[1] for s in h_sizes], [s[1] for s in i_sizes]))
    reply = ALWAYS_INVALID["schema-invalid JSON"]
    longer = run_healjson(
        case, [reply] * LONG_ATTEMPTS, healjson.HealPolicy(max_attempts=LONG_ATTEMPTS)
    )
    chars = [f"{size[1]:,}" for size in _sizes(longer)]
    lines += [
        f"Beyond 5: healjson with `max_attempts={LONG_ATTEMPTS}` on the schema-invalid reply, "
        f"message chars per request: {' → '.join(chars)} (a repair carries one short line per "
        "earlier attempt, up to a fixed cap, never the attempts verbatim).",
        "",
    ]
    return summary


# --- report ------------------------------------------------------------------------------------


def _outcome(run: Run) -> str:
    if run.exception:
        return f"raised `{run.exception}`"
    if run.correct:
        return "valid"
    if run.valid:
        return "valid, **not the expected value**"
    return "no value (Degraded)"


def environment() -> list[str]:
    return [
        "# healjson model-calls benchmark",
        "",
        *stamp(),
        f"- healjson {version('healjson')}, openai {openai.__version__}, instructor "
        f"{version('instructor')}, pydantic {pydantic.VERSION}",
        f"- platform: {platform.platform()}; processor: {processor()}",
        f"- tokens: characters / 4 (the scripted server's estimate); tiktoken: {TIKTOKEN_STATE}",
    ]


CONTENDERS = ("H", "I", "I-MD")
Result = tuple[Case, dict[str, Run]]


def run_all(case: Case, script: Sequence[Item]) -> dict[str, Run]:
    return {
        "H": run_healjson(case, script),
        "I": run_instructor(case, script),
        "I-MD": run_instructor(case, script, mode="MD_JSON"),
    }


def _sum(runs: Sequence[Run], attr: str) -> int:
    return sum(getattr(run, attr) for run in runs)


def _fewer(h: int, i: int) -> str:
    return f"{1 - h / i:.1%}" if i else "-"


def scenario_table(results: Sequence[Result], tokens: bool) -> list[str]:
    rows = []
    for case, runs in results:
        h, i, md = runs["H"], runs["I"], runs["I-MD"]
        row = [
            f"`{case.scenario.id}`",
            f"{h.calls} / {i.calls} / {md.calls}",
            _outcome(h),
            _outcome(i),
            _outcome(md),
        ]
        if tokens:
            row += [
                f"{h.prompt_tokens:,} / {i.prompt_tokens:,}",
                f"{h.prompt_tokens_with_format:,} / {i.prompt_tokens_with_format:,}",
                f"{h.completion_tokens:,} / {i.completion_tokens:,}",
            ]
            if ENCODING is not None:
                row.append(
                    f"{h.tiktoken_prompt:,}+{h.tiktoken_completion:,} / "
                    f"{i.tiktoken_prompt:,}+{i.tiktoken_completion:,}"
                )
        rows.append(row)
    header = ["scenario", "calls H / I / I-MD", "H (healjson)", "I (instructor)", "I-MD (ref.)"]
    if tokens:
        header += ["prompt tok H / I", "prompt tok incl. format H / I", "completion tok H / I"]
        if ENCODING is not None:
            header.append("tiktoken prompt+completion H / I")
    return table(header, rows)


def totals_table(results: Sequence[Result]) -> list[str]:
    n = len(results)
    by = {name: [runs[name] for _, runs in results] for name in CONTENDERS}

    def row(label: str, fn: Any) -> list[str]:
        return [label, *(fn(by[name]) for name in CONTENDERS)]

    rows = [
        row("model calls", lambda runs: str(_sum(runs, "calls"))),
        row(
            "healed (the expected value returned)",
            lambda runs: f"{sum(run.correct for run in runs)}/{n}",
        ),
        row(
            "exceptions raised to the caller",
            lambda runs: str(sum(1 for run in runs if run.exception)),
        ),
        row("prompt tokens (message text / 4)", lambda runs: f"{_sum(runs, 'prompt_tokens'):,}"),
        row(
            "prompt tokens incl. `response_format`/`tools`",
            lambda runs: f"{_sum(runs, 'prompt_tokens_with_format'):,}",
        ),
        row("completion tokens", lambda runs: f"{_sum(runs, 'completion_tokens'):,}"),
    ]
    if ENCODING is not None:
        rows.append(
            row(
                "tiktoken prompt + completion",
                lambda runs: (
                    f"{_sum(runs, 'tiktoken_prompt'):,} + {_sum(runs, 'tiktoken_completion'):,}"
                ),
            )
        )
    return table(
        ["", "healjson (H)", "instructor `Mode.JSON` (I)", "instructor `Mode.MD_JSON` (ref.)"],
        rows,
    )


def per_pack_table(results: Sequence[Result], packs: Sequence[str]) -> list[str]:
    rows = []
    for label, group in [
        *((name, [r for r in results if r[0].pack_name == name]) for name in packs),
        ("**all packs**", list(results)),
    ]:
        by = {name: [runs[name] for _, runs in group] for name in CONTENDERS}
        h, i = by["H"], by["I"]
        calls = [_sum(by[name], "calls") for name in CONTENDERS]
        rows.append(
            [
                label,
                str(len(group)),
                " / ".join(str(c) for c in calls),
                _fewer(calls[0], calls[1]),
                " / ".join(f"{sum(r.correct for r in by[name])}" for name in CONTENDERS),
                " / ".join(str(sum(1 for r in by[name] if r.exception)) for name in CONTENDERS),
                f"{_sum(h, 'prompt_tokens'):,} / {_sum(i, 'prompt_tokens'):,}",
                f"{_sum(h, 'prompt_tokens_with_format'):,} / "
                f"{_sum(i, 'prompt_tokens_with_format'):,}",
                f"{_sum(h, 'completion_tokens'):,} / {_sum(i, 'completion_tokens'):,}",
            ]
        )
    return table(
        [
            "pack",
            "scenarios",
            "calls H / I / I-MD",
            "H fewer calls than I",
            "healed H / I / I-MD",
            "exceptions H / I / I-MD",
            "prompt tok H / I",
            "prompt tok incl. format H / I",
            "completion tok H / I",
        ],
        rows,
    )


def class_table(results: Sequence[Result], packs: Sequence[str]) -> list[str]:
    """Model calls H / I per malformation class (rows) and pack (columns)."""
    rows = []
    for kind in CLASSES:
        cells = []
        h_all = i_all = 0
        for name in packs:
            found = [
                runs
                for case, runs in results
                if case.pack_name == name and case.scenario.kind == kind
            ]
            if not found:
                cells.append("—")
                continue
            h = sum(runs["H"].calls for runs in found)
            i = sum(runs["I"].calls for runs in found)
            h_all, i_all = h_all + h, i_all + i
            marks = "".join(
                f" ({label} {_short(runs[key])})"
                for runs in found
                for key, label in (("H", "H"), ("I", "I"))
                if not runs[key].correct
            )
            cells.append(f"{h} / {i}{marks}")
        total = f"{h_all} / {i_all}" if h_all or i_all else "not derived"
        rows.append([f"`{kind}`", *cells, total])
    return table(["class", *(f"{name} H / I" for name in packs), "all packs H / I"], rows)


WHY_ABSENT = {
    "python_literals": "no `true`/`false`/`null` to spell as a Python literal",
    "quoted_number": "no number to quote",
    "trailing_comma": "not an object or array",
    "two_candidates": "no first key to drop",
    "schema_violation": "no first key to drop",
    "contract_violation": "no violation given",
}


def _absent(cases: Sequence[Case], packs: Sequence[str]) -> str:
    """Which classes were not derived for which packs, and why."""
    parts = []
    for kind in CLASSES:
        lacking = [
            name
            for name in packs
            if not any(c.pack_name == name and c.scenario.kind == kind for c in cases)
        ]
        if lacking:
            where = "every pack" if len(lacking) == len(packs) else ", ".join(lacking)
            why = WHY_ABSENT.get(kind, "does not apply")
            parts.append(f"`{kind}` for {where} ({why} in the good value)")
    return "; ".join(parts) if parts else "none here"


def _policies(pack: healjson.ContractPack) -> str:
    return ", ".join(f"`{rule.name}` {rule.on_fail}" for rule in pack.contracts)


def bench_policies(
    policy_cases: Sequence[Case], results: Sequence[Result], lines: list[str]
) -> tuple[tuple[int, int, int, int], tuple[int, int, int, int]]:
    """Part 3: the pack's policies vs every rule re-asked, healjson against itself.

    Returns (calls reask, calls policies, healed reask, healed policies) for the policy
    scenarios and for the part-1 scenarios."""
    new = []
    for case in policy_cases:
        script = case.script(MAX_CALLS)
        runs = {
            "H-reask": run_healjson(case, script, contracts=all_reask(case.pack.contracts)),
            "H": run_healjson(case, script),
            "I": run_instructor(case, script),
        }
        new.append((case, runs))
        print(f"  {case.scenario.id} (policies) done", file=sys.stderr)
    old = [
        (case, {"H-reask": run_healjson(case, case.script(MAX_CALLS), contracts=reask), **runs})
        for case, runs in results
        for reask in [all_reask(case.pack.contracts)]
    ]
    print("  part-1 scenarios, every rule reask, done", file=sys.stderr)

    def sums(group: Sequence[tuple[Case, dict[str, Run]]]) -> tuple[int, int, int, int]:
        return (
            sum(runs["H-reask"].calls for _, runs in group),
            sum(runs["H"].calls for _, runs in group),
            sum(runs["H-reask"].correct for _, runs in group),
            sum(runs["H"].correct for _, runs in group),
        )

    packs = list(dict.fromkeys(case.pack_name for case, _ in results))
    by_name = {case.pack_name: case.pack for case, _ in results}
    lines += [
        "",
        "## 3. Rule policies: the packs' policies vs every rule re-asked",
        "",
        "healjson against itself: *pack policies* = `contracts=pack.contracts` as the packs "
        'declare them (`@contract(on_fail=...)`); *all reask* = the same rules with `on_fail="'
        'reask"` and no `fix` (`dataclasses.replace`), everything else as in part 1. The '
        "packs' rules:",
        "",
        *(f"- `{name}`: {_policies(by_name[name])}" for name in packs),
        "",
        "The policy scenarios (`policy_scenarios()` in `benchmarks/pack_scenarios.py`): a "
        "schema-valid first reply that breaks a rule declared `fix` (and the rules that follow "
        "from it), then the good value, padded to "
        f"{MAX_CALLS} replies. I = instructor `Mode.JSON` as in part 1, for reference.",
        "",
        "| scenario | rules the first reply breaks | calls all reask / pack policies / I "
        "| outcome all reask / pack policies / I |",
        "|---|---|---|---|",
    ]
    for case, runs in new:
        broken = sorted(
            {
                d.rule
                for d in healjson.validate(
                    str(case.scenario.replies[0]),
                    case.pack.model,
                    contracts=all_reask(case.pack.contracts),
                    context=case.messages,
                ).errors
                if d.rule
            }
        )
        r, h, i = runs["H-reask"], runs["H"], runs["I"]
        lines.append(
            f"| `{case.scenario.id}` | {', '.join(f'`{b}`' for b in broken)} | "
            f"{r.calls} / {h.calls} / {i.calls} | {_outcome(r)} / {_outcome(h)} / {_outcome(i)} |"
        )
    a, b = sums(new), sums(old)
    lines += [
        "",
        "| scenarios | count | calls all reask | calls pack policies | fewer | healed all reask "
        "| healed pack policies |",
        "|---|---|---|---|---|---|---|",
        f"| policy scenarios | {len(new)} | {a[0]} | {a[1]} | {_fewer(a[1], a[0])} | "
        f"{a[2]}/{len(new)} | {a[3]}/{len(new)} |",
        f"| part-1 scenarios | {len(old)} | {b[0]} | {b[1]} | {_fewer(b[1], b[0])} | "
        f"{b[2]}/{len(old)} | {b[3]}/{len(old)} |",
        f"| **all** | {len(new) + len(old)} | {a[0] + b[0]} | {a[1] + b[1]} | "
        f"{_fewer(a[1] + b[1], a[0] + b[0])} | {a[2] + b[2]}/{len(new) + len(old)} | "
        f"{a[3] + b[3]}/{len(new) + len(old)} |",
    ]
    for case, runs in new:
        if case.scenario.locally_fixable and (runs["H"].calls != 1 or not runs["H"].correct):
            raise AssertionError(f"{case.scenario.id}: the fix rule did not settle the reply")
    return a, b


def _short(run: Run) -> str:
    if run.exception:
        return f"raised `{run.exception}`"
    return "wrong value" if run.valid else "Degraded"


def main() -> int:
    started = time.perf_counter()
    header = environment()
    lines = list(header)
    cases = load_cases()
    packs = list(dict.fromkeys(case.pack_name for case in cases))
    results: list[Result] = []
    for case in cases:
        results.append((case, run_all(case, case.script(MAX_CALLS))))
        print(f"  {case.scenario.id} done", file=sys.stderr)
    fixable = [case for case in cases if case.scenario.locally_fixable]
    stubborn = [(case, run_all(case, case.stubborn_script(MAX_CALLS))) for case in fixable]
    print("  stubborn-model scripts done", file=sys.stderr)

    hs = [runs["H"] for _, runs in results]
    ins = [runs["I"] for _, runs in results]
    n = len(results)
    h_calls, i_calls = _sum(hs, "calls"), _sum(ins, "calls")
    fewer = 1 - h_calls / i_calls
    h_exc = sum(1 for run in hs if run.exception)
    i_exc = sum(1 for run in ins if run.exception)
    h_ok = sum(run.correct for run in hs)
    i_ok = sum(run.correct for run in ins)
    s_h = _sum([runs["H"] for _, runs in stubborn], "calls")
    s_i = _sum([runs["I"] for _, runs in stubborn], "calls")
    s_h_ok = sum(runs["H"].correct for _, runs in stubborn)
    s_i_ok = sum(runs["I"].correct for _, runs in stubborn)

    lines += [
        "## 1. Calls and tokens to a valid value",
        "",
        f"{n} scenarios from `benchmarks/scenarios/packs.jsonl` (regenerate with "
        "`.venv/bin/python benchmarks/pack_scenarios.py`): each malformation class of "
        "`healjson._cli.scenarios.malformations`, derived from the first golden example of each "
        f"contract pack in `healjson_contracts` ({', '.join(f'`{p}`' for p in packs)}), with a "
        "hand-written prompt and, for `contract_violation`, a schema-valid value that breaks "
        "exactly one of the pack's contracts. A class that does not apply to the good value is "
        f"left out: {_absent(cases, packs)}.",
        "",
        "Every scenario is the malformed reply followed by the clean, valid one (what a model "
        f"re-asked usually sends), padded with that good reply to {MAX_CALLS} replies; a fresh "
        "`ScriptedServer` per scenario and contender. H = `healjson.wrap(OpenAI(max_retries=0))`, "
        "default policy (`max_attempts=3`), `contracts=pack.contracts, examples=pack.examples`; "
        "I = `instructor.from_openai(OpenAI(max_retries=0), mode=Mode.JSON)`, `max_retries=2`, "
        "`response_model` = a subclass of the pack's model (same name, schema title and "
        'docstring) whose `model_validator(mode="after")` runs the pack\'s contracts through '
        "the public `Contract` objects, under the same request, and raises `ValueError` with "
        "each broken rule's constraint and prescription, so that instructor retries on them; "
        "I-MD = the same with `Mode.MD_JSON` (instructor's mode that extracts JSON from a code "
        "block), for reference only. *Healed* = a value that passes the schema and every "
        "contract and equals the scenario's `expected` value. Token columns: H / I, summed over "
        "the calls; *prompt tok* is the server's estimate (message text / 4); *incl. format* "
        "adds the JSON of `response_format`/`tools` / 4, because healjson's strict schema travels "
        "in `response_format`, which the server's estimate does not see (instructor's JSON modes "
        "put the schema in a message).",
        "",
        "### Per pack and overall",
        "",
    ]
    lines += per_pack_table(results, packs)
    lines += ["", "Totals (all packs):", ""]
    lines += totals_table(results)
    lines += [
        "",
        f"healjson made **{fewer:.1%} fewer model calls** than instructor `Mode.JSON` "
        f"({h_calls} vs {i_calls}). instructor validates with `strict=True` by default (so a "
        'quoted `"3"` for an int is an error; a quoted number for a `Decimal` is not) and raises '
        '`IncompleteOutputException` on `finish_reason="length"` without retrying.',
        "",
        "### Per malformation class: model calls H / I",
        "",
        "Cells name a contender that did not return the expected value.",
        "",
    ]
    lines += class_table(results, packs)
    lines += ["", "### Every scenario", ""]
    lines += scenario_table(results, tokens=True)
    lines += [
        "",
        "### 1b. A stubborn model: the same malformed reply every time",
        "",
        f"The {len(fixable)} scenarios whose first reply holds the right value in a malformed "
        f"form, with that reply repeated {MAX_CALLS} times (a model that keeps its formatting "
        "habit).",
        "",
    ]
    lines += scenario_table(stubborn, tokens=False)
    lines += ["", "Totals:", ""]
    lines += totals_table(stubborn)
    growth_case = next(c for c in cases if c.pack_name == GROWTH_PACK)
    lines += [
        "",
        "## 2. Prompt size per attempt, always-invalid reply (up to 5 attempts each)",
        "",
        f"The `{GROWTH_PACK}` pack (its model, contracts, golden examples and prompt as in "
        f"part 1). healjson `HealPolicy(max_attempts={GROWTH_ATTEMPTS})`, instructor "
        f"`Mode.JSON` `max_retries={GROWTH_ATTEMPTS - 1}`; the same reply every time. "
        "*message chars* = characters of message text in that request (what the server's token "
        "estimate counts); *body bytes* = the whole request body, schema included.",
        "",
    ]
    growth = bench_growth(growth_case, lines)
    policy_cases = load_policy_cases()
    (p_r, p_h, _, p_ok), (o_r, o_h, _, _) = bench_policies(policy_cases, results, lines)
    elapsed = time.perf_counter() - started

    met = fewer >= TARGET_FEWER_CALLS and h_exc == 0
    per_pack = []
    for name in packs:
        group = [runs for case, runs in results if case.pack_name == name]
        ph = sum(runs["H"].calls for runs in group)
        pi = sum(runs["I"].calls for runs in group)
        per_pack.append(f"{name} {ph} vs {pi} ({_fewer(ph, pi)} fewer)")
    summary = [
        f"- run time: {elapsed:.0f} s",
        "",
        "## Targets",
        "",
        f"- model calls over {n} scenarios (3 packs): healjson {h_calls}, instructor {i_calls}: "
        f"**{fewer:.1%} fewer** (target ≥ {TARGET_FEWER_CALLS:.0%}) with {h_exc} exception(s) "
        f"raised by healjson (target 0) — {'met' if met else 'MISSED'}",
        f"- per pack, calls H vs I: {'; '.join(per_pack)}",
        f"- healed: healjson {h_ok}/{n}, instructor {i_ok}/{n}; instructor raised {i_exc} "
        "exception(s)",
        f"- calls per valid value (instructor's calls on the scenarios it gave up on count too): "
        f"healjson {h_calls / max(h_ok, 1):.2f}, instructor {i_calls / max(i_ok, 1):.2f} "
        f"({1 - (h_calls / max(h_ok, 1)) / (i_calls / max(i_ok, 1)):.1%} fewer)",
        f"- stubborn model (1b, {len(stubborn)} locally fixable scenarios): healjson {s_h} calls, "
        f"{s_h_ok}/{len(stubborn)} healed; instructor {s_i} calls, {s_i_ok}/{len(stubborn)} "
        f"healed ({_fewer(s_h, s_i)} fewer calls)",
    ]
    summary.append(
        f"- rule policies (part 3): on the {len(policy_cases)} policy scenarios healjson "
        f"with the packs' policies made {p_h} calls ({p_ok} healed), with every rule reask "
        f"{p_r} ({_fewer(p_h, p_r)} fewer); on the {n} part-1 scenarios {o_h} vs {o_r}"
    )
    for label, h_chars, i_chars in growth:
        summary.append(
            f"- message chars per request, always {label} ({GROWTH_PACK}): healjson "
            f"{' → '.join(f'{c:,}' for c in h_chars)}; instructor "
            f"{' → '.join(f'{c:,}' for c in i_chars)}"
        )
    summary.append("")
    lines[len(header) : len(header)] = summary
    publish(lines, RESULTS, f" in {elapsed:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
