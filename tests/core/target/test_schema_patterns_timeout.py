"""A `pattern` search the time budget cuts short fails the whole value, wherever the pattern
sits: under `not`, `oneOf`, `anyOf`, `if` and every other applicator, on the `jsonschema-rs`
fast path and on `jsonschema` alone (never a pass a negation made of an unchecked pattern)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

import healjson
from healjson import Healed
from healjson._core.target import patterns
from pinned import pinned

SLOW = "(a|a)*c|x"  # backtracks exponentially on a run of a's, then matches the "x"
TEXT = "a" * 28 + "x"  # matches SLOW: a full search says so, after seconds

Wrap = Callable[[dict[str, Any], Any], tuple[dict[str, Any], Any]]
WRAPS: dict[str, Wrap] = {
    "not": lambda s, v: ({"not": s}, v),
    "oneOf": lambda s, v: ({"oneOf": [s, {}]}, v),
    "anyOf": lambda s, v: ({"anyOf": [s, {}]}, v),
    "allOf": lambda s, v: ({"allOf": [s]}, v),
    "if": lambda s, v: ({"if": s, "then": {}, "else": {}}, v),
    "if_then": lambda s, v: ({"if": {}, "then": s}, v),
    "if_else": lambda s, v: ({"if": {"not": {}}, "else": s}, v),
    "contains": lambda s, v: ({"type": "array", "contains": s}, [v]),
    "patternProperties": lambda s, v: ({"patternProperties": {"^k$": s}}, {"k": v}),
    "propertyNames": lambda s, v: ({"propertyNames": s}, {v: 1}),
    "dependentSchemas": lambda s, v: (
        {"dependentSchemas": {"d": {"properties": {"k": s}}}},
        {"d": 1, "k": v},
    ),
}


@pytest.fixture(autouse=True)
def short_budget() -> Iterator[None]:
    """A 10 ms budget: a slow search is cut short quickly."""
    with mock.patch.object(patterns, "PATTERN_BUDGET_S", 0.01):
        yield


def built(names: list[str], reference_only: bool) -> tuple[dict[str, Any], Any]:
    schema: dict[str, Any] = {"type": "string", "pattern": SLOW}
    value: Any = TEXT
    for name in names:
        # a property name is a string: under a container the slow search must still run
        wrap = WRAPS["allOf" if name == "propertyNames" and not isinstance(value, str) else name]
        schema, value = wrap(schema, value)
    if reference_only:  # `patternProperties` keeps `jsonschema` alone (`json_schema_fast`)
        schema = {"allOf": [schema], "patternProperties": {}}
    return schema, value


def timed_out(outcome: Any) -> bool:
    return any("could not be checked" in error.describe() for error in outcome.errors)


@pinned(max_examples=20)
@given(
    names=st.lists(st.sampled_from(sorted(WRAPS)), min_size=1, max_size=3),
    reference_only=st.booleans(),
)
def test_a_search_cut_short_under_any_applicator_is_never_healed(
    names: list[str], reference_only: bool
) -> None:
    """A slow pattern nested in any applicators fails the value with a timeout diagnostic."""
    schema, value = built(names, reference_only)
    outcome = healjson.validate(json.dumps(value), schema)
    assert not isinstance(outcome, Healed), (names, outcome)
    assert timed_out(outcome), [error.describe() for error in outcome.errors]


@pytest.mark.parametrize("reference_only", [False, True])
@pytest.mark.parametrize("name", ["not", "oneOf", "if", "contains"])
def test_a_negated_slow_pattern_is_a_timeout_not_a_pass(name: str, reference_only: bool) -> None:
    """The probe's case: a forbidden value behind `not` (or a branch) is never accepted."""
    schema, value = built([name, "not"] if name != "not" else ["not"], reference_only)
    outcome = healjson.validate(json.dumps(value), schema)
    assert not isinstance(outcome, Healed)
    assert timed_out(outcome)


def test_a_pattern_on_a_property_name_cut_short_is_a_timeout() -> None:
    """A slow `patternProperties` pattern on a property name fails the value under `not`."""
    schema = {"type": "object", "not": {"patternProperties": {SLOW: {"type": "integer"}}}}
    outcome = healjson.validate(json.dumps({TEXT: "s"}), schema)
    assert not isinstance(outcome, Healed)
    assert timed_out(outcome)


def test_fast_patterns_still_decide_under_not() -> None:
    """A pattern that finishes keeps its verdict: `not` passes a mismatch, refuses a match."""
    schema = {"type": "string", "not": {"pattern": "^x"}}
    assert isinstance(healjson.validate('"abc"', schema), Healed)
    assert not isinstance(healjson.validate('"xyz"', schema), Healed)
