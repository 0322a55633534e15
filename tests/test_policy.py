"""`HealPolicy`: a misconfigured setting raises at construction, naming the field."""

from __future__ import annotations

import pytest

import healjson


@pytest.mark.parametrize(
    "settings",
    [
        {"token_budget": 0},
        {"on_truncation": "shrug"},
        {"on_refusal": "ignore"},
        {"history": "everything"},
        {"max_tokens_growth": 0.5},
        {"example_from_repair": 0},
    ],
)
def test_invalid_policy_settings_raise_at_construction(settings: dict[str, object]) -> None:
    """Each misconfigured HealPolicy field raises ValueError naming the field."""
    name = next(iter(settings))
    with pytest.raises(ValueError, match=name):
        healjson.HealPolicy(**settings)  # type: ignore[arg-type]
