"""OpenTelemetry spans and metrics for healing runs (the optional extra `otel`).

Only `opentelemetry-api` is used, and only when the application has configured an SDK: with
the API's default (proxy or no-op) tracer and meter providers, `for_run` returns None and a run
pays one look at `sys.modules` (done in `events`) and, once OpenTelemetry is imported, one at
the API's provider slot (`for_run`).

One span per run (`healjson.heal <Target>`), one child span per model call, named and
attributed by the OpenTelemetry GenAI semantic conventions (`chat <model>`, kind CLIENT,
`gen_ai.operation.name`, `gen_ai.request.model`, `gen_ai.response.model`,
`gen_ai.usage.input_tokens` / `output_tokens`, `gen_ai.response.finish_reasons`), plus
healjson's own attributes under `healjson.*` (run id, attempt, strategy, flags, diagnostics,
outcome, reason, layer, changed fields, tokens saved by local healing, cost, and the run's
token totals as `healjson.usage.*`: `gen_ai.usage.*` is only on the call spans). While a model
call runs, its span is the current span, so an instrumented SDK nests its own span under it
instead of beside it. When an instrumentation of a provider's SDK is active (the
official `opentelemetry-instrumentation-openai-v2`, OpenLLMetry, OpenInference: each wraps the
SDK's `create`), that SDK span is the GenAI client span, and healjson's call span does not
repeat it: it is `healjson.attempt N` (kind INTERNAL) with its token counts as
`healjson.usage.*`, so a backend that sums `gen_ai.usage.*` over client spans counts each call
once.

A run whose first model call answered for another run of the same step (an integration's
hand-over: LangChain's first answer of a step belongs to the agent's tools, or to one member of
a union) hands its spans on (`handed_on`): the run that takes the answer up goes on in them (the
run's span renamed for it, the call's span ended by its first attempt), so the step has the
spans of a plain run, none left open or failed; spans no run takes up (the answer was no run's
to judge) end with `healjson.outcome` `passed` and no error.

Content (the request's messages, the model's output) is recorded only when the user opts in
as the conventions say: `OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`; without it, a
diagnostic's path shows only the names the target declares (a key the model invented is
`<key>`, `shown`). Every string attribute passes the redactor and is bounded (`shown.said`).
A failed call's span has `error.type` as the conventions ask: the exception's fully-qualified
class name, or healjson's own stop (`timeout` when the run's deadline cut the call); a degraded
run's span has the run's reason.

Metrics (when a meter provider is configured): `healjson.outcomes` (counter, by `ok` and
`healjson.reason`), `healjson.attempts` (counter of model calls, by `healjson.strategy`: a call
whose stream the caller abandoned counts too, it was made) and `healjson.attempts_per_run`
(histogram).
"""

from __future__ import annotations

import functools
import json
import os
import sys
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import FunctionType
from typing import TYPE_CHECKING, Any, Final, TypeVar

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.environment_variables import OTEL_PYTHON_TRACER_PROVIDER

from healjson._core.outcome.attempt import was_given
from healjson._core.outcome.savings import tokens_saved
from healjson._core.wire import formats as wire

from .shown import CONTENT_CHARS, declared_names, said, shown_path

if TYPE_CHECKING:
    from healjson._core.outcome.attempt import Attempt
    from healjson._core.outcome.outcome import Outcome

__all__ = ["RunSpans", "error_type", "for_run", "handed_on", "idle", "sdk_instrumented"]

_CAPTURE_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"


class _Unconfigured:
    """The last provider seen to be the API's default (one identity check per run after), and
    what tells, without asking the API, that no provider is set: the API's own lookup as
    imported (a replaced one is always asked), and whether the environment named a provider
    when this module was loaded (the API then builds it on its first lookup)."""

    provider: Any = None
    lookup: Any = trace.get_tracer_provider
    named: bool = OTEL_PYTHON_TRACER_PROVIDER in os.environ


# The spans a run handed on (`handed_on`), for the next run started in this context to take up;
# `_HANDING` while that run's flow closes (its release then parks its spans here).
_HANDED: ContextVar[Any] = ContextVar("healjson_handed_spans", default=None)
_HANDING: Final = object()


def for_run(run_id: str, spec: Any) -> RunSpans | None:
    """The spans of a run that starts now (those a run handed on to it, `handed_on`), or None
    when no OpenTelemetry SDK is configured (`idle`)."""
    if idle():
        return None
    handed = _HANDED.get()
    try:
        if isinstance(handed, RunSpans):
            _HANDED.set(None)
            return handed.taken_up(run_id, spec)
        return RunSpans(_tracer(trace.get_tracer_provider()), run_id, spec, _instruments())
    except Exception:  # a raising sampler or span processor: the run goes on without spans
        return None


_SpanMethod = TypeVar("_SpanMethod", bound=Callable[..., Any])


def _guarded(method: _SpanMethod) -> _SpanMethod:
    """A `RunSpans` method that never breaks the run: the telemetry pipeline's own failure (a
    span processor, sampler, exporter or metric hook that raises) is the pipeline's, not the
    run's, as a broken log sink's is (`events._emit`). The call's span is let go and the
    caller's context restored. (Taking spans up is guarded where it is asked, `for_run`.)"""

    @functools.wraps(method)
    def guarded(self: RunSpans, *args: Any, **kwargs: Any) -> None:
        try:
            method(self, *args, **kwargs)
        except Exception:
            self._detach()
            self._attempt = None

    return guarded  # type: ignore[return-value]


@contextmanager
def handed_on(flow: Generator[Any, Any, Any] | None) -> Iterator[None]:
    """End the run of `flow`, suspended at a model call whose answer belongs to another run of
    the same step, by handing that answer on: the flow is closed and its spans stay open, and
    the next run started in this context, inside the block, takes them up (`for_run`) as if it
    had made the call. Spans no run took up end at the block's end: with `healjson.outcome`
    `passed` (the answer was no run's to judge), or as a run that did not finish when the block
    raised. No flow: nothing to hand on."""
    token = _HANDED.set(_HANDING)
    try:
        if flow is not None:
            flow.close()  # its run's release parks its spans (`RunSpans.release`)
        if _HANDED.get() is _HANDING:  # no call in flight: nothing was parked
            _HANDED.set(None)
        yield
    except BaseException:
        left = _HANDED.get()
        _HANDED.reset(token)
        if isinstance(left, RunSpans):
            left.release()
        raise
    left = _HANDED.get()
    _HANDED.reset(token)
    if isinstance(left, RunSpans):
        left.passed()


def idle() -> bool:
    """True when no OpenTelemetry SDK is configured: a run sends no spans or metrics. Without a
    provider set in code or named by the environment, the API's lookup is not asked: it reads
    the environment on every call while none is set (SDKs that import OpenTelemetry without
    configuring it, a provider's among them, would pay that on every run)."""
    if (
        trace.get_tracer_provider is _Unconfigured.lookup
        and not _Unconfigured.named
        and trace.__dict__.get("_TRACER_PROVIDER", trace) is None
    ):
        return True
    provider = trace.get_tracer_provider()
    if provider is _Unconfigured.provider:
        return True
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        _Unconfigured.provider = provider
        return True
    return False


def sdk_instrumented() -> bool:
    """True when an OpenTelemetry instrumentation of a registered provider's SDK is active:
    the SDK class's own `create` is then a wrapper object (instrumentations patch it with
    `wrapt`; such a proxy passes `isinstance` for a function, its `type` does not) instead of
    the plain function the SDK defines. Checked per call: `instrument()` and `uninstrument()`
    may come and go."""
    for module_name, names in wire.sdk_creates():  # each wire format names its SDK's
        module = sys.modules.get(module_name)
        if module is None:
            continue
        for name in names:
            raw = vars(getattr(module, name, object)).get("create")
            if raw is not None and type(raw) is not FunctionType and hasattr(raw, "__wrapped__"):
                return True
    return False


@functools.lru_cache(maxsize=8)
def _tracer(provider: Any) -> trace.Tracer:
    from importlib.metadata import version

    return provider.get_tracer("healjson", version("healjson"))  # type: ignore[no-any-return]


class _Instruments:
    __slots__ = ("attempts", "outcomes", "per_run")

    def __init__(self, meter: metrics.Meter) -> None:
        self.outcomes = meter.create_counter(
            "healjson.outcomes", unit="{run}", description="healing runs, by outcome and reason"
        )
        self.attempts = meter.create_counter(
            "healjson.attempts", unit="{call}", description="model calls, by repair strategy"
        )
        self.per_run = meter.create_histogram(
            "healjson.attempts_per_run", unit="{call}", description="model calls per run"
        )


def _instruments() -> _Instruments | None:
    provider = metrics.get_meter_provider()
    if type(provider).__name__ in ("_ProxyMeterProvider", "NoOpMeterProvider"):
        return None
    return _instruments_for(provider)


@functools.lru_cache(maxsize=8)
def _instruments_for(provider: Any) -> _Instruments:
    from importlib.metadata import version

    return _Instruments(provider.get_meter("healjson", version("healjson")))


def _capture_content() -> bool:
    return os.environ.get(_CAPTURE_ENV, "").strip().lower() in ("1", "true", "yes")


class RunSpans:
    """One run's span and its attempts' child spans (see the module docstring)."""

    __slots__ = (
        "_attempt",
        "_calling",
        "_content",
        "_declared",
        "_instruments",
        "_next",
        "_run",
        "_run_id",
        "_spec",
        "_token",
        "_tracer",
    )

    def __init__(
        self, tracer: trace.Tracer, run_id: str, spec: Any, instruments: _Instruments | None
    ) -> None:
        self._tracer = tracer
        self._instruments = instruments
        self._content = _capture_content()
        self._run_id = run_id  # on every span of the run, its calls' too
        self._spec = spec
        self._declared: frozenset[str] | None = None  # the target's names, when first needed
        name, attributes = _run_span(run_id, spec)
        attributes["gen_ai.operation.name"] = "heal"
        self._run = tracer.start_span(name, attributes=attributes)
        self._attempt: trace.Span | None = None
        self._token: object | None = None
        self._next: tuple[int, str] | None = None  # the repair announced: call, strategy
        self._calling = "initial"  # the strategy of the call in flight

    def taken_up(self, run_id: str, spec: Any) -> RunSpans:
        """These spans, handed on (`handed_on`), as those of the run `run_id` of `spec` that
        takes up the answer: the run's span named and attributed for it (its call's span stays
        open for its first attempt)."""
        name, attributes = _run_span(run_id, spec)
        given = getattr(self._run, "attributes", None) or {}
        if "healjson.contracts" in given and "healjson.contracts" not in attributes:
            attributes["healjson.contracts"] = []
        self._run.update_name(name)
        self._run.set_attributes(attributes)
        self._run_id = run_id
        self._spec, self._declared = spec, None
        if self._attempt is not None:
            self._attempt.set_attribute("healjson.run_id", run_id)
        return self

    @_guarded
    def passed(self) -> None:
        """Spans handed on that no run took up: the answer was no run's to judge (an
        integration passed it through untouched). They end, with no outcome and no error."""
        self._end_attempt()
        self._run.set_attribute("healjson.outcome", "passed")
        self._run.end()

    def repair_asked(self, number: int, strategy: str) -> None:
        """Call `number` will be a repair by `strategy` (what a call abandoned in flight is
        counted by)."""
        self._next = (number, strategy)

    @_guarded
    def call_started(self, number: int, params: Mapping[str, Any]) -> None:
        """A model call starts: its span, current until the call's attempt is recorded."""
        self._end_attempt()
        announced = self._next
        self._calling = announced[1] if announced and announced[0] == number else "initial"
        model = params.get("model")
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat",
            "healjson.run_id": self._run_id,
            "healjson.attempt": number,
        }
        if isinstance(model, str):
            attributes["gen_ai.request.model"] = model
        limit = wire.token_limit(params)[1]  # the request's wire format names its limit
        attributes.update(
            (name, value)
            for value, name in (
                (limit, "gen_ai.request.max_tokens"),
                (params.get("temperature"), "gen_ai.request.temperature"),
            )
            if isinstance(value, int | float) and not isinstance(value, bool)
        )
        parent = trace.set_span_in_context(self._run)
        if sdk_instrumented():  # the SDK's span is the client span: this one wraps it
            del attributes["gen_ai.operation.name"]
            name, kind = f"healjson.attempt {number}", trace.SpanKind.INTERNAL
        else:
            name = f"chat {model}" if isinstance(model, str) else "chat"
            kind = trace.SpanKind.CLIENT
        span = self._tracer.start_span(name, context=parent, kind=kind, attributes=attributes)
        self._attempt = span
        self._token = otel_context.attach(trace.set_span_in_context(span))

    @_guarded
    def attempt(self, record: Attempt) -> None:
        """The call's attempt is recorded: its span gets what came back, and ends."""
        span = self._attempt
        called = not (record.cache_hit or was_given(record))
        if span is None:  # a reply judged without a call (`validate`, the response cache's):
            # a span of no duration, healjson's own (INTERNAL): no client call was made
            parent = trace.set_span_in_context(self._run)
            span = self._tracer.start_span(
                "healjson.cached" if record.cache_hit else "healjson.given",
                context=parent, kind=trace.SpanKind.INTERNAL,
                attributes={"healjson.run_id": self._run_id, "healjson.attempt": record.number,
                            "healjson.cache_hit": record.cache_hit},
            )  # fmt: skip
        self._detach()
        usage = record.usage
        # a client span's counts are GenAI usage; a span wrapping the SDK's own client span
        # keeps them as healjson's (the SDK span reports them)
        client = getattr(span, "kind", trace.SpanKind.CLIENT) is trace.SpanKind.CLIENT
        ns = "gen_ai" if client else "healjson"
        attributes: dict[str, Any] = {
            "healjson.strategy": str(record.strategy),
            "healjson.ok": record.ok,
            "healjson.flags": [str(flag) for flag in record.flags],
            "healjson.diagnostics": len(record.diagnostics),
            f"{ns}.usage.input_tokens": usage.prompt_tokens,
            f"{ns}.usage.output_tokens": usage.completion_tokens,
            "healjson.usage.estimated": usage.estimated,
        }
        if usage.cache_read_tokens:
            attributes[f"{ns}.usage.cache_read.input_tokens"] = usage.cache_read_tokens
        if usage.cache_write_tokens:
            attributes[f"{ns}.usage.cache_creation.input_tokens"] = usage.cache_write_tokens
        if usage.reasoning_tokens:
            attributes["healjson.usage.reasoning_tokens"] = usage.reasoning_tokens
        # what the provider or the model wrote: redacted (a proxy may echo a key anywhere) and
        # bounded, as captured content is
        if record.model:
            attributes[f"{ns}.response.model"] = said(record.model)
        if record.finish_reason:
            attributes[f"{ns}.response.finish_reasons"] = [said(record.finish_reason)]
        if record.diagnostics:
            first = record.diagnostics[0]
            attributes["healjson.diagnostic"] = said(
                f"{self._path(first.path)}: {first.constraint}"
            )
        if self._content:
            attributes["gen_ai.input.messages"] = _content(
                [dict(message) for message in record.messages]
            )
            if record.raw_text is not None:
                attributes["gen_ai.output.messages"] = _content(
                    [{"role": "assistant", "content": record.raw_text}]
                )
        span.set_attributes(attributes)
        if record.error is not None:
            span.set_attribute("error.type", error_type(record))
            span.set_status(trace.Status(trace.StatusCode.ERROR, said(record.error)))
        span.end()
        self._attempt = None
        if self._instruments is not None and called:  # model calls only
            self._instruments.attempts.add(1, {"healjson.strategy": str(record.strategy)})

    @_guarded
    def finished(self, outcome: Outcome[Any]) -> None:
        """The run's outcome: the run span gets it, and ends."""
        self._end_attempt()
        usage = outcome.usage
        attributes: dict[str, Any] = {
            "healjson.outcome": "healed" if outcome.ok else "degraded",
            "healjson.calls": outcome.calls,
            "healjson.layer": _layer(outcome),
            # the run's totals under healjson's names only: each call's span reports its own
            # `gen_ai.usage.*`, and a backend summing those must not count the run again
            "healjson.usage.input_tokens": usage.prompt_tokens,
            "healjson.usage.output_tokens": usage.completion_tokens,
            "healjson.usage.estimated": usage.estimated,
            "healjson.tokens_saved": tokens_saved(outcome),
        }
        if usage.cache_read_tokens:
            attributes["healjson.usage.cache_read.input_tokens"] = usage.cache_read_tokens
        if usage.reasoning_tokens:
            attributes["healjson.usage.reasoning_tokens"] = usage.reasoning_tokens
        if outcome.ok:
            attributes["healjson.flags"] = [str(flag) for flag in outcome.flags]
            attributes["healjson.changed_fields"] = len(outcome.changed_fields)
            attributes["healjson.warnings"] = len(outcome.warnings)
            attributes["healjson.dropped"] = len(outcome.dropped)
        else:
            attributes["healjson.reason"] = str(outcome.reason)
            attributes["error.type"] = str(outcome.reason)  # healjson's own stop: low cardinality
            attributes["healjson.diagnostics"] = len(outcome.errors)
        cost = usage.cost
        if cost is not None:
            attributes["healjson.cost_usd"] = cost
        self._run.set_attributes(attributes)
        if not outcome.ok:
            self._run.set_status(trace.Status(trace.StatusCode.ERROR, str(outcome.reason)))
        self._run.end()
        instruments = self._instruments
        if instruments is not None:
            reason = "healed" if outcome.ok else str(outcome.reason)
            instruments.outcomes.add(1, {"ok": outcome.ok, "healjson.reason": reason})
            instruments.per_run.record(outcome.calls, {"ok": outcome.ok})

    @_guarded
    def release(self) -> None:
        """However the run ended: no span left open, the caller's context restored. A run
        released while it hands its answer on (`handed_on`: its flow closed at a call in
        flight) leaves its spans open, parked for the run that takes the answer up."""
        if self._attempt is not None and _HANDED.get() is _HANDING:
            self._detach()
            _HANDED.set(self)
            return
        if self._attempt is not None:  # a call begun, never recorded: a stream closed early,
            # or the caller's own code raised out of it
            self._attempt.set_status(
                trace.Status(trace.StatusCode.ERROR, "the run ended before this call's answer")
            )
            self._attempt.set_attribute("error.type", "abandoned")
            if self._instruments is not None:  # the call was made (and paid for): it counts
                self._instruments.attempts.add(1, {"healjson.strategy": self._calling})
        self._end_attempt()
        if self._run.is_recording():
            self._run.set_status(trace.Status(trace.StatusCode.ERROR, "the run did not finish"))
            self._run.end()

    def _path(self, path: str) -> str:
        """A diagnostic's path as the span shows it: whole with content capture on, else only
        the target's declared names (`shown.shown_path`)."""
        if self._content:
            return path
        if self._declared is None:
            self._declared = declared_names(self._spec)
        return shown_path(path, self._declared)

    def _end_attempt(self) -> None:
        span = self._attempt
        self._detach()
        if span is not None:
            span.end()
            self._attempt = None

    def _detach(self) -> None:
        token = self._token
        self._token = None
        if token is not None:
            try:
                otel_context.detach(token)  # type: ignore[arg-type]
            except Exception:  # released from another context (a collected generator): no-op
                return


def _run_span(run_id: str, spec: Any) -> tuple[str, dict[str, Any]]:
    """The name and the attributes of the span of the run `run_id` of `spec`."""
    target = getattr(spec, "target_name", None) or "value"
    attributes: dict[str, Any] = {"healjson.run_id": run_id, "healjson.target": target}
    names = getattr(spec, "contract_names", ())
    if names:
        attributes["healjson.contracts"] = list(names)
    return f"healjson.heal {target}", attributes


def _layer(outcome: Outcome[Any]) -> str:
    """How far healing went: `L1` (the first reply, healed locally or clean), `L3` (a repair
    call was needed), `L4` (degraded)."""
    if not outcome.ok:
        return "L4"
    return "L1" if outcome.calls <= 1 else "L3"


def _content(messages: list[dict[str, Any]]) -> str:
    return said(json.dumps(messages, ensure_ascii=False, default=str), CONTENT_CHARS)


def error_type(record: Attempt) -> str:
    """A failed call's `error.type` by the OpenTelemetry conventions, as its failure named it
    (`stops.failure_diagnostic`, `budget.deadline_passed`): the fully-qualified class name of
    the exception the call raised (`openai.RateLimitError`; a builtin's bare name), the HTTP
    status of an error answer read from a body, or healjson's own stop (`timeout`: the run's
    deadline); `_OTHER` when the failure named none."""
    for diagnostic in record.diagnostics:
        given = diagnostic.extra.get("error_type")
        if isinstance(given, str) and given:
            return given
    return "_OTHER"
