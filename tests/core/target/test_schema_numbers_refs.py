"""Numbers a float cannot hold, numeric strings read as bare digits, percent-encoded `$ref`s."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import ValidationError
from pydantic_core import from_json
from tests.pinned import pinned

import healjson
from healjson._core.target.target import target_for

NUMBER = {"type": "object", "properties": {"x": {"type": "number"}}, "required": ["x"]}


def _adapter(schema: dict) -> object:
    return target_for(schema).adapter


@pytest.mark.parametrize(
    ("schema", "text", "loc", "written"),
    [
        (NUMBER, '{"x": 1e400}', ("x",), "1e400"),
        ({"type": "number"}, "-1.5E+999", (), "-1.5E+999"),
        ({"type": "array", "items": {"type": "number"}}, "[1, 2e308]", (1,), "2e308"),
        (
            {"type": "object"},
            '{"a": {"b": [0, "1e400", 1' + "0" * 400 + ".5]}}",
            ("a", "b", 2),
            "1" + "0" * 400 + ".5",
        ),
    ],
)
def test_overflowing_number_is_the_values_error(schema, text, loc, written) -> None:
    """A number too large for a float is an error at its place quoting it, never infinity."""
    with pytest.raises(ValidationError) as raised:
        _adapter(schema).validate_json(text, strict=True)
    (error,) = raised.value.errors()
    assert error["loc"] == loc
    assert error["input"] == written
    assert "out of range for a 64-bit float" in error["msg"]


def test_overflowing_number_is_never_healed() -> None:
    """End to end, an overflowing number is refused (the model is asked again), never inf."""
    outcome = healjson.validate('{"x": 1e400}', NUMBER)
    assert not outcome.ok


def test_small_and_big_integers_stay_valid() -> None:
    """A long integer literal and an exponent within range are read as written."""
    big = 10**400
    assert _adapter({"type": "integer"}).validate_json(str(big), strict=True) == big
    assert _adapter({"type": "number"}).validate_json("1e300", strict=True) == 1e300
    assert _adapter({"type": "number"}).validate_json("1e-400", strict=True) == 0.0


def test_numeric_string_keeps_every_digit() -> None:
    """A long integer written as a string reads as the exact int the bare digits are."""
    outcome = healjson.validate('{"x": "12345678901234567891"}', NUMBER)
    assert outcome.ok
    assert outcome.value == {"x": 12345678901234567891}
    assert type(outcome.value["x"]) is int


def test_numeric_string_matches_enum_exactly() -> None:
    """A numeric string equals an enum's integer only when its digits do."""
    schema = {"type": "object", "properties": {"x": {"enum": [9007199254740993]}}}
    good = healjson.validate('{"x": "9007199254740993"}', schema)
    assert good.ok
    assert good.value == {"x": 9007199254740993}
    assert not healjson.validate('{"x": "9007199254740992"}', schema).ok


_LITERALS = st.one_of(
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(json.dumps),
    st.decimals(allow_nan=False, allow_infinity=False, places=3)
    .map(str)
    .filter(lambda t: "E" not in t),
)


@pinned(max_examples=75)
@given(literal=_LITERALS, kind=st.sampled_from(["number", "integer"]))
def test_string_form_reads_as_bare_form(literal: str, kind: str) -> None:
    """Under `number` and `integer`, a numeric string reads to the value its bare digits do."""
    adapter = _adapter({"type": "object", "properties": {"x": {"type": kind}}})
    bare = from_json(f'{{"x": {literal}}}')["x"]
    try:
        read = adapter.validate_json(json.dumps({"x": literal}))["x"]
    except ValidationError:
        assert kind == "integer"  # a fraction, or a form the integer reading leaves as text
        return
    assert read == bare
    if kind == "number":
        assert type(read) is type(bare)


_NAMES = st.lists(
    st.sampled_from(["a", "b", " ", "/", "~", "%", "0", "1", "é", "😀", "~0", "~1", "%2F"]),
    min_size=1,
    max_size=8,
).map("".join)


def _encoded(name: str) -> str:
    from urllib.parse import quote

    return quote(name.replace("~", "~0").replace("/", "~1"), safe="")


@pinned(max_examples=40)
@given(name=_NAMES)
def test_percent_encoded_ref_resolves(name: str) -> None:
    """A `$ref` to any definition name, escaped and percent-encoded, resolves as jsonschema does."""
    schema = {"$defs": {name: {"type": "integer"}}, "$ref": f"#/$defs/{_encoded(name)}"}
    reference = Draft202012Validator(schema)
    assert reference.is_valid(5)
    assert not reference.is_valid("x")
    adapter = _adapter(schema)
    assert adapter.validate_json("5", strict=True) == 5
    with pytest.raises(ValidationError):
        adapter.validate_json('"x"', strict=True)


def test_percent_encoded_ref_is_followed_by_the_lax_reading() -> None:
    """The lax reading follows a percent-encoded `$ref` to the definition it names."""
    schema = {
        "$defs": {"a b": {"type": "integer"}},
        "type": "object",
        "properties": {"x": {"$ref": "#/$defs/a%20b"}},
    }
    outcome = healjson.validate('{"x": "5"}', schema)
    assert outcome.ok
    assert outcome.value == {"x": 5}
