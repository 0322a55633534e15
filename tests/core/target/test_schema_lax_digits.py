"""A JSON Schema target's lax conversions read numbers as pydantic's lax mode reads them: from
ASCII digits only. A numeric string in another script's digits (Arabic-Indic, Devanagari,
full-width, mathematical bold), which Python's `int()` reads, is no number for a schema, as it is
none for a pydantic `int` field."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from pinned import pinned

# digits of other scripts (`str.isdecimal()`), beside ASCII ones and a number's other characters
FOREIGN = st.sampled_from("٠١٢٣٤٥٦٧٨٩۳०१२३४५६७८९０１２３４５６７８９𝟎𝟏𝟐𝟑")
PLAIN = st.sampled_from("0123456789.-+e ")


class Count(BaseModel):
    n: int


class Amount(BaseModel):
    x: float


@pinned(max_examples=75)
@given(
    text=st.lists(st.one_of(FOREIGN, PLAIN), min_size=1, max_size=6)
    .map("".join)
    .filter(lambda text: any(not char.isascii() for char in text)),
    kind=st.sampled_from(["integer", "number"]),
)
def test_a_string_of_another_scripts_digits_is_no_number_for_a_schema(text: str, kind: str) -> None:
    """Whatever mix of other scripts' digits and a number's characters a string holds, a schema
    asking for a number never heals it into one, as pydantic's lax mode never reads one."""
    reply = json.dumps({"n": text})
    schema = {"type": "object", "properties": {"n": {"type": kind}}, "required": ["n"]}

    outcome = healjson.validate(reply, schema)

    assert not outcome.ok, outcome
    model = Count if kind == "integer" else Amount
    field = "n" if kind == "integer" else "x"
    assert not healjson.validate(json.dumps({field: text}), model).ok


def test_an_enum_of_numbers_takes_no_other_scripts_digit() -> None:
    """`"٢"` (Arabic-Indic two) is not the enum's 2."""
    outcome = healjson.validate(
        '{"n": "٢"}', {"type": "object", "properties": {"n": {"enum": [1, 2, 3]}}}
    )
    assert not outcome.ok


def test_ascii_digits_are_still_read_laxly() -> None:
    """The lax conversions themselves stand: `" 12 "` is the integer 12 (flagged coerced)."""
    outcome = healjson.validate(
        '{"n": " 12 "}', {"type": "object", "properties": {"n": {"type": "integer"}}}
    )
    assert outcome.ok
    assert {"n": 12} == outcome.value
