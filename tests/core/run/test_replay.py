"""`healjson._core.run.replay`: a run rebuilt from stored results equals the live run.

The Batch API runner and `healjson.ray`'s postprocess keep only each row's replies between two
model calls and rebuild the run from them; that is sound only if the engine is deterministic
given the replies. The property test drives a live run and, after every call, a replay of the
replies so far: each replay asks for exactly the request the live run sent next, and the last
one ends with the live run's outcome.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

from healjson import Degraded, Healed, Healer, HealPolicy, Reply, Violation, contract
from healjson._core.run.replay import failed, replay, replied
from healjson._core.wire.effects import ModelCall
from healjson.testing import capture_events


class Span(BaseModel):
    low: int = Field(ge=0)
    high: int


@contract(fields=("low", "high"))
def ordered(span: Span) -> Violation | None:
    if span.low > span.high:
        return Violation("low must not exceed high", fields=("low", "high"))
    return None


REPLIES = st.one_of(
    st.builds(
        lambda a, b: json.dumps({"low": a, "high": b}), st.integers(-2, 5), st.integers(-2, 5)
    ),
    st.builds(lambda a: f'Sure:\n```json\n{{"low": {a}, "high": 9}}\n```', st.integers(0, 5)),
    st.just('{"low": 1, "high": '),  # cut
    st.just("I cannot answer that."),
    st.sampled_from([Reply(None, "stop", "I won't."), Reply('{"low": 1', "length")]),
)


@settings(max_examples=30, deadline=None)
@given(replies=st.lists(REPLIES, min_size=1, max_size=4), attempts=st.integers(1, 4))
def test_a_replayed_run_asks_what_the_live_run_sent_and_ends_the_same(
    replies: list[Any], attempts: int
) -> None:
    """A run replayed from the live run's replies asks for exactly what the live run sent and
    ends with the same outcome."""
    healer = Healer(Span, contracts=[ordered], policy=HealPolicy(max_attempts=attempts))
    sent: list[list[dict[str, Any]]] = []
    script = iter(replies)

    def call(messages: list[dict[str, Any]], **params: Any) -> Any:
        sent.append(messages)
        return next(script, '{"low": 0, "high": 0}')

    live = healer.run(call, "give me a span", model="m")
    results = [replied(reply) for reply in replies[: len(sent)]]
    results += [replied('{"low": 0, "high": 0}')] * (len(sent) - len(results))
    for number, messages in enumerate(sent):
        step = healer.replay("give me a span", results[:number], model="m")
        assert isinstance(step, ModelCall)
        assert step.number == number + 1
        assert [dict(m) for m in step.messages] == messages
    final = healer.replay("give me a span", results, model="m")
    assert not isinstance(final, ModelCall)
    assert type(final) is type(live)
    assert final.calls == live.calls == len(sent)
    if isinstance(live, Healed):
        assert isinstance(final, Healed)
        assert final.value == live.value
    else:
        assert isinstance(final, Degraded)
        assert final.reason == live.reason
        assert [str(e) for e in final.errors] == [str(e) for e in live.errors]


def test_a_failed_call_is_a_degraded_run_with_its_reason() -> None:
    """A stored failed call replays as a degraded run with that failure's reason and message."""
    healer = Healer(Span)
    outcome = healer.replay("x", [failed("timeout", "the batch window ended")])
    assert isinstance(outcome, Degraded)
    assert str(outcome.reason) == "timeout"
    assert "batch window" in outcome.attempts[0].error


def test_a_reply_healjson_cannot_read_is_an_api_error() -> None:
    """A stored reply healjson cannot read is an `api_error` failure."""
    result = replied(object())
    assert result.reply is None
    assert result.failure is not None
    assert result.failure.kind == "api_error"


def test_results_beyond_the_outcome_are_ignored() -> None:
    """Stored results after the one that decides the outcome are ignored."""
    healer = Healer(Span)
    ok = replied('{"low": 1, "high": 2}')
    outcome = healer.replay("x", [ok, replied("junk"), ok])
    assert isinstance(outcome, Healed)
    assert outcome.calls == 1


def test_a_replay_emits_no_events() -> None:
    """A replayed run sends no events, where the live run did."""
    healer = Healer(Span)
    with capture_events() as live:
        healer.run(lambda messages, **params: '{"low": 1, "high": 2}', "x")
    with capture_events() as replayed:
        healer.replay("x", [replied('{"low": 1, "high": 2}')])
    assert live  # the live run is observed
    assert [] == replayed


def test_replay_closes_the_flow_it_stops() -> None:
    """A replay that stops at the next model call closes the flow it stopped."""
    closed: list[bool] = []

    def flow() -> Any:
        try:
            yield ModelCall(1, (), {})
        finally:
            closed.append(True)

    step = replay(flow(), [])
    assert isinstance(step, ModelCall)
    assert closed == [True]
