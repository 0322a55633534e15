"""A string's escapes read as JSON specifies, on every path: strict, tolerant, streamed.

A surrogate pair's two escapes (`\\ud83d\\ude00`, what `json.dumps` writes for any character
outside the Basic Multilingual Plane) are one character, whether the reply is valid JSON or
needs the tolerant reader (a trailing comma, single quotes).
"""

from __future__ import annotations

import json

from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Flag, Healed
from pinned import pinned


class Named(BaseModel):
    name: str


DAMAGES = {
    "trailing_comma": lambda literal: '{"name": ' + literal + ",}",
    "single_quotes": lambda literal: "{'name': '" + literal[1:-1].replace("'", "\\'") + "'}",
    "unquoted_key": lambda literal: "{name: " + literal + "}",
}


def test_an_escaped_emoji_in_a_repaired_reply_is_one_character() -> None:
    """`\\ud83d\\ude00` in a reply with a slip heals to the emoji, not to two lone halves."""
    for damage in DAMAGES.values():
        text = damage(json.dumps("smile \U0001f600"))
        outcome = healjson.validate(text, Named)
        assert isinstance(outcome, Healed), text
        assert "smile \U0001f600" == outcome.value.name
        assert {"name": "smile \U0001f600"} == healjson.parse(text).value


@pinned()
@given(
    text=st.text(st.characters(exclude_categories=("Cs",)), max_size=30),
    damage=st.sampled_from(sorted(DAMAGES)),
)
@example(text="\U0001f600", damage="trailing_comma")
@example(text="a'b\"c\\d\U0010ffff", damage="single_quotes")
def test_any_string_escaped_as_json_heals_to_itself_through_a_slip(text: str, damage: str) -> None:
    """Any string (astral characters included) written by `json.dumps` with `ensure_ascii`,
    in a reply the tolerant reader repairs, heals to the same string."""
    reply = DAMAGES[damage](json.dumps(text, ensure_ascii=True))
    outcome = healjson.validate(reply, Named)
    assert isinstance(outcome, Healed), reply
    assert text == outcome.value.name
    assert Flag.SYNTAX_REPAIRED in outcome.flags
