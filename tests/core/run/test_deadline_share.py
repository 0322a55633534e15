"""The deadline's diagnostic says where the run's time went: a run whose model calls took
most of it is told the model was too slow; a run whose time went to the code around the calls
(a slow log handler, a slow contract) is told so, not blamed on the model."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Degraded
from healjson._core.run.budget import deadline_passed


class Item(BaseModel):
    name: str
    qty: int


MESSAGES = [{"role": "user", "content": "one item"}]


class Slow(logging.Handler):
    """A log handler that takes `seconds` per record."""

    def __init__(self, seconds: float) -> None:
        super().__init__(logging.DEBUG)
        self.seconds = seconds

    def emit(self, record: logging.LogRecord) -> None:
        time.sleep(self.seconds)


@pytest.fixture
def slow_handler() -> Iterator[Slow]:
    """healjson's stdlib logger with a handler that sleeps 0.15 s per event."""
    logger = logging.getLogger("healjson")
    handler, level = Slow(0.15), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def test_a_slow_log_handler_is_named_not_the_model(slow_handler: Slow) -> None:
    """Fast model calls and a log handler that eats the deadline: the run degrades `timeout`
    and the prescription points at the code around the calls."""
    calls: list[int] = []

    def model(messages: Any, **params: Any) -> str:
        calls.append(1)
        return '{"name": "x"}'  # never valid: the run repairs until the deadline

    healer = healjson.Healer(Item, policy=healjson.HealPolicy(deadline_s=0.4, max_attempts=20))
    outcome = healer.run(model, MESSAGES)
    assert isinstance(outcome, Degraded)
    assert "timeout" == outcome.reason
    last = outcome.errors[-1]
    assert "code around them" in last.prescription
    assert "model was too slow" not in last.prescription
    assert len(calls) < 20


def test_a_slow_model_is_still_named() -> None:
    """A model call that takes the whole deadline is still told to be the slow part."""

    def model(messages: Any, **params: Any) -> str:
        time.sleep(0.25)
        return '{"name": "x"}'

    healer = healjson.Healer(Item, policy=healjson.HealPolicy(deadline_s=0.2, max_attempts=5))
    outcome = healer.run(model, MESSAGES)
    assert isinstance(outcome, Degraded)
    assert "timeout" == outcome.reason
    assert "model was too slow" in outcome.errors[-1].prescription


@given(
    elapsed=st.floats(0.001, 1e4, allow_nan=False),
    share=st.floats(0.0, 1.0, allow_nan=False),
)
def test_the_prescription_follows_the_share_of_the_calls(elapsed: float, share: float) -> None:
    """For any elapsed time and share of it spent in model calls, the model is blamed exactly
    when its calls took at least half the run."""
    policy = healjson.HealPolicy(deadline_s=1.0)
    found = deadline_passed(policy, elapsed_s=elapsed, in_calls_s=elapsed * share)
    blames_model = "model was too slow" in found.prescription
    assert blames_model == (elapsed * share * 2 >= elapsed)
    assert "HealPolicy.deadline_s" in found.prescription
