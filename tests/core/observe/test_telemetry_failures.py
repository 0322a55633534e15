"""The telemetry pipeline's own failures never break a run, what a provider writes reaches no
span unredacted or unbounded, estimated counts say so on the run's span and events, and a bug
of the caller's that escapes a run ends its spans and gives the caller's context back."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.sampling import Sampler, SamplingResult
from pydantic import BaseModel, Field

import healjson
from healjson.testing import ScriptedReply, ScriptedServer, capture_events
from otel_kit import Telemetry, abandoned_stream, installed

KEY = "sk-probe-SECRET0123456789abcdef"
GOOD = '{"urgency": 3, "summary": "Order stuck for a week"}'
BAD = '{"urgency": 9, "summary": "Order stuck for a week"}'
SAID = [{"role": "user", "content": "my order?"}]


class Ticket(BaseModel):
    urgency: int = Field(ge=1, le=5)
    summary: str


class Raising(SpanProcessor):
    """A span processor whose hook raises, as a buggy exporter or processor does."""

    def __init__(self, where: str) -> None:
        self.where = where

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if self.where == "start":
            raise RuntimeError("processor bug on start")

    def on_end(self, span: Any) -> None:
        if self.where == "end":
            raise RuntimeError("processor bug on end")


class RaisingSampler(Sampler):
    """A sampler that raises for every span."""

    def should_sample(self, *args: Any, **kwargs: Any) -> SamplingResult:
        raise RuntimeError("sampler bug")

    def get_description(self) -> str:
        return "raising"


@pytest.fixture
def pipeline(
    monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Iterator[Telemetry]:
    """The SDK a test asks for (`indirect` parameters: a processor's hook or a sampler that
    raises), as `otel_kit` installs it."""
    kind = getattr(request, "param", None)
    state = Telemetry(
        Raising(kind) if kind in ("start", "end") else None,
        RaisingSampler() if kind == "sampler" else None,
    )
    with installed(monkeypatch, state):
        yield state


def body(content: str, *, model: str = "m", finish: str = "stop", usage: bool = True) -> str:
    """A chat completion the provider wrote, its model and finish reason as given."""
    reply: dict[str, Any] = {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": finish,
            }
        ],
    }
    if usage:
        reply["usage"] = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    return json.dumps(reply)


def run(server: ScriptedServer, **options: Any) -> Any:
    sdk = openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
    with sdk:
        return healjson.wrap(sdk).chat.completions.create(
            model="m", messages=SAID, response_model=Ticket, **options
        )


@pytest.mark.parametrize("pipeline", ["start", "end", "sampler"], indirect=True)
@pytest.mark.parametrize("replies", [[GOOD], [BAD, GOOD], [BAD, BAD, BAD]], ids=["1", "2", "3"])
def test_a_raising_span_processor_or_sampler_never_breaks_the_run(
    pipeline: Telemetry, replies: list[str]
) -> None:
    """A span processor's start or end hook, or a sampler, that raises: the run returns the
    outcome it returns without telemetry, after the same calls, and leaves no span current."""
    with ScriptedServer([ScriptedReply(body=body(text)) for text in replies]) as server:
        outcome = run(server)
        made = len(server.requests)
    assert outcome.ok is (replies[-1] == GOOD)
    assert made == len(replies) == outcome.calls
    assert not trace.get_current_span().get_span_context().is_valid


@pytest.mark.parametrize(
    ("model", "finish", "replies"),
    [(KEY, "stop", [GOOD]), ("m", KEY, [GOOD]), (KEY, KEY, [BAD, GOOD]), (KEY, "stop", [BAD] * 3)],
    ids=["model-first", "finish-first", "both-repaired", "model-degraded"],
)
def test_a_key_the_provider_echoes_in_its_model_or_finish_reason_is_never_shown(
    pipeline: Telemetry, model: str, finish: str, replies: list[str]
) -> None:
    """A proxy that echoes the client's key as the response's model or finish reason: the key
    is on no span, in no event, and in none of the outcome's renderings, whether the first
    answer stood, a repair healed it, or the run degraded."""
    scripted = [ScriptedReply(body=body(text, model=model, finish=finish)) for text in replies]
    with ScriptedServer(scripted) as server, capture_events() as events:
        outcome = run(server)
    shown = json.dumps([dict(span.attributes or {}) for span in pipeline.finished()], default=str)
    assert KEY not in shown
    assert KEY not in json.dumps(events, default=str)
    assert KEY not in json.dumps(outcome.to_dict(), default=str)
    assert KEY not in outcome.trace()
    assert KEY not in repr(outcome)


def test_what_a_provider_writes_is_cut_on_the_span(pipeline: Telemetry) -> None:
    """A model name of 100,000 characters reaches the call span cut at 500."""
    with ScriptedServer([ScriptedReply(body=body(GOOD, model="m" * 100_000))]) as server:
        assert run(server).ok
    [call] = [span for span in pipeline.finished() if span.name.startswith("chat")]
    assert 500 == len(str((call.attributes or {})["gen_ai.response.model"]))


@pytest.mark.parametrize("reported", [True, False])
def test_the_run_span_and_its_events_say_whether_its_counts_were_estimated(
    pipeline: Telemetry, reported: bool
) -> None:
    """Replies without usage: the run span's totals and the `healjson.healed` event are marked
    estimated, as each call's are; with the provider's counts, they are not."""
    scripted = [ScriptedReply(body=body(GOOD, usage=reported))]
    with ScriptedServer(scripted) as server, capture_events() as events:
        outcome = run(server)
    assert outcome.usage.estimated is not reported
    [span] = [span for span in pipeline.finished() if span.name.startswith("healjson.heal")]
    assert (span.attributes or {})["healjson.usage.estimated"] is not reported
    [healed] = [event for event in events if event["event"] == "healjson.healed"]
    assert healed["tokens_estimated"] is not reported


@pytest.mark.parametrize("is_async", [False, True])
def test_a_bug_of_the_callers_ends_the_runs_spans_and_gives_the_context_back(
    pipeline: Telemetry, is_async: bool
) -> None:
    """An argument the SDK refuses (a bug in the caller's code) raises as without healjson; the
    caller's own span is current again, and the run's spans ended with it, not at collection."""
    tracer = pipeline.tracer_provider.get_tracer("caller")
    with ScriptedServer([ScriptedReply(body=body(GOOD))]) as server:
        if is_async:
            sdk: Any = openai.AsyncOpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
        else:
            sdk = openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
        create = healjson.wrap(sdk).chat.completions.create

        def buggy() -> Any:
            made = create(model="m", messages=SAID, response_model=Ticket, bogus=1)
            return asyncio.run(made) if is_async else made

        with tracer.start_as_current_span("outer") as outer:
            with pytest.raises(TypeError):
                buggy()
            assert trace.get_current_span() is outer
        if is_async:
            asyncio.run(sdk.close())
        else:
            sdk.close()
    names = [span.name for span in pipeline.finished()]
    assert any(name.startswith("healjson.heal") for name in names), names
    assert names[-1] == "outer"


def test_a_reply_no_call_made_is_no_client_span_and_no_counted_call(pipeline: Telemetry) -> None:
    """A run answered from the response cache, and `validate`'s reply handed in: each has a
    span of healjson's own (`healjson.cached` / `healjson.given`, INTERNAL, `healjson.cache_hit`
    set as it was), no client `chat` span, and `healjson.attempts` counts the one model call
    made, not them."""
    cache = healjson.ResponseCache.memory()
    with ScriptedServer([ScriptedReply(body=body(GOOD))] * 2) as server:
        sdk = openai.OpenAI(base_url=server.base_url, api_key=KEY, max_retries=0)
        with sdk:
            wrapped = healjson.wrap(sdk, cache=cache)
            outcomes = [
                wrapped.chat.completions.create(model="m", messages=SAID, response_model=Ticket)
                for _ in range(2)
            ]
        assert 1 == len(server.requests)
    assert [1, 0] == [outcome.calls for outcome in outcomes]
    assert healjson.validate(GOOD, Ticket).ok
    kinds = [
        (span.name, span.kind)
        for span in pipeline.finished()
        if span.name != "healjson.heal Ticket"
    ]
    assert [("chat m", trace.SpanKind.CLIENT)] == [
        k for k in kinds if k[1] is trace.SpanKind.CLIENT
    ]
    assert ("healjson.cached", trace.SpanKind.INTERNAL) in kinds
    assert ("healjson.given", trace.SpanKind.INTERNAL) in kinds
    counted = [point.value for point in pipeline.metric("healjson.attempts")]
    assert 1 == sum(counted)


def test_a_stream_left_before_its_end_leaves_its_call_span_an_error(pipeline: Telemetry) -> None:
    """A streamed run the caller closes after a few pieces: the call's span ends once, as an
    error saying the run ended before its answer, under the run's span that did not finish."""
    long = '{"urgency": 3, "summary": "' + "x" * 400 + '"}'
    reply = ScriptedReply(content=long, chunk_chars=10)
    with ScriptedServer([reply]) as server:
        abandoned_stream(server, KEY, SAID, Ticket)
    spans = {span.name: span for span in pipeline.finished()}
    assert 2 == len(pipeline.finished())
    assert "the run ended before this call's answer" == spans["chat m"].status.description
    assert "the run did not finish" == spans["healjson.heal Ticket"].status.description
