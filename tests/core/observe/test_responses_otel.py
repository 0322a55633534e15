"""Responses calls get the spans chat calls get: one run span, one `chat <model>` client span
per call with the gen_ai.* attributes (the token limit from `max_output_tokens`), and an
instrumented `Responses.create` is seen as the SDK's own client span."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from openai.resources.responses.responses import AsyncResponses, Responses
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from pydantic import BaseModel

import healjson
from healjson import Healed
from healjson._core.observe import telemetry
from healjson.testing import ScriptedServer
from otel_kit import Telemetry, installed


class Invoice(BaseModel):
    number: str
    total: int


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[Telemetry]:
    """A configured OpenTelemetry SDK, as an application would set one up (`otel_kit`)."""
    with installed(monkeypatch, Telemetry()) as state:
        yield state


def test_a_responses_run_has_a_run_span_and_a_client_span_per_call(
    spans: Telemetry,
) -> None:
    """A run through the Responses API gets one run span and one client span per call, as a chat
    run does."""
    with (
        ScriptedServer(
            ['{"number": "A", "total": "many"}', '{"number": "A", "total": 2}']
        ) as server,
        openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as sdk,
    ):
        outcome = healjson.wrap(sdk).responses.create(
            model="gpt-test", input="Extract.", response_model=Invoice, max_output_tokens=300
        )
    assert isinstance(outcome, Healed)
    finished: list[ReadableSpan] = spans.finished()
    [run] = [s for s in finished if s.name.startswith("healjson.heal")]
    calls = sorted((s for s in finished if s.parent is not None), key=lambda s: s.start_time or 0)
    assert ["chat gpt-test", "chat gpt-test"] == [s.name for s in calls]
    assert all(s.kind is trace.SpanKind.CLIENT for s in calls)
    first = dict(calls[0].attributes or {})
    assert ("chat", "gpt-test", 300) == (
        first["gen_ai.operation.name"],
        first["gen_ai.request.model"],
        first["gen_ai.request.max_tokens"],
    )
    assert first["gen_ai.usage.input_tokens"] > 0
    assert ("healed", 2) == (
        dict(run.attributes or {})["healjson.outcome"],
        dict(run.attributes or {})["healjson.calls"],
    )


class _Instrumented:
    """What an instrumentation puts in place of an SDK method (a wrapt proxy, in short)."""

    def __init__(self, wrapped: Any) -> None:
        self.__wrapped__ = wrapped

    def __get__(self, instance: Any, owner: Any) -> Any:
        return self.__wrapped__.__get__(instance, owner)


@pytest.mark.parametrize("resource", [Responses, AsyncResponses])
def test_an_instrumented_responses_create_is_detected(
    monkeypatch: pytest.MonkeyPatch, resource: type
) -> None:
    """An OpenTelemetry-instrumented `Responses.create` (sync or async) is detected as SDK
    instrumentation."""
    assert not telemetry.sdk_instrumented()
    monkeypatch.setattr(resource, "create", _Instrumented(vars(resource)["create"]))
    assert telemetry.sdk_instrumented()
