"""`HealPolicy` refuses, where it is built, a value a run could not use: a
`max_tokens_growth` so large the grown limit overflows is a configuration mistake, not a crash
in the middle of a run."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from healjson import Healed, Healer, HealPolicy, Reply
from healjson.testing import ScriptedModel


class Item(BaseModel):
    name: str


@pytest.mark.parametrize("growth", [1e308, 101, math.inf, math.nan, 0.5])
def test_an_unusable_token_growth_is_refused_at_construction(growth: float) -> None:
    """`max_tokens_growth` outside 1..100 raises `ValueError` naming the field and the range."""
    with pytest.raises(ValueError, match=r"max_tokens_growth must be a finite number >= 1"):
        HealPolicy(max_tokens_growth=growth)


@settings(max_examples=20, deadline=None, derandomize=True)
@given(st.floats(min_value=1, max_value=100))
def test_every_accepted_growth_runs_a_truncation_repair(growth: float) -> None:
    """Any growth the policy accepts raises a cut answer's `max_tokens` without an error."""
    replies = [Reply('{"name": "a', "length"), Reply('{"name": "ab"}', "stop")]
    model = ScriptedModel(replies)
    policy = HealPolicy(
        on_truncation="raise_max_tokens", max_tokens_growth=growth, max_tokens_cap=None
    )
    outcome = Healer(Item, policy=policy).run(model, "go", max_tokens=1_000)
    assert isinstance(outcome, Healed)
    assert math.ceil(1_000 * growth) == model.calls[1].params["max_tokens"]
