"""A `#` comment after a value ends the value: it is dropped, never read into a string or made
a number's text; and a string's closing quote is its end whenever what follows closes a
string, so a key or value that holds a comma and a colon (`","`, `":"`) is read as written."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Flag, Healed
from healjson._core.parse.lenient import lenient_loads
from pinned import pinned


class Person(BaseModel):
    name: str
    tags: list[int] = []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"name": "Bob" # the user\n, "tags": [2]}', {"name": "Bob", "tags": [2]}),
        ('{"name": Bob # the user\n, "tags": [2]}', {"name": "Bob", "tags": [2]}),
        ('{"name": "Bob" # the user\n}', {"name": "Bob", "tags": []}),
        ('{"name": "Bob", "tags": [1 # one\n, 2]}', {"name": "Bob", "tags": [1, 2]}),
    ],
)
def test_a_comment_after_a_value_is_dropped_not_read_into_it(
    text: str, expected: dict[str, Any]
) -> None:
    """The comment is gone from the value, which is exactly what the model wrote before it."""
    outcome = healjson.validate(text, Person)
    assert isinstance(outcome, Healed)
    assert expected == outcome.value.model_dump()
    assert Flag.SYNTAX_REPAIRED in outcome.flags


def test_a_hash_inside_a_word_stays_in_it() -> None:
    """`C#`, `#ff0000` and `a#b` are words: a `#` is a comment only after a space and before a
    space, another `#` or the line's end."""
    text = '{"lang": C# and F#, "color": #ff0000, "x": "a#b"}'
    assert {"lang": "C# and F#", "color": "#ff0000", "x": "a#b"} == lenient_loads(text)


def test_a_key_of_a_comma_beside_a_value_of_a_colon_is_read_as_written() -> None:
    """`{",":":"}` is a key `,` and a value `:` (read beside a Python `True`), not a string
    whose closing quote was forgotten."""
    text = '{"c": {",": ":", "\\n": ""}, "d": True}'
    assert {"c": {",": ":", "\n": ""}, "d": True} == lenient_loads(text)


_SCALARS = st.one_of(
    st.integers(-(10**6), 10**6),
    st.booleans(),
    st.none(),
    st.text(max_size=12),
    st.lists(st.integers(0, 9), max_size=3),
)
_COMMENTS = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r"), max_size=20
)


@pinned(max_examples=12)
@given(
    data=st.dictionaries(st.text(max_size=8), _SCALARS, min_size=1, max_size=5),
    comments=st.lists(_COMMENTS, min_size=5, max_size=5),
)
@example(data={"name": "Bob", "n": 1}, comments=['the "user", [x]: {y}'] * 5)
def test_any_comment_after_any_value_reads_back_the_data(
    data: dict[str, Any], comments: list[str]
) -> None:
    """JSON whose every member is followed by a `# comment` line end (the comment any text
    without a line break: quotes, commas, brackets) reads back exactly the data."""
    members = [
        f"{json.dumps(key)}: {json.dumps(value)} # {comment}\n"
        for (key, value), comment in zip(data.items(), comments, strict=False)
    ]
    assert data == lenient_loads("{" + ", ".join(members) + "}")


@pinned(max_examples=12)
@given(
    data=st.dictionaries(
        st.text(st.sampled_from(',:"{}[] \\ab'), max_size=4),
        st.text(st.sampled_from(',:"{}[] \\ab'), max_size=4),
        max_size=4,
    )
)
@example(data={",": ":", "\n": ""})
def test_keys_and_values_of_punctuation_read_as_written(data: dict[str, str]) -> None:
    """Any object of strings made of commas, colons, quotes and brackets, written as JSON with a
    Python `True` beside it (so the tolerant reader reads it), reads back exactly."""
    text = json.dumps({"c": data, "d": True}).replace(": true}", ": True}")
    assert text.endswith("True}")
    assert {"c": data, "d": True} == lenient_loads(text)
