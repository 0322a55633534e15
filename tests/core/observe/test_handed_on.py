"""A run that hands its first model call's answer on to another run of the same step
(`events.handed_on`, an integration's hand-over) leaves the spans of one run: the run that takes
the answer up goes on in the handing run's spans (its run span renamed for it, the call's span
ended by its first attempt), spans no run takes up end `passed`, and a block that raises ends
them as a run that did not finish. The real OpenTelemetry SDK, exporting to memory."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode
from pydantic import BaseModel

from healjson import Healed, Healer, Reply, contract
from healjson._core.observe import events
from healjson._frameworks.core import HandOver, drive_async, drive_sync, handed_over
from otel_kit import Telemetry, installed


class Ship(BaseModel):
    order_id: str


class Refund(BaseModel):
    order_id: str
    amount: float


@contract(fields=("amount",))
def positive(refund: Refund) -> str | None:
    return None if refund.amount > 0 else "must be > 0"


MESSAGES = [{"role": "user", "content": "Refund order A1."}]
FIRST = '{"order_id": "A1"}'  # a Refund without its amount: the taking run repairs it
SECOND = '{"order_id": "A1", "amount": 12.5}'


class Moved(HandOver):
    """The first answer belongs to another run: raised out of the driver, as LangChain does."""

    def __init__(self, reply: Reply, elapsed_s: float) -> None:
        super().__init__("handed over")
        self.reply = reply
        self.elapsed_s = elapsed_s


def moving(text: str, delay_s: float = 0.0) -> Any:
    def call(messages: Any, **params: Any) -> str:
        started = time.perf_counter()
        time.sleep(delay_s)
        raise Moved(Reply(text), time.perf_counter() - started)

    return call


def answering(text: str) -> Any:
    return lambda messages, **params: text


@pytest.fixture
def spans(monkeypatch: pytest.MonkeyPatch) -> Iterator[Telemetry]:
    """A configured OpenTelemetry SDK, as an application would set one up (`otel_kit`)."""
    with installed(monkeypatch, Telemetry()) as state:
        yield state


def runs_and_calls(state: Telemetry) -> tuple[ReadableSpan, list[ReadableSpan]]:
    """The one run span and its call spans (in start order); no other span, nothing current."""
    found = state.finished()
    [run] = [s for s in found if s.name.startswith("healjson.heal")]
    assert run.context is not None
    calls = sorted((s for s in found if s is not run), key=lambda s: s.start_time or 0)
    assert all(s.parent is not None and s.parent.span_id == run.context.span_id for s in calls)
    assert not trace.get_current_span().get_span_context().is_valid
    return run, calls


def test_the_run_that_takes_an_answer_up_goes_on_in_the_spans_of_the_run_that_made_it(
    spans: Telemetry,
) -> None:
    """A union run's first call, answered for its `Refund` member, handed on: one run span,
    named, identified and attributed for the member's run with its outcome, over one call span
    per model call, the first one spanning the call the union's run made."""
    made = Healer(Ship | Refund).start(MESSAGES)
    with pytest.raises(Moved) as moved:
        drive_sync(made, moving(FIRST, delay_s=0.05))
    handing = time.time_ns()
    member = Healer(Refund, contracts=[positive])
    with events.handed_on(made.built):
        taking = handed_over(
            member.spec, MESSAGES, None, moved.value.reply,
            elapsed_s=moved.value.elapsed_s, started=time.monotonic(),
        )  # fmt: skip
        outcome = drive_sync(taking, answering(SECOND))

    assert isinstance(outcome, Healed)
    run, calls = runs_and_calls(spans)
    attributes = dict(run.attributes or {})
    assert "healjson.heal Refund" == run.name
    assert (outcome.run_id, "Refund", ("positive",), "healed") == (
        attributes["healjson.run_id"],
        attributes["healjson.target"],
        attributes["healjson.contracts"],
        attributes["healjson.outcome"],
    )
    assert StatusCode.UNSET is run.status.status_code
    assert [(1, False), (2, True)] == [
        (dict(s.attributes or {})["healjson.attempt"], dict(s.attributes or {})["healjson.ok"])
        for s in calls
    ]
    first = calls[0]
    assert first.start_time is not None
    assert first.end_time is not None
    assert first.start_time < handing  # opened by the union's run, for its call
    assert first.end_time - first.start_time >= 50_000_000  # it spans the call: 0.05 s
    assert all(s.status.status_code is StatusCode.UNSET for s in calls)


def test_an_async_run_hands_its_spans_on_alike(spans: Telemetry) -> None:
    """The async driver's run hands its spans on as the sync one's does, in one task."""

    async def step() -> Any:
        made = Healer(Ship | Refund).start(MESSAGES)
        try:
            await drive_async(made, moving(FIRST))
        except Moved as moved:
            with events.handed_on(made.built):
                taking = handed_over(
                    Healer(Refund).spec, MESSAGES, None, moved.reply,
                    elapsed_s=moved.elapsed_s, started=time.monotonic(),
                )  # fmt: skip
                return await drive_async(taking, answering(SECOND))
        raise AssertionError("the first answer was not handed on")

    outcome = asyncio.run(step())
    assert isinstance(outcome, Healed)
    run, calls = runs_and_calls(spans)
    assert ("healjson.heal Refund", 2) == (run.name, len(calls))


def test_spans_no_run_takes_up_end_passed_without_an_error(spans: Telemetry) -> None:
    """An answer handed on to no run (passed through untouched): the handing run's spans end,
    its run span said `passed`, neither an error, and the caller's context is restored."""
    made = Healer(Refund, contracts=[positive]).start(MESSAGES)
    with pytest.raises(Moved):
        drive_sync(made, moving(FIRST))
    assert trace.get_current_span().get_span_context().is_valid  # its call's, until handed on
    with events.handed_on(made.built):
        pass

    run, [call] = runs_and_calls(spans)
    assert "passed" == dict(run.attributes or {})["healjson.outcome"]
    assert (StatusCode.UNSET, StatusCode.UNSET) == (run.status.status_code, call.status.status_code)


def test_a_block_that_raises_ends_the_handed_spans_as_a_run_that_did_not_finish(
    spans: Telemetry,
) -> None:
    """A hand-over whose block raises before any run took the spans up ends them as a run that
    did not finish (an error), and the exception goes on."""
    made = Healer(Refund).start(MESSAGES)
    with pytest.raises(Moved):
        drive_sync(made, moving(FIRST))
    with pytest.raises(KeyError), events.handed_on(made.built):
        raise KeyError("a bug in the caller's code")

    run, [_] = runs_and_calls(spans)
    assert StatusCode.ERROR is run.status.status_code
    assert "the run did not finish" == run.status.description


def test_without_spans_a_hand_over_only_ends_the_handing_run() -> None:
    """With no OpenTelemetry SDK configured: the handing run's flow is closed, the taking run
    is a plain one, and a quick start's run (no flow) needs nothing."""
    made = Healer(Refund).start(MESSAGES)
    with pytest.raises(Moved):
        drive_sync(made, moving(FIRST))
    flow = made.built
    with events.handed_on(flow):
        taking = handed_over(
            Healer(Refund).spec, MESSAGES, None, Reply(FIRST), elapsed_s=0.0,
            started=time.monotonic(),
        )  # fmt: skip
        outcome = drive_sync(taking, answering(SECOND))
    assert isinstance(outcome, Healed)
    if flow is not None:  # a run that listens to nothing may start quick: no flow at all
        assert flow.gi_frame is None  # closed
    with events.handed_on(None):
        pass
