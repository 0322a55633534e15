"""The hypothesis kit's probe fixes: strings of a plain pattern under any length bounds and long
strings drawn without a filter or a health-check failure, a truncated rendering's `expected` the
data before the cut, `ScriptedModel.remaining` never negative, and a non-deterministic contract
reported as the pack's to fix."""

from __future__ import annotations

import itertools
import re
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field, create_model

import healjson
from healjson import ContractPack, contract
from healjson.testing import ScriptedModel, ScriptExhausted, check_pack, corrupted, from_schema
from pinned import pinned

# --- strings of a plain pattern, of a length ----------------------------------------------------

_INNER = settings(max_examples=6, database=None, derandomize=True, deadline=None)


def _drawn(model: type[BaseModel]) -> list[Any]:
    """Values `from_schema(model)` draws under hypothesis' health checks (raises on a failure)."""
    found: list[Any] = []

    @_INNER
    @given(from_schema(model))
    def draw(value: Any) -> None:
        found.append(value)

    draw()
    return found


@pytest.mark.parametrize("low", [20, 24, 30, 200])
def test_a_plain_pattern_with_a_long_min_length_passes_the_health_check(low: int) -> None:
    """`min_length` of 20 or more with `^[a-z]+$` is drawn at its length, not filtered to it."""

    class Word(BaseModel):
        s: Annotated[str, Field(min_length=low, pattern=r"^[a-z]+$")]

    values = _drawn(Word)
    assert values
    assert all(len(v.s) >= low and re.fullmatch("[a-z]+", v.s) for v in values)


@pytest.mark.parametrize("bounds", [{"min_length": 5000}, {"min_length": 5000, "max_length": 5000}])
def test_a_long_min_length_without_a_pattern_passes_the_health_check(
    bounds: dict[str, int],
) -> None:
    """A string of at least 5000 characters is a short drawn run repeated to its length."""

    class Essay(BaseModel):
        s: Annotated[str, Field(**bounds)]

    values = _drawn(Essay)
    assert values
    assert all(len(v.s) >= 5000 for v in values)


_CLASSES = ("[a-z]", "[A-Z0-9]", r"\d", "x", ".", "[_-]")
_QUANTIFIERS: tuple[tuple[str, int, int | None], ...] = (
    ("", 1, 1),
    ("?", 0, 1),
    ("*", 0, None),
    ("+", 1, None),
    ("{3}", 3, 3),
    ("{2,5}", 2, 5),
    ("{4,}", 4, None),
    ("{0,40}", 0, 40),
)


@st.composite
def _patterns_and_bounds(draw: st.DrawFn) -> tuple[str, int, int | None]:
    """A plain pattern (classes and literals, quantified) and length bounds some of its
    strings meet."""
    parts = draw(
        st.lists(st.tuples(st.sampled_from(_CLASSES), st.sampled_from(_QUANTIFIERS)), max_size=4)
    )
    pattern = "^" + "".join(cls + quantifier for cls, (quantifier, _, _) in parts) + "$"
    fewest = sum(least for _, (_, least, _) in parts)
    caps = [most for _, (_, _, most) in parts]
    most = None if None in caps else sum(m for m in caps if m is not None)
    low = draw(st.integers(0, fewest + 60 if most is None else most))
    shortest = max(low, fewest)
    longest = st.none() if most is None else st.integers(shortest, most)
    high = draw(longest | st.integers(shortest, shortest + 50)) if most is None else draw(longest)
    return pattern, low, high


@settings(pinned(max_examples=12), suppress_health_check=[HealthCheck.nested_given])
@given(_patterns_and_bounds())
def test_plain_patterns_under_length_bounds_draw_only_valid_strings(
    case: tuple[str, int, int | None],
) -> None:
    """For a plain pattern and length bounds some of its strings meet, `from_schema` draws
    only strings of the pattern within the bounds, and never fails a health check."""
    pattern, low, high = case
    field = Field(min_length=low, max_length=high, pattern=pattern)
    model = create_model("Patterned", s=(Annotated[str, field], ...))
    values = _drawn(model)
    assert values
    for value in values:
        assert re.fullmatch(pattern, value.s, flags=re.DOTALL)
        assert low <= len(value.s)
        assert high is None or len(value.s) <= high


# --- a truncated rendering's expected data ------------------------------------------------------


def _partial(text: str) -> Any:
    """What healjson's truncation repair reads from a cut reply (`Degraded.partial`)."""
    outcome = healjson.validate(text, dict[str, Any] | list[Any], finish_reason="length")
    assert not outcome.ok
    return outcome.partial


@pinned(max_examples=20)
@given(corrupted({"a": [1, 2, 3], "b": "xyz"}))
def test_a_truncated_renderings_expected_data_is_the_data_before_the_cut(rendering: Any) -> None:
    """A cut rendering expects what a reader of the cut text knows (healjson's own partial
    data, `{"a": [1, 2]}` for `{"a": [1, 2,`), a whole one the whole value."""
    if rendering.recoverable:
        assert {"a": [1, 2, 3], "b": "xyz"} == rendering.expected
    else:
        assert _partial(rendering.text) == rendering.expected


_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from(["a//b", "/* x */", "{", "}]", "[1,", "True", "it's", "New York", "12", ""])
    | st.text(st.characters(exclude_characters="`"), max_size=5)
)
_DATA = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=8,
).filter(lambda data: isinstance(data, dict | list) and data)


@pinned(max_examples=25)
@given(_DATA.flatmap(corrupted))
def test_every_truncated_rendering_expects_what_healjsons_partial_reads(rendering: Any) -> None:
    """For any JSON data (without a backtick: see the report) and any corruption, a cut
    rendering's `expected` is the partial data healjson reads from it."""
    if not rendering.recoverable:
        assert _partial(rendering.text) == rendering.expected


# --- ScriptedModel.remaining ----------------------------------------------------------------------


def test_remaining_stays_at_zero_once_the_script_is_used_up() -> None:
    """Calls past the script raise `ScriptExhausted`, are recorded, and leave `remaining` at 0."""
    model = ScriptedModel(['{"a": 1}'])
    model([{"role": "user", "content": "hi"}])
    for attempt in (2, 3):
        with pytest.raises(ScriptExhausted, match=f"called {attempt} times; script has 1"):
            model([{"role": "user", "content": "again"}])
    assert (0, 3) == (model.remaining, len(model.calls))


# --- a non-deterministic contract -----------------------------------------------------------------


class Stock(BaseModel):
    qty: int = Field(ge=0, le=100)


def _raises_once(at: int) -> Any:
    """A contract that raises on its call number `at` only: on no value in particular."""
    calls = itertools.count()

    @contract(fields=("qty",))
    def once(stock: Stock) -> str | None:
        if next(calls) == at:
            raise ValueError("boom")
        return None

    return once


@pytest.mark.parametrize("at", [3, 15, 24])
def test_a_non_deterministic_contract_is_reported_as_the_packs_to_fix(at: int) -> None:
    """A contract whose verdict on a value changes from one call to the next (hypothesis'
    `FlakyFailure` while drawing schema inputs or valid values, or a value L1 read unchanged
    and the rule refused) is named as non-deterministic, the pack's to fix, never a problem
    to report to healjson."""
    pack = ContractPack(Stock, (_raises_once(at),), ({"qty": 3},), name="flaky")
    with pytest.raises(AssertionError) as info:
        check_pack(pack, max_examples=10)
    text = str(info.value)
    assert "contract `once` is non-deterministic" in text
    assert "the pack's to fix" in text
    assert "please report" not in text
    assert "validators refuse" not in text
