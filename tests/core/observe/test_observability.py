"""Observability: OpenTelemetry spans and metrics (the real SDK, in-memory readers), stdlib
logging with run ids, and no secret in any of them."""

from __future__ import annotations

import asyncio
import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from opentelemetry import trace
from pydantic import BaseModel, Field

import healjson
from healjson import Degraded, Healed, Healer, HealPolicy, Violation, contract
from healjson._core.observe import telemetry
from healjson.testing import ScriptedReply, ScriptedServer
from otel_kit import Telemetry, installed

KEY = "sk-observe-0123456789abcdef"


class Ticket(BaseModel):
    urgency: int = Field(ge=1, le=5)
    summary: str


@contract(fields=("urgency", "summary"))
def urgent_explains(ticket: Ticket) -> Violation | None:
    if ticket.urgency >= 4 and len(ticket.summary) < 15:
        return Violation("an urgent ticket needs a summary of 15 characters")
    return None


SHORT = '{"urgency": 5, "summary": "help"}'
GOOD = '{"urgency": 5, "summary": "Order stuck for a week, needed now"}'


@pytest.fixture
def otel(monkeypatch: pytest.MonkeyPatch) -> Iterator[Telemetry]:
    """A configured OpenTelemetry SDK, as an application would set one up (`otel_kit`)."""
    with installed(monkeypatch, Telemetry()) as state:
        yield state


def scripted(*replies: str) -> Any:
    items = list(replies)

    def call(messages: Any, **params: Any) -> str:
        return items.pop(0)

    return call


def test_healed_in_two_gives_one_run_span_with_two_chat_spans(otel: Telemetry) -> None:
    """A run healed in two calls gives one run span with two `chat <model>` client spans carrying
    the GenAI and healjson attributes of each attempt, the run's id on every span."""
    healer = Healer(Ticket, contracts=[urgent_explains])
    outcome = healer.run(scripted(SHORT, GOOD), "My order is stuck", model="gpt-4o-mini")

    assert isinstance(outcome, Healed)
    [run] = otel.runs()
    chats = sorted(otel.children(run), key=lambda s: s.start_time or 0)
    assert ["chat gpt-4o-mini", "chat gpt-4o-mini"] == [s.name for s in chats]
    assert all(s.kind is trace.SpanKind.CLIENT for s in chats)
    first, second = (dict(s.attributes or {}) for s in chats)
    assert "chat" == first["gen_ai.operation.name"]
    assert "gpt-4o-mini" == first["gen_ai.request.model"]
    assert (1, False, "initial") == (
        first["healjson.attempt"],
        first["healjson.ok"],
        first["healjson.strategy"],
    )
    assert 1 == first["healjson.diagnostics"]
    assert (2, True, "repair") == (
        second["healjson.attempt"],
        second["healjson.ok"],
        second["healjson.strategy"],
    )
    assert second["gen_ai.usage.output_tokens"] > 0
    run_attributes = dict(run.attributes or {})
    assert "healjson.heal Ticket" == run.name
    assert outcome.run_id == run_attributes["healjson.run_id"]
    assert ("healed", 2, "L3") == (
        run_attributes["healjson.outcome"],
        run_attributes["healjson.calls"],
        run_attributes["healjson.layer"],
    )
    assert ("urgent_explains",) == tuple(run_attributes["healjson.contracts"])
    assert 1 == run_attributes["healjson.changed_fields"]
    assert [outcome.run_id] * 2 == [s.attributes["healjson.run_id"] for s in chats]  # type: ignore[index]


def test_the_run_span_carries_token_totals_under_healjson_names_only(otel: Telemetry) -> None:
    """`gen_ai.usage.*` is on each call's span only; the run span carries the run's totals as
    `healjson.usage.*`, equal to the sum over its call spans."""
    healer = Healer(Ticket, contracts=[urgent_explains])
    outcome = healer.run(scripted(SHORT, GOOD), "My order is stuck", model="gpt-4o-mini")

    [run] = otel.runs()
    run_attributes = dict(run.attributes or {})
    chats = [dict(s.attributes or {}) for s in otel.children(run)]
    assert [] == [key for key in run_attributes if key.startswith("gen_ai.usage")]
    assert (
        sum(c["gen_ai.usage.input_tokens"] for c in chats)
        == run_attributes["healjson.usage.input_tokens"]
    )
    assert (
        sum(c["gen_ai.usage.output_tokens"] for c in chats)
        == run_attributes["healjson.usage.output_tokens"]
    )
    assert outcome.usage.completion_tokens == run_attributes["healjson.usage.output_tokens"]


def test_a_degraded_run_span_is_an_error_with_its_reason(otel: Telemetry) -> None:
    """A degraded run's span has error status and carries the outcome, the reason and layer L4."""
    healer = Healer(Ticket, policy=HealPolicy(max_attempts=2))
    outcome = healer.run(scripted("no json", "still none"), "go")

    assert isinstance(outcome, Degraded)
    [run] = otel.runs()
    attributes = dict(run.attributes or {})
    assert ("degraded", str(outcome.reason), "L4") == (
        attributes["healjson.outcome"],
        attributes["healjson.reason"],
        attributes["healjson.layer"],
    )
    assert trace.StatusCode.ERROR is run.status.status_code
    assert 2 == len(otel.children(run))


def test_local_healing_is_layer_one_and_counts_the_tokens_it_saved(otel: Telemetry) -> None:
    """A run healed locally is layer L1 on its span, which counts the tokens a repair call would
    have cost."""
    outcome = Healer(Ticket).run(scripted("Sure: " + GOOD[:-1] + ",}"), "go")

    assert isinstance(outcome, Healed)
    attributes = dict(otel.runs()[0].attributes or {})
    assert "L1" == attributes["healjson.layer"]
    assert outcome.attempts[0].usage.total_tokens == attributes["healjson.tokens_saved"] > 0


def test_a_span_made_inside_the_model_call_nests_under_the_attempt(otel: Telemetry) -> None:
    """What an instrumented SDK does: start its own span as a child of the current one."""
    tracer = otel.tracer_provider.get_tracer("an-instrumented-sdk")

    def call(messages: Any, **params: Any) -> str:
        with tracer.start_as_current_span("openai.chat"):
            return GOOD

    Healer(Ticket).run(call, "go", model="m")

    by_name = {s.name: s for s in otel.finished()}
    sdk, chat = by_name["openai.chat"], by_name["chat m"]
    assert chat.context is not None
    assert sdk.parent is not None
    assert chat.context.span_id == sdk.parent.span_id
    assert trace.get_current_span() is trace.INVALID_SPAN  # nothing left current afterwards


def test_twenty_concurrent_async_runs_keep_their_spans_apart(otel: Telemetry) -> None:
    """Twenty concurrent async runs each get their own run span, with only their own attempts
    under it."""

    async def call(messages: Any, **params: Any) -> str:
        await asyncio.sleep(0.01)
        text = messages[-1]["content"]
        if "Please" in text or "repair" in text.lower() or len(messages) > 1:
            return GOOD
        return SHORT

    healer = Healer(Ticket, contracts=[urgent_explains])

    async def main() -> list[Any]:
        return await asyncio.gather(*(healer.arun(call, f"ticket {i}") for i in range(20)))

    outcomes = asyncio.run(main())

    runs = otel.runs()
    assert 20 == len(runs)
    assert {o.run_id for o in outcomes} == {
        dict(r.attributes or {})["healjson.run_id"] for r in runs
    }
    for run in runs:
        calls = dict(run.attributes or {})["healjson.calls"]
        assert calls == len(otel.children(run))


def test_metrics_count_outcomes_attempts_and_attempts_per_run(otel: Telemetry) -> None:
    """The metrics count outcomes by reason, attempts by strategy, and attempts per run."""
    healer = Healer(Ticket, contracts=[urgent_explains], policy=HealPolicy(max_attempts=2))
    healer.run(scripted(SHORT, GOOD), "a")
    healer.run(scripted("x", "y"), "b")

    outcomes = {
        (p.attributes["ok"], p.attributes["healjson.reason"]): p.value
        for p in otel.metric("healjson.outcomes")
    }
    assert {(True, "healed"): 1, (False, "max_retries_exceeded"): 1} == outcomes
    attempts = {
        p.attributes["healjson.strategy"]: p.value for p in otel.metric("healjson.attempts")
    }
    assert 4 == sum(attempts.values())
    assert 2 == attempts["initial"]
    per_run = {
        p.attributes["ok"]: (p.count, p.sum) for p in otel.metric("healjson.attempts_per_run")
    }
    assert {True: (1, 2), False: (1, 2)} == per_run  # one run each, two calls each


def test_content_is_recorded_only_when_opted_in(
    otel: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Message content is on the chat span only when the GenAI capture-content variable opts in."""
    Healer(Ticket).run(scripted(GOOD), "the secret plan")
    chat = next(s for s in otel.finished() if s.name.startswith("chat"))
    assert "gen_ai.input.messages" not in (chat.attributes or {})

    otel.spans.clear()
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    Healer(Ticket).run(scripted(GOOD), "the secret plan")
    chat = next(s for s in otel.finished() if s.name.startswith("chat"))
    attributes = dict(chat.attributes or {})
    assert "the secret plan" in str(attributes["gen_ai.input.messages"])
    assert "Order stuck" in str(attributes["gen_ai.output.messages"])


def test_no_secret_in_spans_or_log_records(
    otel: Telemetry, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An API key the endpoint echoes reaches neither a span nor a log record, content capture
    on."""
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    echo = ScriptedReply(status=401, content=f"Incorrect API key provided: {KEY}")
    caplog.set_level(logging.INFO, logger="healjson")
    with ScriptedServer([echo]) as server:
        sdk = openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
        outcome = healjson.wrap(sdk).chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "hi"}], response_model=Ticket
        )
        sdk.close()

    assert isinstance(outcome, Degraded)
    dumped = json.dumps(
        [
            {
                "name": s.name,
                "attributes": dict(s.attributes or {}),
                "status": s.status.description,
                "events": [dict(e.attributes or {}) for e in s.events],
            }
            for s in otel.finished()
        ],
        default=str,
    )
    assert "[redacted]" in dumped
    assert KEY not in dumped
    assert all(KEY not in record.getMessage() for record in caplog.records)
    # healjson's own records carry its fields; another library's (a warning another test's
    # SDK logs while this one runs) has none to check
    ours = [record for record in caplog.records if hasattr(record, "healjson")]
    assert ours
    assert all(KEY not in json.dumps(record.healjson, default=str) for record in ours)


def test_stdlib_logging_gets_the_events_with_the_run_id(caplog: pytest.LogCaptureFixture) -> None:
    """The stdlib `healjson` logger gets every event, each with the run's id in its fields and
    message."""
    caplog.set_level(logging.DEBUG, logger="healjson")
    outcome = Healer(Ticket, contracts=[urgent_explains]).run(scripted(SHORT, GOOD), "go")

    events = [(r.healjson_event, r.healjson) for r in caplog.records if r.name == "healjson"]
    names = [name for name, _ in events]
    assert ["healjson.attempt", "healjson.diagnostic", "healjson.repair_request"] == names[:3]
    assert "healjson.healed" == names[-1]
    assert {outcome.run_id} == {fields["run_id"] for _, fields in events}
    assert outcome.run_id in caplog.records[-1].getMessage()


def test_stdlib_logging_is_quiet_by_default(caplog: pytest.LogCaptureFixture) -> None:
    """At WARNING, the stdlib `healjson` logger hears nothing of a run that heals."""
    caplog.set_level(logging.WARNING, logger="healjson")
    Healer(Ticket).run(scripted(GOOD), "go")
    assert not [r for r in caplog.records if r.name == "healjson"]


def test_set_logger_still_wins_over_stdlib(caplog: pytest.LogCaptureFixture) -> None:
    """A logger given to `set_logger` gets the events instead of the stdlib logger."""

    class Sink:
        def __init__(self) -> None:
            self.events: list[tuple[str, dict[str, Any]]] = []

        def info(self, event: str, **fields: Any) -> None:
            self.events.append((event, fields))

    caplog.set_level(logging.INFO, logger="healjson")
    sink = Sink()
    with healjson.set_logger(sink):
        outcome = Healer(Ticket).run(scripted(GOOD), "go")
    assert outcome.run_id == sink.events[0][1]["run_id"]
    assert not [r for r in caplog.records if r.name == "healjson"]


def test_without_an_sdk_there_are_no_spans() -> None:
    """The API's default (proxy) providers: `telemetry.for_run` declines, nothing is made."""
    assert telemetry.for_run("x", None) is None
    assert telemetry._instruments() is None


def test_run_ids_are_unique_and_on_outcome_and_trace() -> None:
    """Every run gets its own id, kept on its outcome and in its record."""
    outcomes = [Healer(Ticket).run(scripted(GOOD), "go") for _ in range(50)]
    ids = {o.run_id for o in outcomes}
    assert 50 == len(ids)
    assert all(i and "-" in i for i in ids)
    assert outcomes[0].run_id in json.dumps(outcomes[0].to_dict())


# --- cost -----------------------------------------------------------------------------------------


def priced_call(*contents: str, model: str = "gpt-4o-mini") -> Any:
    """A model call whose replies report usage on a model genai-prices knows."""
    items = list(contents)

    def call(messages: Any, **params: Any) -> healjson.Reply:
        usage = healjson.Usage(100_000, 1_000, requests=1, model=model)
        return healjson.Reply(items.pop(0), "stop", usage=usage, model=model)

    return call


def test_cost_is_known_for_a_priced_model_and_none_otherwise() -> None:
    """`Usage.cost` is the price of a known model's tokens, and `None` for an unknown model or
    estimated tokens."""
    from genai_prices import Usage as PriceUsage
    from genai_prices import calc_price

    outcome = Healer(Ticket).run(priced_call(GOOD), "go")
    expected = calc_price(
        PriceUsage(input_tokens=100_000, output_tokens=1_000), model_ref="gpt-4o-mini"
    ).total_price
    assert outcome.usage.cost == pytest.approx(float(expected))
    unknown = Healer(Ticket).run(priced_call(GOOD, model="gpt-test"), "go")
    assert unknown.usage.cost is None
    estimated = Healer(Ticket).run(scripted(GOOD), "go")
    assert estimated.usage.estimated
    assert estimated.usage.cost is None


def test_cost_sums_over_attempts_and_models() -> None:
    """A run's cost is the sum of its attempts' costs, across models, each kept as a part."""
    items = [(SHORT, "gpt-4o-mini"), (GOOD, "gpt-4o")]

    def call(messages: Any, **params: Any) -> healjson.Reply:
        content, model = items.pop(0)
        usage = healjson.Usage(1_000, 100, requests=1, model=model)
        return healjson.Reply(content, "stop", usage=usage, model=model)

    outcome = Healer(Ticket, contracts=[urgent_explains]).run(call, "go")

    assert isinstance(outcome, Healed)
    parts = [a.usage.cost for a in outcome.attempts]
    assert all(part is not None and part > 0 for part in parts)
    assert outcome.usage.cost == pytest.approx(sum(p for p in parts if p is not None))
    assert 2 == outcome.usage.requests
    assert {"gpt-4o-mini", "gpt-4o"} == {part.model for part in outcome.usage.parts}


def test_cost_budget_degrades_before_the_call_that_would_pass_it() -> None:
    """A cost budget degrades with `budget_exceeded` before the call that would pass it, and a
    looser one lets the run heal."""
    tight = Healer(Ticket, contracts=[urgent_explains], policy=HealPolicy(cost_budget=0.01))
    outcome = tight.run(priced_call(SHORT, GOOD), "go")

    assert isinstance(outcome, Degraded)
    assert "budget_exceeded" == outcome.reason
    assert 1 == outcome.calls
    assert "cost budget" in outcome.errors[0].constraint

    loose = Healer(Ticket, contracts=[urgent_explains], policy=HealPolicy(cost_budget=1.0))
    assert isinstance(loose.run(priced_call(SHORT, GOOD), "go"), Healed)


def test_cost_budget_must_be_positive() -> None:
    """A cost budget of zero is refused when the policy is built."""
    with pytest.raises(ValueError, match="cost_budget"):
        HealPolicy(cost_budget=0)


def test_the_official_openai_instrumentation_nests_under_healjson_without_a_second_client_span(
    otel: Telemetry,
) -> None:
    """With `opentelemetry-instrumentation-openai-v2` active, its span is the GenAI client span
    (a child of healjson's call span); healjson's call span wraps it as an INTERNAL span whose
    token counts are healjson's own, so the tokens of each call are reported once."""
    from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor

    def one_run() -> Any:
        with (
            ScriptedServer([GOOD]) as server,
            openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0) as sdk,
        ):
            return healjson.wrap(sdk).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "go"}], response_model=Ticket
            )

    instrumentor = OpenAIInstrumentor()
    instrumentor.instrument(tracer_provider=otel.tracer_provider)
    try:
        assert telemetry.sdk_instrumented()
        outcome = one_run()
    finally:
        instrumentor.uninstrument()
    assert isinstance(outcome, Healed)
    [run] = otel.runs()
    [attempt] = otel.children(run)
    [sdk_span] = otel.children(attempt)
    assert ("healjson.attempt 1", trace.SpanKind.INTERNAL) == (attempt.name, attempt.kind)
    assert ("chat m", trace.SpanKind.CLIENT) == (sdk_span.name, sdk_span.kind)
    ours, theirs = dict(attempt.attributes or {}), dict(sdk_span.attributes or {})
    assert "openai" == theirs["gen_ai.provider.name"]
    assert theirs["gen_ai.usage.output_tokens"] == ours["healjson.usage.output_tokens"]
    clients = [s for s in otel.finished() if s.kind is trace.SpanKind.CLIENT]
    assert [sdk_span.name] == [s.name for s in clients]  # one client span per call
    assert not any(k.startswith("gen_ai.usage") for k in ours)
    assert KEY not in json.dumps([dict(s.attributes or {}) for s in otel.finished()], default=str)

    # uninstrumented again: healjson's call span is the client span once more
    assert not telemetry.sdk_instrumented()
    otel.spans.clear()
    one_run()
    [run] = otel.runs()
    [attempt] = otel.children(run)
    assert ("chat m", trace.SpanKind.CLIENT) == (attempt.name, attempt.kind)
    assert "gen_ai.usage.output_tokens" in dict(attempt.attributes or {})


def test_the_run_span_counts_warnings_and_dropped_items(otel: Telemetry) -> None:
    """The run span counts the run's warnings and dropped items."""

    @contract(fields=("summary",), on_fail="warn")
    def long_summary(ticket: Ticket) -> str | None:
        return "a summary is usually longer" if len(ticket.summary) < 10 else None

    outcome = Healer(Ticket, contracts=[long_summary]).run(scripted(SHORT), "x")

    assert isinstance(outcome, Healed)
    assert len(outcome.warnings) == 1
    [run] = otel.runs()
    attributes = dict(run.attributes or {})
    assert (1, 0) == (attributes["healjson.warnings"], attributes["healjson.dropped"])


def test_a_provider_set_after_runs_without_one_gets_the_next_runs_spans() -> None:
    """In a fresh interpreter that imports OpenTelemetry without configuring it (as Anthropic's
    SDK does), a run sends no span; once the application sets a tracer provider, through the
    API's own `set_tracer_provider`, the next run's spans reach it."""
    script = """
import os, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
import healjson
from healjson import Healer
from pydantic import BaseModel
class Ticket(BaseModel):
    summary: str
healer = Healer(Ticket)
before = healer.run(lambda messages: '{"summary": "a"}', [{"role": "user", "content": "x"}])
exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
after = healer.run(lambda messages: '{"summary": "b"}', [{"role": "user", "content": "x"}])
names = sorted({span.name.split()[0] for span in exporter.get_finished_spans()})
print(before.ok, after.ok, names)
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )

    assert "True True ['chat', 'healjson.heal']" == done.stdout.strip(), done.stderr[-2000:]


def test_no_provider_set_means_no_spans_and_no_lookup_per_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With the API's lookup as imported and no provider set (none in the environment), a run
    decides it has no spans without calling the lookup."""
    monkeypatch.setattr(trace, "_TRACER_PROVIDER", None)
    monkeypatch.setattr(telemetry._Unconfigured, "named", False)
    calls: list[int] = []
    real = trace.get_tracer_provider

    def counted() -> Any:
        calls.append(1)
        return real()

    assert telemetry.for_run("r", None) is None
    monkeypatch.setattr(trace, "get_tracer_provider", counted)
    assert telemetry.for_run("r", None) is None  # a replaced lookup is asked

    assert [1] == calls
