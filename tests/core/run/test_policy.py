"""Configuration fails at construction: a misconfigured `HealPolicy` setting (naming the field
and what it accepts), a target that names nothing."""

from __future__ import annotations

import math

import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson.testing import ScriptedServer


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


# every field with what it accepts: bad values of every kind must fail at construction
_NOT_NUMBERS = st.sampled_from(["x", "", b"1", [], {}, (), object(), True, False])
_NON_FINITE = st.sampled_from([math.nan, math.inf, -math.inf])
_BAD: dict[str, st.SearchStrategy[object]] = {
    "max_attempts": st.one_of(st.integers(max_value=0), st.floats(), _NOT_NUMBERS, st.none()),
    "example_from_repair": st.one_of(st.integers(max_value=0), st.floats(), _NOT_NUMBERS),
    "token_budget": st.one_of(st.integers(max_value=0), st.floats(), _NOT_NUMBERS),
    "max_tokens_cap": st.one_of(st.integers(max_value=0), st.floats(), _NOT_NUMBERS),
    "cost_budget": st.one_of(st.floats(max_value=0), _NON_FINITE, _NOT_NUMBERS),
    "max_tokens_growth": st.one_of(
        st.floats(max_value=0.999), _NON_FINITE, _NOT_NUMBERS, st.none()
    ),
    "deadline_s": st.one_of(st.floats(max_value=0), _NON_FINITE, _NOT_NUMBERS),
    "contract_timeout_s": st.one_of(st.integers(max_value=0), _NON_FINITE, _NOT_NUMBERS),
    "on_truncation": st.one_of(st.text(), _NOT_NUMBERS, st.none()),
    "on_refusal": st.one_of(st.text(), _NOT_NUMBERS, st.none()),
    "history": st.one_of(st.text(), _NOT_NUMBERS, st.none()),
    "on_ambiguity": st.one_of(st.text(), _NOT_NUMBERS, st.none()),
    "escalate_model": st.one_of(st.just(""), st.integers(), st.sampled_from([b"m", ["m"]])),
    "stream_abort": st.one_of(st.integers(), st.none(), st.text()),
    "provider_errors": st.one_of(
        st.just([ValueError]), st.just((ValueError, "x")), st.just((int,)), st.integers()
    ),
}
_VALID = {
    "on_truncation": {"compress", "raise_max_tokens", "both", "degrade"},
    "on_refusal": {"degrade", "retry"},
    "history": {"compact", "none"},
    "on_ambiguity": {"reask", "first", "last"},
}


@settings(max_examples=150, deadline=None)
@given(data=st.data(), name=st.sampled_from(sorted(_BAD)))
def test_every_policy_field_rejects_bad_values_naming_the_field(
    data: st.DataObject, name: str
) -> None:
    """No bad value of any field is accepted (NaN and infinity included): each raises
    ValueError at construction, naming the field and what it accepts."""
    value = data.draw(_BAD[name])
    if isinstance(value, str) and value in _VALID.get(name, set()):
        return  # text that happens to be a valid choice
    with pytest.raises(ValueError, match=rf"HealPolicy\.{name} must be .+, got "):
        healjson.HealPolicy(**{name: value})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "settings",
    [
        {"max_tokens_growth": 1},
        {"max_tokens_growth": 1.5, "max_tokens_cap": None},
        {"token_budget": None, "cost_budget": 0.5, "deadline_s": 3, "contract_timeout_s": 0.1},
        {"escalate_model": "big", "stream_abort": False, "provider_errors": (OSError,)},
    ],
)
def test_good_policy_settings_are_kept(settings: dict[str, object]) -> None:
    """Valid settings pass the checks unchanged."""
    policy = healjson.HealPolicy(**settings)  # type: ignore[arg-type]
    assert all(getattr(policy, name) == value for name, value in settings.items())


# -- a target that names nothing fails at construction, not on every reply ----------------------


class Defined(BaseModel):
    name: str


class Dangling(BaseModel):
    child: NotDefinedAnywhere  # type: ignore[name-defined]  # noqa: F821


@pytest.mark.parametrize("target", ["NoSuchModel", "no.such.Thing", "list[NoSuchItem]", Dangling])
def test_a_target_naming_nothing_raises_at_construction(target: object) -> None:
    """A string (or a forward reference) pydantic cannot resolve raises TypeError in `Healer`,
    `validate`, `@heal` and a wrapped client's `create`, before any model call."""
    calls: list[object] = []

    def model(messages: object, **params: object) -> str:
        calls.append(messages)
        return '{"name": "x"}'

    with pytest.raises(TypeError, match="healjson cannot validate against"):
        healjson.Healer(target)
    with pytest.raises(TypeError, match="healjson cannot validate against"):
        healjson.validate('{"name": "x"}', target)
    with pytest.raises(TypeError, match="healjson cannot validate against"):
        healjson.heal(target)(model)
    with (
        ScriptedServer(['{"name": "x"}']) as server,
        openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0) as client,
    ):
        with pytest.raises(TypeError, match="healjson cannot validate against"):
            healjson.wrap(client).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "?"}], response_model=target
            )
        assert [] == server.requests
    assert [] == calls


def test_a_string_pydantic_resolves_is_still_a_target() -> None:
    """Type expressions pydantic resolves by itself keep working."""
    assert [1, 2] == healjson.validate("[1, 2]", "list[int]").unwrap()
    assert isinstance(
        healjson.Healer(Defined).target.adapter.validate_python({"name": "x"}), Defined
    )
