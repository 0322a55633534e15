"""A string holding a lone surrogate escape (`\\ud800` without its pair: half of a character)
is refused at its own place, with a diagnostic a model can act on (what it holds, where, what
to write instead), never as "the value could not be checked" at the root."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Degraded
from pinned import pinned


class Post(BaseModel):
    title: str
    tags: list[str] = []


@pinned(max_examples=12)
@given(
    before=st.text(st.characters(codec="utf-8"), max_size=6),
    after=st.text(st.characters(codec="utf-8"), max_size=6),
    code=st.integers(0xD800, 0xDFFF),
    in_tags=st.booleans(),
)
def test_a_lone_surrogate_is_refused_where_it_stands(
    before: str, after: str, code: int, in_tags: bool
) -> None:
    """Anywhere in a title or a tag: degraded, the diagnostic at that string's path naming the
    escape and what to write instead."""
    text = json.dumps(before)[:-1] + f"\\u{code:04x}" + json.dumps(after)[1:]
    data = f'{{"title": "T", "tags": ["ok", {text}]}}' if in_tags else f'{{"title": {text}}}'
    outcome = healjson.validate(data, Post)
    assert isinstance(outcome, Degraded)
    (error,) = outcome.errors
    assert ("tags[1]" if in_tags else "title") == error.path
    assert "lone surrogate" in error.constraint
    assert f"\\u{code:04x}" in error.constraint
    assert "could not be checked" not in error.constraint


def test_a_pair_of_escapes_is_one_character() -> None:
    """Both escapes of a surrogate pair are the character they spell: healed."""
    outcome = healjson.validate('{"title": "a\\ud83d\\ude00"}', Post)
    assert "a\U0001f600" == outcome.unwrap().title
