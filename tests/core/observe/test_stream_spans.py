"""A healed stream's OpenTelemetry spans stay healjson's: the attempt's span is current while
healjson pulls the stream (an instrumented SDK nests under it), never in the caller's loop body,
whose own spans keep the caller's parent. The real OpenTelemetry SDK, an in-memory exporter."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import openai
import pytest
from opentelemetry import trace
from pydantic import BaseModel

import healjson
from healjson import Healed, Healer
from healjson.testing import ScriptedReply, ScriptedServer
from otel_kit import Telemetry, installed

USER = [{"role": "user", "content": "Extract it."}]
GOOD = '{"customer": "Ada", "total": 3.5}'
PIECES = [GOOD[:9], GOOD[9:19], GOOD[19:28], GOOD[28:]]


class Order(BaseModel):
    customer: str
    total: float


class Spans(Telemetry):
    """The SDK (`otel_kit`), and a tracer of the application's own (`app`)."""

    def __init__(self) -> None:
        super().__init__()
        self.app = self.tracer_provider.get_tracer("app")


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[Spans]:
    """A configured OpenTelemetry SDK, as an application would set one up (`otel_kit`)."""
    with installed(monkeypatch, Spans()) as state:
        yield state


def _check(spans: Spans, snapshots: int) -> None:
    body = spans.named("in the loop")
    assert snapshots == len(body) > 1
    assert all("outer" == spans.parent_of(span) for span in body)
    [run] = spans.named("healjson.heal")
    assert "outer" == spans.parent_of(run)
    pulls = spans.named("pull")
    assert pulls
    assert all(spans.parent_of(span) == "chat m" for span in pulls)  # the SDK's, nested


@pytest.mark.parametrize("guarded", [False, True], ids=["healer", "deadline"])
def test_spans_in_a_sync_loop_body_are_not_healjsons_children(spans: Spans, guarded: bool) -> None:
    """Each pull of the stream runs under the attempt's span (a stand-in for an instrumented
    SDK opens a span there); the caller's span inside `for snapshot in stream` does not."""

    def pieces() -> Iterator[str]:
        for piece in PIECES:
            with spans.app.start_as_current_span("pull"):
                pass
            yield piece

    def call(messages: Any, **params: Any) -> Iterator[str]:
        return pieces()

    policy = healjson.HealPolicy(deadline_s=30) if guarded else healjson.HealPolicy()
    with spans.app.start_as_current_span("outer"):
        stream = Healer(Order, policy=policy).stream(call, USER, model="m")
        count = 0
        for _ in stream:
            with spans.app.start_as_current_span("in the loop"):
                count += 1
        assert trace.get_current_span().name == "outer"  # type: ignore[attr-defined]
    assert isinstance(stream.outcome, Healed)
    _check(spans, count)


def test_spans_in_an_async_loop_body_are_not_healjsons_children(spans: Spans) -> None:
    """Spans the caller opens while pulling an async stream's pieces are children of the caller's
    span, not of healjson's."""

    async def pieces() -> AsyncIterator[str]:
        for piece in PIECES:
            with spans.app.start_as_current_span("pull"):
                await asyncio.sleep(0)
            yield piece

    async def call(messages: Any, **params: Any) -> AsyncIterator[str]:
        return pieces()

    async def main() -> tuple[Any, int]:
        with spans.app.start_as_current_span("outer"):
            stream = Healer(Order).astream(call, USER, model="m")
            count = 0
            async for _ in stream:
                with spans.app.start_as_current_span("in the loop"):
                    count += 1
                await asyncio.sleep(0)
            assert trace.get_current_span().name == "outer"  # type: ignore[attr-defined]
        return stream.outcome, count

    outcome, count = asyncio.run(main())
    assert isinstance(outcome, Healed)
    _check(spans, count)


def test_a_wrapped_openai_stream_leaves_the_loop_body_to_the_caller(spans: Spans) -> None:
    """Over the real openai SDK and HTTP: the same."""
    with ScriptedServer([ScriptedReply(GOOD, chunk_chars=6)]) as server:
        sdk = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
        with spans.app.start_as_current_span("outer"):
            stream = healjson.wrap(sdk).chat.completions.create(
                model="m", messages=USER, response_model=Order, stream=True
            )
            count = 0
            for _ in stream:
                with spans.app.start_as_current_span("in the loop"):
                    count += 1
        sdk.close()
    assert isinstance(stream.outcome, Healed)
    body = spans.named("in the loop")
    assert count == len(body) > 1
    assert all("outer" == spans.parent_of(span) for span in body)
