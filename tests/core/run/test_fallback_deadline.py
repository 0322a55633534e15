"""A fallback factory runs within what is left of the run's deadline (`deadline_s` bounds the
whole run) and `contract_timeout_s`: an async one still running past it is cancelled, the run
degrades with no fallback and a diagnostic that says so."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest
from pydantic import BaseModel

from healjson import Degraded, Healer, HealPolicy
from healjson.testing import ScriptedModel


class Answer(BaseModel):
    a: int


async def slow_fallback(raw: str | None, errors: Any) -> dict[str, int]:
    """A fallback that takes far longer than the run may."""
    await asyncio.sleep(5)
    return {"a": 0}


def run(healer: Healer[Any], mode: str) -> tuple[Any, float]:
    """The outcome of a run on a model that answers no JSON, and how long it took."""
    model = ScriptedModel(["not json"])
    started = time.monotonic()
    if mode == "sync":
        outcome = healer.run(model, "q")
    else:
        outcome = asyncio.run(healer.arun(model.acall, "q"))
    return outcome, time.monotonic() - started


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_a_slow_async_fallback_is_cancelled_at_the_deadline(mode: str) -> None:
    """With `deadline_s=0.4`, a fallback sleeping 5 s is cancelled: the run takes well under
    a second (it took 5 s), degrades, carries no fallback, and says why."""
    policy = HealPolicy(max_attempts=1, deadline_s=0.4)
    outcome, elapsed = run(Healer(Answer, fallback=slow_fallback, policy=policy), mode)
    assert elapsed < 2.0
    assert isinstance(outcome, Degraded)
    assert outcome.fallback is None
    said = outcome.errors[-1]
    assert "fallback" == said.source
    assert "deadline_s" in said.constraint
    assert "cancelled" in said.constraint


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_contract_timeout_bounds_a_fallback_too(mode: str) -> None:
    """With no deadline, `contract_timeout_s` bounds the fallback, and the diagnostic names it."""
    policy = HealPolicy(max_attempts=1, contract_timeout_s=0.2)
    outcome, elapsed = run(Healer(Answer, fallback=slow_fallback, policy=policy), mode)
    assert elapsed < 2.0
    assert isinstance(outcome, Degraded)
    assert outcome.fallback is None
    assert "contract_timeout_s" in outcome.errors[-1].constraint
