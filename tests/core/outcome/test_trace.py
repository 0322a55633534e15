"""The Markdown trace: it starts with the request (messages, model, target, contracts), shows per
round the model, latency, tokens by bucket, finish reason, flags, diagnostics and the repair
prompt, and ends with the outcome and the totals; no noise fields, no guessed token limit, no
secret; `healjson heal` prints this same text; no answer can break its code fences."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt
from typer.testing import CliRunner

import healjson
from contract_cases import UrgentTicket as Ticket
from contract_cases import urgent_needs_detail
from healjson import Degraded, Healed, Healer, Reason, Reply
from healjson._cli.app import app
from healjson._cli.loading import load_setup
from healjson._core.diagnostic import Diagnostic, Source
from healjson._core.flags import Flag
from healjson._core.outcome.attempt import Attempt
from healjson._core.redact import secrets_scope
from healjson._core.repair.prompt import RepairPrompt, Strategy
from healjson._core.wire.reply import Usage
from healjson.testing import ScriptedModel

SECRET = "sk-test-SECRET-0123456789"
REQUEST = [
    {"role": "system", "content": "You turn customer messages into tickets."},
    {"role": "user", "content": "My parcel has been lost for a week, I am furious!"},
]
GOOD = '{"urgency": 5, "summary": "Parcel lost for a week, customer is furious"}'
SHORT = '{"urgency": 5, "summary": "Lost it"}'
RUN_ID = re.compile(r"^(- \*\*Run id\*\*: ).*$", re.MULTILINE)


def _usage(prompt: int, completion: int, *, cache_read: int = 0, reasoning: int = 0) -> Usage:
    return Usage(
        prompt,
        completion,
        reasoning_tokens=reasoning,
        cache_read_tokens=cache_read,
        requests=1,
        model="gpt-4o-mini",
    )


def _healed_in_two() -> Healed[Ticket]:
    first = Reply(
        "Here:\n" + SHORT,
        "stop",
        usage=_usage(1200, 80, cache_read=1000),
        model="gpt-4o-mini",
    )
    second = Reply(GOOD, "stop", usage=_usage(1400, 90, reasoning=30), model="gpt-4o-mini")
    healer = Healer(Ticket, contracts=[urgent_needs_detail])
    outcome = healer.run(ScriptedModel([first, second]), REQUEST, model="gpt-4o-mini", seed=7)
    assert isinstance(outcome, Healed)
    # fixed latencies, so the trace can be read exactly
    attempts = tuple(
        dataclasses.replace(a, latency_s=s)
        for a, s in zip(outcome.attempts, (1.25, 0.0042), strict=True)
    )
    return dataclasses.replace(outcome, attempts=attempts)


def test_a_healed_in_two_trace_holds_request_rounds_outcome_and_totals() -> None:
    """Request, target, contracts and run id first; per round model, latency, tokens by bucket,
    finish reason and (round 2) the repair prompt; then the value and the totals."""
    outcome = _healed_in_two()
    text = outcome.trace()

    assert text.startswith("### healjson trace\n\n- **Healed** in 2 rounds of 3 allowed (1 repair)")
    assert f"- **Run id**: `{outcome.run_id}`" in text
    assert outcome.run_id
    assert "- **Target**: `UrgentTicket`" in text
    assert "- **Contracts**: `urgent_needs_detail`" in text
    request = text.split("#### Request")[1].split("#### Round 1")[0]
    assert "- **Model**: `gpt-4o-mini`" in request
    assert '- **Params**: `{"seed": 7}`' in request
    assert "**system**:" in request
    assert "My parcel has been lost for a week, I am furious!" in request  # the customer's words

    round_1 = text.split("#### Round 1 (initial)")[1].split("#### Round 2")[0]
    round_2 = text.split("#### Round 2 (repair)")[1].split("#### Outcome")[0]
    assert "- **Model**: `gpt-4o-mini`" in round_1
    assert "- **Latency**: 1.25 s" in round_1
    assert "- **Tokens**: 1,200 prompt (incl. 1,000 cache read), 80 completion\n" in round_1
    assert "- **Finish reason**: `stop`" in round_1
    assert "- **L1 local repairs**: prose_around" in round_1
    assert "urgency >= 4 needs a summary of at least 15 characters" in round_1
    assert "Raw output (42 characters):" in round_1
    assert "Repair prompt sent" not in round_1

    prompt = outcome.attempts[1].prompt
    assert prompt is not None
    assert "Repair prompt sent:" in round_2
    assert prompt.render() in round_2
    assert "- **Latency**: 4.2 ms" in round_2
    assert "- **Tokens**: 1,400 prompt, 90 completion (incl. 30 reasoning)" in round_2
    assert "- **L2 schema + contracts**: passed" in round_2

    outcome_part, totals = text.split("#### Outcome")[1].split("#### Totals")
    assert "- **Fields a repair changed**: `summary`" in outcome_part
    assert '"summary": "Parcel lost for a week, customer is furious"' in outcome_part
    assert "- **Model calls**: 2" in totals
    assert "- **Tokens**: 2,600 prompt (incl. 1,000 cache read), 170 completion" in totals
    assert "(incl. 30 reasoning)" in totals
    assert "- **Latency**: 1.25 s" in totals  # 1.2542 s
    cost = outcome.usage.cost
    shown = f"- **Cost**: ${cost:.6f} (USD)" if cost is not None else "- **Cost**"
    assert (shown in totals) is (cost is not None)


def test_estimated_tokens_say_so() -> None:
    """A provider that reports no usage: the counts are estimates, and the trace says so."""
    outcome = Healer(Ticket).run(ScriptedModel([Reply(GOOD, "stop")]), "triage")
    if outcome.usage.estimated:
        assert "(estimated)" in outcome.trace()
    tokens = Usage(10, 2, estimated=True, requests=1)
    estimated = dataclasses.replace(outcome, usage=tokens)
    assert "- **Tokens**: 10 prompt, 2 completion (estimated)" in estimated.trace()
    assert "- **Cost**" not in estimated.trace()  # an estimate has no cost


def test_a_degraded_trace_prints_no_null_or_none_noise() -> None:
    """Fields with nothing in them are left out: no `fallback: null`, no `None`."""
    healer = Healer(Ticket, contracts=[urgent_needs_detail])
    outcome = healer.run(ScriptedModel(["no json here"] * 3), "triage")
    assert isinstance(outcome, Degraded)
    assert outcome.fallback is None
    text = outcome.trace()

    assert "**Degraded**: `invalid_output`" in text or "**Degraded**: `max_retries" in text
    assert not re.search(r"\bnull\b|\bNone\b", text), text
    assert "Fallback" not in text
    assert "Partial data" not in text
    with_fallback = Healer(Ticket, fallback={"urgency": 1, "summary": "unknown"})
    shown = with_fallback.run(ScriptedModel(["nope"] * 3), "triage").trace()
    assert '- **Fallback**: `{"urgency": 1, "summary": "unknown"}`' in shown


def test_a_failed_call_shows_its_error_and_no_empty_fields() -> None:
    """A call that raised: its error, no flags or raw output of a reply that never came."""
    outcome = Healer(Ticket).run(ScriptedModel([TimeoutError("slow endpoint")]), "triage")
    text = outcome.trace()

    assert "- **Call failed**: " in text
    assert "slow endpoint" in text
    assert "Raw output" not in text.split("#### Round 1")[1]
    assert not re.search(r"\bnull\b|\bNone\b", text), text


def test_no_finish_reason_is_never_reported_as_a_token_limit() -> None:
    """An answer that stops mid-structure without `length` is not blamed on the token limit."""
    cut = '{"urgency": 3, "summary": "cut'
    unknown = healjson.validate(cut, Ticket).trace()
    limited = healjson.validate(cut, Ticket, finish_reason="length").trace()

    assert "- **Finish reason**: none reported" in unknown
    assert "token limit was reached" not in unknown
    assert "finish_reason=length" not in unknown
    assert "no token limit was reported" in unknown
    assert "- **Finish reason**: `length` (the output token limit was reached)" in limited
    assert "**Degraded**: `token_truncated` (the output token limit was reached" in limited


def test_the_raw_output_length_is_its_exact_character_count() -> None:
    """`Raw output (N characters)` counts every character of the reply, trailing newline too."""
    reply = '{"urgency": 5, "summary": "cut\n'
    text = healjson.validate(reply, Ticket).trace()
    assert f"Raw output ({len(reply)} characters):" in text


def test_long_text_is_shortened_with_a_marker_and_its_length() -> None:
    """A long message or raw output: head and tail around a marker, its length in the heading."""
    long_request = "please " * 2_000  # 14,000 characters
    long_reply = "x" * 40_000
    outcome = Healer(Ticket).run(ScriptedModel([long_reply] * 3), long_request)
    text = outcome.trace()

    assert "**user** (14,000 characters, shortened):" in text
    assert "Raw output (40,000 characters, shortened):" in text
    assert "characters left out …]" in text
    assert len(text) < 100_000


def test_a_secret_never_reaches_the_trace() -> None:
    """A known secret in the request, the answer, a call's params and error: never printed."""
    replies: list[Any] = [
        f'{{"urgency": 9, "summary": "key {SECRET}"}}',
        healjson.ProviderError(f"401: bad key {SECRET}"),
    ]
    with secrets_scope(SimpleNamespace(api_key=SECRET)):
        outcome = Healer(Ticket).run(
            ScriptedModel(replies),
            f"my key is {SECRET}",
            model="m",
            api_key=SECRET,
            extra_query={"key": SECRET},
        )
        text = outcome.trace()
    assert isinstance(outcome, Degraded)
    assert SECRET not in text
    assert "[redacted]" in text
    # the params and the error were redacted when the run stored them: safe outside the scope
    later = outcome.trace().splitlines()
    stored = [line for line in later if line.startswith(("- **Params**", "- **Call failed**"))]
    assert 2 == len(stored)
    assert not any(SECRET in line for line in stored)
    shaped = healjson.validate(f"Authorization: Bearer {SECRET}", Ticket).trace()
    assert SECRET not in shaped  # a credential shape, with no scope at all


def test_heal_prints_the_trace_of_the_same_input(tmp_path: Path) -> None:
    """`healjson heal` prints `outcome.trace()` of the same reply (the one renderer), then the
    repair request it would send next; only the run id (each run's own) differs."""
    reply = '{"urgency": 5, "category": "logistics", "summary": "Ship", "orderId": "ORD-123456"}\n'
    file = tmp_path / "reply.txt"
    file.write_text(reply, encoding="utf-8")
    request = "My order ORD-123456 is late, please help."

    result = CliRunner().invoke(
        app, ["heal", str(file), "--contracts", "support_ticket", "--messages", request]
    )

    assert 1 == result.exit_code, result.output
    setup = load_setup("support_ticket", None)
    outcome = healjson.validate(
        reply,
        setup.target,
        contracts=setup.contracts,
        context=[{"role": "user", "content": request}],
    )
    trace = RUN_ID.sub(r"\1RUN", outcome.trace())
    printed = RUN_ID.sub(r"\1RUN", result.stdout)
    assert trace in printed
    assert printed.startswith("`healjson heal`: degraded (`invalid_output`)")
    assert printed.index(trace) < printed.index("#### Repair request healjson would send next")
    assert request in trace
    assert "- **Model call**: none (the reply was given, not requested)" in trace


# -- property: nothing an answer holds breaks the document --------------------------------------

_PIECES = [*'ab {}[]":,`~#*->_|\\\n\r\t\u2028', "```", "~~~", "    ", "\n```\n", "````"]
_TEXT = st.lists(st.sampled_from(_PIECES), max_size=120).map("".join)
_LINE = st.text(alphabet=st.sampled_from(list("ab `*#\n_|<>[]")), max_size=40)
# the strategies the composites below draw from, built once rather than on every draw
_MAYBE_LINE = st.one_of(st.none(), _LINE)
_MAYBE_TEXT = st.one_of(st.none(), _TEXT)
_VALUE = st.one_of(st.none(), _TEXT, st.integers(), st.lists(_LINE, max_size=3))
_SOURCE = st.sampled_from(list(Source))
_STRATEGY = st.sampled_from(list(Strategy))
_FINISH = st.sampled_from([None, "stop", "length", "weird`reason"])
_FLAGS = st.lists(st.sampled_from(list(Flag)), max_size=3)
_USAGE = st.sampled_from([Usage(), Usage(3, 4, requests=1)])


@st.composite
def _diagnostics(draw: st.DrawFn) -> Diagnostic:
    return Diagnostic(
        path=draw(_LINE),
        value=draw(_VALUE),
        constraint=draw(_LINE),
        prescription=draw(_LINE),
        source=draw(_SOURCE),
        rule=draw(_MAYBE_LINE),
    )


_DIAGNOSTIC_LISTS = st.lists(_diagnostics(), max_size=3)


@st.composite
def _attempts(draw: st.DrawFn) -> list[Attempt]:
    attempts = []
    for number in range(1, draw(st.integers(1, 4)) + 1):
        strategy = Strategy.INITIAL if number == 1 else draw(_STRATEGY)
        diagnostics = tuple(draw(_DIAGNOSTIC_LISTS))
        prompt = (
            None
            if number == 1
            else RepairPrompt(strategy, number - 1, draw(_TEXT), diagnostics, (draw(_LINE),))
        )
        attempts.append(
            Attempt(
                number=number,
                strategy=strategy,
                messages=({"role": draw(_LINE), "content": draw(_TEXT)},),
                params={"model": draw(_LINE), "temperature": 0},
                raw_text=draw(_MAYBE_TEXT),
                finish_reason=draw(_FINISH),
                flags=tuple(draw(_FLAGS)),
                diagnostics=diagnostics,
                usage=draw(_USAGE),
                model=draw(_MAYBE_LINE),
                latency_s=draw(st.floats(0, 100)),
                error=draw(_MAYBE_LINE),
                prompt=prompt,
                reasoning=draw(_MAYBE_TEXT),
            )
        )
    return attempts


def _as_fenced(text: str) -> str:
    """What a Markdown parser reads back from a fenced block holding `text`."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text if text.endswith("\n") else text + "\n"


@given(attempts=_attempts(), ok=st.booleans(), value=_TEXT, contracts=st.lists(_LINE, max_size=3))
def test_no_answer_breaks_the_trace(
    attempts: list[Attempt], ok: bool, value: str, contracts: list[str]
) -> None:
    """Random answers (backticks, fences, newlines, Markdown) and diagnostics: `trace()` never
    raises, each round is its own heading, and every answer and message comes back whole from
    a fenced block of its own (a fence longer than any backtick run inside)."""
    common: dict[str, Any] = {
        "attempts": tuple(attempts),
        "max_attempts": 4,
        "run_id": "r-1",
        "target": "Ticket",
        "contracts": tuple(contracts),
    }
    outcome: healjson.Outcome[Any] = (
        Healed(value={"text": value}, raw_text=attempts[-1].raw_text or "", **common)
        if ok
        else Degraded(
            reason=Reason.INVALID_OUTPUT,
            raw_text=attempts[-1].raw_text,
            errors=attempts[-1].diagnostics,
            partial={"text": value} if value else None,
            **common,
        )
    )
    text = outcome.trace()

    tokens = MarkdownIt("commonmark").parse(text)
    headings = [tokens[i + 1].content for i, t in enumerate(tokens) if t.type == "heading_open"]
    expected = [f"Round {a.number} ({a.strategy})" for a in attempts]
    assert ["healjson trace", "Request", *expected, "Outcome", "Totals"] == headings
    fences = [t.content for t in tokens if t.type == "fence"]
    for attempt in attempts:
        if attempt.raw_text:
            assert _as_fenced(attempt.raw_text) in fences
        if attempt.reasoning:
            assert _as_fenced(attempt.reasoning) in fences
    content = attempts[0].messages[0]["content"]
    if content:
        assert _as_fenced(content) in fences
    if ok:
        assert _as_fenced(json.dumps({"text": value}, indent=2, ensure_ascii=False)) in fences
