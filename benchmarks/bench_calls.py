"""Benchmark model calls and tokens to a valid value: healjson against instructor.

Run from the repository root:

    .venv/bin/python benchmarks/bench_calls.py

Each scenario is a scripted sequence of model replies, one malformation class each (fenced JSON,
prose around the JSON, a trailing comma, single quotes, Python literals, a quoted number, two
candidates of which the second validates, a truncated answer, a schema violation, a cross-field
rule violation, and a valid first answer). The script is padded with the final good reply up to
the most calls either contender may make, so neither runs out because the other needed fewer.
Both contenders talk to a fresh `healjson.testing.ScriptedServer` per scenario through the real
OpenAI SDK (`max_retries=0`):

- H: `healjson.wrap(OpenAI())` with the default policy (`max_attempts=3`), the cross-field rule
  passed as a `@healjson.contract`;
- I: `instructor.from_openai(OpenAI(), mode=Mode.JSON)` with `max_retries=2` (up to 3 calls), the
  same rule as a pydantic `model_validator` raising `ValueError` so that instructor retries on it.

Per scenario it records the model calls (the server's request count), whether a valid value came
back (and whether it is the expected one), exceptions raised to the caller, and tokens. Tokens use
the server's own estimate, characters / 4 (prompt: the text of every message; completion: the
reply's content). That estimate leaves out what a request carries outside its messages, so a
second prompt figure adds `response_format` / `tools` (JSON text / 4): healjson sends its strict
JSON schema there, instructor's JSON mode sends its schema inside a message.

A second part sends an always-invalid reply with up to 5 attempts each (healjson
`max_attempts=5`, instructor `max_retries=4`) and tabulates the size of every request's messages.

Results are printed and written to `benchmarks/results/calls.md`.
"""

from __future__ import annotations

import json
import logging
import os
import platform
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any, Literal

import instructor
import openai
import pydantic
from pydantic import BaseModel, ConfigDict, Field, model_validator

import healjson
from _machine import processor, stamp
from healjson.testing import RecordedRequest, ScriptedReply, ScriptedServer

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results" / "calls.md"
logging.getLogger("instructor").setLevel(logging.CRITICAL + 1)  # it logs every failed retry

TARGET_FEWER_CALLS = 0.25  # issue target: >= 25% fewer model calls than instructor, 0 exceptions
MAX_CALLS = 3  # healjson max_attempts=3; instructor max_retries=2
GROWTH_ATTEMPTS = 5
LONG_ATTEMPTS = 8
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


# --- the model and the rule --------------------------------------------------------------------

RULE_TEXT = "urgency 4 or 5 requires a summary of at least 15 characters"


class SupportTicket(BaseModel):
    urgency: int = Field(ge=1, le=5)
    category: Literal["billing", "shipping", "technical", "account", "other"]
    summary: str = Field(min_length=5, max_length=160)
    orderId: str = Field(pattern=r"^ORD-\d{6}$")
    needs_callback: bool
    assignee: str | None = None


@healjson.contract(fields=("urgency", "summary"))
def urgent_needs_detail(ticket: SupportTicket) -> healjson.Violation | None:
    if ticket.urgency >= 4 and len(ticket.summary) < 15:
        return healjson.Violation(RULE_TEXT)
    return None


class SupportTicketWithRule(SupportTicket):
    # the same model for instructor, the rule as a validator; no docstring, because instructor
    # would send it as the schema's description, and the same title as healjson's model
    model_config = ConfigDict(title="SupportTicket")

    @model_validator(mode="after")
    def urgent_needs_detail(self) -> SupportTicketWithRule:
        if self.urgency >= 4 and len(self.summary) < 15:
            raise ValueError(RULE_TEXT)
        return self


MESSAGES = [
    {
        "role": "system",
        "content": "You turn customer e-mails into support tickets for the triage queue.",
    },
    {
        "role": "user",
        "content": (
            "Hello, my parcel for order ORD-482913 arrived today with the box crushed and the "
            "lamp inside broken. I need a replacement before Friday, please call me back. -- Sam"
        ),
    },
]

GOOD_DATA: dict[str, Any] = {
    "urgency": 4,
    "category": "shipping",
    "summary": "Lamp arrived broken in a crushed box; replacement needed by Friday",
    "orderId": "ORD-482913",
    "needs_callback": True,
    "assignee": None,
}
EXPECTED = SupportTicket.model_validate(GOOD_DATA)
GOOD = json.dumps(GOOD_DATA)


def _dumps(**changes: Any) -> str:
    return json.dumps({**GOOD_DATA, **changes})


# --- scenarios ---------------------------------------------------------------------------------

Item = str | ScriptedReply


@dataclass(frozen=True)
class Scenario:
    name: str
    replies: tuple[Item, ...]  # what the model says, in order, ending with a good reply
    locally_fixable: bool = True  # the first reply holds the right value, only malformed

    def script(self, calls: int) -> list[Item]:
        """The replies, padded with the last (good) one up to `calls`."""
        replies = list(self.replies)
        return replies + [replies[-1]] * (calls - len(replies))

    def stubborn_script(self, calls: int) -> list[Item]:
        """A model that repeats its first, malformed reply every time it is asked."""
        return [self.replies[0]] * calls


_PYTHON_LITERALS = GOOD.replace("true", "True").replace("null", "None")
_SINGLE_QUOTES = (
    "{'urgency': 4, 'category': 'shipping', 'summary': 'Lamp arrived broken in a crushed box; "
    "replacement needed by Friday', 'orderId': 'ORD-482913', 'needs_callback': true, "
    "'assignee': null}"
)

SCENARIOS = (
    Scenario("fenced JSON", (f"```json\n{json.dumps(GOOD_DATA, indent=2)}\n```", GOOD)),
    Scenario(
        "prose-wrapped",
        (f"Sure! Here is the ticket:\n\n{GOOD}\n\nLet me know if you need anything else.", GOOD),
    ),
    Scenario("trailing comma", (GOOD[:-1] + ",}", GOOD)),
    Scenario("single quotes", (_SINGLE_QUOTES, GOOD)),
    Scenario("Python literals (True/None)", (_PYTHON_LITERALS, GOOD)),
    Scenario('"4" for an int', (GOOD.replace('"urgency": 4', '"urgency": "4"'), GOOD)),
    Scenario(
        "two candidates, the second validates",
        (f"Draft:\n{_dumps(urgency=7, orderId='482913')}\n\nCorrected:\n{GOOD}", GOOD),
    ),
    Scenario(
        "truncated, then good",
        (ScriptedReply(content=GOOD[: len(GOOD) // 2], finish_reason="length"), GOOD),
        locally_fixable=False,
    ),
    Scenario(
        "schema violation (urgency 7), then good",
        (_dumps(urgency=7), GOOD),
        locally_fixable=False,
    ),
    Scenario(
        "cross-field rule violation, then good",
        (_dumps(urgency=5, summary="Lamp broken"), GOOD),
        locally_fixable=False,
    ),
    Scenario("valid first time", (GOOD,), locally_fixable=False),
)


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


def _text(content: object) -> str:
    """A message's text, as the server counts it (text parts joined for a list)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(part.get("text") or "")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


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
        text = "".join(_text(m.get("content")) for m in request.messages if isinstance(m, dict))
        run.prompt_tokens += len(text) // 4  # the server's formula (per request)
        run.prompt_tokens_with_format += (len(text) + len(_outside_messages(body))) // 4
        served = _content(script[index]) if index < len(script) else ""
        run.completion_tokens += len(served) // 4
        if ENCODING is not None:
            tik_prompt += len(ENCODING.encode(text + _outside_messages(body)))
            tik_completion += len(ENCODING.encode(served))
    if ENCODING is not None:
        run.tiktoken_prompt, run.tiktoken_completion = tik_prompt, tik_completion


def run_healjson(script: Sequence[Item], policy: healjson.HealPolicy | None = None) -> Run:
    run = Run()
    with ScriptedServer(script) as server:
        client = healjson.wrap(
            openai.OpenAI(base_url=server.base_url, api_key="sk-bench", max_retries=0)
        )
        try:
            outcome = client.chat.completions.create(
                model=MODEL_NAME,
                messages=MESSAGES,
                response_model=SupportTicket,
                contracts=[urgent_needs_detail],
                policy=policy,
            )
        except Exception as exc:
            run.exception = type(exc).__name__
        else:
            run.valid = outcome.ok
            run.correct = outcome.ok and outcome.value == EXPECTED
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
    script: Sequence[Item], max_retries: int = MAX_CALLS - 1, mode: str = "JSON"
) -> Run:
    run = Run()
    with ScriptedServer(script) as server:
        client = instructor.from_openai(
            openai.OpenAI(base_url=server.base_url, api_key="sk-bench", max_retries=0),
            mode=instructor.Mode[mode],
        )
        try:
            value = client.chat.completions.create(
                model=MODEL_NAME,
                messages=MESSAGES,
                response_model=SupportTicketWithRule,
                max_retries=max_retries,
            )
        except Exception as exc:
            run.exception = type(exc).__name__
        else:
            data = value.model_dump()
            run.valid = _valid(data)
            run.correct = run.valid and data == EXPECTED.model_dump()
        run.requests = server.requests
    _account(run, script)
    return run


def _valid(data: dict[str, Any]) -> bool:
    """Schema and rule, checked independently of either contender."""
    try:
        ticket = SupportTicket.model_validate(data)
    except pydantic.ValidationError:
        return False
    return urgent_needs_detail(ticket) is None


# --- part 2: prompt growth ---------------------------------------------------------------------

ALWAYS_INVALID = {
    "schema-invalid JSON": _dumps(urgency=9, summary="Bad", orderId="482913"),
    "no JSON (prose)": "I'm sorry, I can't tell which order this is about.",
}


def _sizes(run: Run) -> list[tuple[int, int, int]]:
    """(messages, characters of message text, request body bytes) per request."""
    out = []
    for request in run.requests:
        text = "".join(_text(m.get("content")) for m in request.messages if isinstance(m, dict))
        out.append((len(request.messages), len(text), len(request.raw)))
    return out


def bench_growth(lines: list[str]) -> list[tuple[str, list[int], list[int]]]:
    summary = []
    for label, reply in ALWAYS_INVALID.items():
        script = [reply] * GROWTH_ATTEMPTS
        healed = run_healjson(script, healjson.HealPolicy(max_attempts=GROWTH_ATTEMPTS))
        ins = run_instructor(script, max_retries=GROWTH_ATTEMPTS - 1)
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
    longer = run_healjson([reply] * LONG_ATTEMPTS, healjson.HealPolicy(max_attempts=LONG_ATTEMPTS))
    chars = [f"{size[1]:,}" for size in _sizes(longer)]
    lines += [
        f"Beyond 5: healjson with `max_attempts={LONG_ATTEMPTS}` on the schema-invalid reply, "
        f"message chars per request: {' → '.join(chars)} (a repair carries one short line per "
        "earlier attempt, up to a fixed cap, never the attempts verbatim).",
        "",
    ]
    return summary


# --- report ------------------------------------------------------------------------------------


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


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
        "",
    ]


CONTENDERS = ("H", "I", "I-MD")


def run_all(script: Sequence[Item]) -> dict[str, Run]:
    return {
        "H": run_healjson(script),
        "I": run_instructor(script),
        "I-MD": run_instructor(script, mode="MD_JSON"),
    }


def _sum(runs: Sequence[Run], attr: str) -> int:
    return sum(getattr(run, attr) for run in runs)


def scenario_table(results: Sequence[tuple[Scenario, dict[str, Run]]], tokens: bool) -> list[str]:
    rows = []
    for scenario, runs in results:
        h, i, md = runs["H"], runs["I"], runs["I-MD"]
        row = [
            scenario.name,
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


def totals_table(results: Sequence[tuple[Scenario, dict[str, Run]]]) -> list[str]:
    n = len(results)
    by = {name: [runs[name] for _, runs in results] for name in CONTENDERS}

    def row(label: str, fn: Any) -> list[str]:
        return [label, *(fn(by[name]) for name in CONTENDERS)]

    return table(
        ["", "healjson (H)", "instructor `Mode.JSON` (I)", "instructor `Mode.MD_JSON` (ref.)"],
        [
            row("model calls", lambda runs: str(_sum(runs, "calls"))),
            row(
                "healed (the expected value returned)",
                lambda runs: f"{sum(run.correct for run in runs)}/{n}",
            ),
            row(
                "exceptions raised to the caller",
                lambda runs: str(sum(1 for run in runs if run.exception)),
            ),
            row(
                "prompt tokens (message text / 4)", lambda runs: f"{_sum(runs, 'prompt_tokens'):,}"
            ),
            row(
                "prompt tokens incl. `response_format`/`tools`",
                lambda runs: f"{_sum(runs, 'prompt_tokens_with_format'):,}",
            ),
            row("completion tokens", lambda runs: f"{_sum(runs, 'completion_tokens'):,}"),
        ],
    )


def main() -> int:
    header = environment()
    lines = list(header)
    results: list[tuple[Scenario, dict[str, Run]]] = []
    for scenario in SCENARIOS:
        results.append((scenario, run_all(scenario.script(MAX_CALLS))))
        print(f"  {scenario.name} done", file=sys.stderr)
    stubborn = [
        (scenario, run_all(scenario.stubborn_script(MAX_CALLS)))
        for scenario in SCENARIOS
        if scenario.locally_fixable
    ]
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

    lines += [
        "## 1. Calls and tokens to a valid value",
        "",
        "`SupportTicket`: urgency 1-5, category `Literal` (5 values), summary 5-160 characters, "
        r"`orderId` matching `^ORD-\d{6}$`, plus `needs_callback: bool` and "
        "`assignee: str | None` (so that the Python-literal reply has a `True` and a `None` to "
        f"carry); rule: {RULE_TEXT}.",
        "",
        "Every scenario is the malformed reply followed by a clean, valid one (what a model "
        f"re-asked usually sends), padded with that good reply to {MAX_CALLS} replies; a fresh "
        "`ScriptedServer` per scenario and contender. H = `healjson.wrap(OpenAI(max_retries=0))`, "
        "default policy (`max_attempts=3`), the rule as a `@healjson.contract`; I = "
        "`instructor.from_openai(OpenAI(max_retries=0), mode=Mode.JSON)`, `max_retries=2`, the "
        "rule as a `model_validator`; I-MD = the same with `Mode.MD_JSON` (instructor's mode "
        "that extracts JSON from a code block), for reference only. Token columns: H / I, summed "
        "over the calls; *prompt tok* is the server's estimate (message text / 4); *incl. format* "
        "adds the JSON of `response_format`/`tools` / 4, because healjson's strict schema travels "
        "in `response_format`, which the server's estimate does not see (instructor's JSON modes "
        "put the schema in a message).",
        "",
    ]
    lines += scenario_table(results, tokens=True)
    lines += ["", "Totals:", ""]
    lines += totals_table(results)
    lines += [
        "",
        f"healjson made **{fewer:.0%} fewer model calls** than instructor `Mode.JSON` "
        f"({h_calls} vs {i_calls}). instructor validates with `strict=True` by default (so "
        '`"4"` for an int is an error) and raises `IncompleteOutputException` on '
        '`finish_reason="length"` without retrying.',
        "",
        "### 1b. A stubborn model: the same malformed reply every time",
        "",
        "The seven scenarios whose first reply holds the right value in a malformed form, with "
        f"that reply repeated {MAX_CALLS} times (a model that keeps its formatting habit).",
        "",
    ]
    lines += scenario_table(stubborn, tokens=False)
    lines += ["", "Totals:", ""]
    lines += totals_table(stubborn)
    lines += [
        "",
        "## 2. Prompt size per attempt, always-invalid reply (up to 5 attempts each)",
        "",
        f"healjson `HealPolicy(max_attempts={GROWTH_ATTEMPTS})`, instructor `Mode.JSON` "
        f"`max_retries={GROWTH_ATTEMPTS - 1}`; the same reply every time. *message chars* = "
        "characters of message text in that request (what the server's token estimate counts); "
        "*body bytes* = the whole request body, schema included.",
        "",
    ]
    growth = bench_growth(lines)

    met = fewer >= TARGET_FEWER_CALLS and h_exc == 0
    summary = [
        "## Targets",
        "",
        f"- model calls: healjson {h_calls}, instructor {i_calls}: **{fewer:.0%} fewer** "
        f"(target ≥ {TARGET_FEWER_CALLS:.0%}) with {h_exc} exception(s) raised by healjson "
        f"(target 0) — {'met' if met else 'MISSED'}",
        f"- healed: healjson {h_ok}/{n}, instructor {i_ok}/{n}; instructor raised {i_exc} "
        "exception(s)",
        f"- stubborn model (1b): healjson {s_h} calls, instructor {s_i} calls "
        f"({1 - s_h / s_i:.0%} fewer)",
    ]
    for label, h_chars, i_chars in growth:
        summary.append(
            f"- message chars per request, always {label}: healjson "
            f"{' → '.join(f'{c:,}' for c in h_chars)}; instructor "
            f"{' → '.join(f'{c:,}' for c in i_chars)}"
        )
    summary.append("")
    lines[len(header) : len(header)] = summary
    report = "\n".join(lines).rstrip() + "\n"
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report, encoding="utf-8")
    print(report)
    print(f"written to {RESULTS.relative_to(ROOT)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
