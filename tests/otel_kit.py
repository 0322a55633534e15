"""A configured OpenTelemetry SDK for the tests, as an application would set one up: spans and
metrics kept in memory, handed to healjson through the API's provider lookups (so no
process-wide provider outlives a test). A span processor placed first, or a sampler, can be
given (one that raises, to show the run does not break)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import openai
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import healjson
from healjson._core.observe import telemetry
from healjson.testing import ScriptedServer

__all__ = ["Telemetry", "abandoned_stream", "installed"]


class Telemetry:
    """The SDK: its exported spans (`spans`) and its metrics (`metrics`)."""

    def __init__(self, processor: SpanProcessor | None = None, sampler: Any = None) -> None:
        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider(sampler=sampler) if sampler else TracerProvider()
        if processor is not None:
            self.tracer_provider.add_span_processor(processor)
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.metrics = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.metrics])

    def finished(self) -> list[ReadableSpan]:
        return list(self.spans.get_finished_spans())

    def clear(self) -> None:
        """Forget the spans finished so far."""
        self.spans.clear()

    def named(self, prefix: str) -> list[ReadableSpan]:
        """The finished spans whose name starts with `prefix`."""
        return [s for s in self.finished() if s.name.startswith(prefix)]

    def parent_of(self, span: ReadableSpan) -> str | None:
        """The name of `span`'s parent among the finished spans (None: a root; `?`: a parent
        not finished)."""
        if span.parent is None:
            return None
        for other in self.finished():
            if other.context is not None and other.context.span_id == span.parent.span_id:
                return other.name
        return "?"

    def runs(self) -> list[ReadableSpan]:
        return [s for s in self.finished() if s.name.startswith("healjson.heal")]

    def children(self, run: ReadableSpan) -> list[ReadableSpan]:
        assert run.context is not None
        return [
            s
            for s in self.finished()
            if s.parent is not None and s.parent.span_id == run.context.span_id
        ]

    def metric(self, name: str) -> list[Any]:
        data = self.metrics.get_metrics_data()
        points = []
        for resource in data.resource_metrics if data else ():
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == name:
                        points.extend(metric.data.data_points)
        return points


@contextmanager
def installed(monkeypatch: pytest.MonkeyPatch, state: Telemetry) -> Iterator[Telemetry]:
    """`state` is the SDK healjson finds while the block runs; shut down after."""
    monkeypatch.setattr(telemetry.trace, "get_tracer_provider", lambda: state.tracer_provider)
    monkeypatch.setattr(telemetry.metrics, "get_meter_provider", lambda: state.meter_provider)
    try:
        yield state
    finally:
        state.tracer_provider.shutdown()


def abandoned_stream(server: ScriptedServer, key: str, messages: Any, target: Any) -> None:
    """A caller who reads four pieces of a healed sync stream (`target`, the server's one
    scripted answer), breaks out of the loop and closes the stream."""
    sdk = openai.OpenAI(base_url=server.base_url, api_key=key, max_retries=0)
    with sdk:
        stream = healjson.wrap(sdk).chat.completions.create(
            model="m", messages=messages, response_model=target, stream=True
        )
        for seen, _ in enumerate(stream):
            if seen == 3:
                break
        stream.close()
