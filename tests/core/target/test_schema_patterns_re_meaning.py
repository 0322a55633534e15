"""A schema's `pattern` keeps Python `re`'s meaning although `regex` runs it: `[` inside a
character class is a literal (no POSIX class, no nested set), a `{` that starts no quantifier is
a literal (no fuzzy match), `\\s` is `re`'s set; `patternProperties` too."""

from __future__ import annotations

import json
import re
import warnings

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import healjson
from healjson import Healed
from healjson._core.target.patterns import search
from pinned import pinned

PIECES = [
    *("[[:alpha:]]", "[[:^digit:]]", "[[a]b]", "[^[]", "[]a]", "[a[]", "[[=a=]]", "[[.a.]]"),
    *("a{e<=1}", "{", "}", "{1,2}", "{,}", "{}", "\\s", "\\S", "[\\s]", "\\[", "(?x) #[\n"),
    *("a", "b", ":", "]", "[", ".", "*", "+", "?", "|", "(", ")", "^", "$", "-", "e", "<"),
]


def re_verdict(pattern: str, text: str) -> bool | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # `re`'s FutureWarning on set-like syntax
        try:
            return re.search(pattern, text) is not None
        except re.error:
            return None


@pinned(max_examples=150)
@given(
    pattern=st.lists(st.sampled_from(PIECES), max_size=6).map("".join),
    text=st.text(alphabet="ab:[]{}=.e<1 \x1c-", max_size=8),
)
def test_a_pattern_matches_what_re_matches(pattern: str, text: str) -> None:
    """For any pattern `re` compiles, the bounded search's verdict is `re.search`'s."""
    expected = re_verdict(pattern, text)
    assume(expected is not None)
    assert search(pattern, text) is expected, (pattern, text)


# `jsonschema`'s schema check compiles the pattern with `re`, which warns on set-like syntax
@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("reference_only", [False, True])
def test_a_posix_like_class_is_a_plain_set(reference_only: bool) -> None:
    """`^[[:alpha:]]+$` refuses "abc" and accepts ":]", as `re` and `jsonschema` do."""
    schema = {"type": "string", "pattern": "^[[:alpha:]]+$"}
    if reference_only:
        schema["patternProperties"] = {}
    assert not isinstance(healjson.validate('"abc"', schema), Healed)
    assert isinstance(healjson.validate('":]"', schema), Healed)


@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_pattern_properties_keep_re_meaning() -> None:
    """A `patternProperties` name pattern with a POSIX-like class matches as `re` reads it."""
    schema = {"type": "object", "patternProperties": {"^[[:alpha:]]+$": {"type": "integer"}}}
    assert isinstance(healjson.validate(json.dumps({"abc": "x"}), schema), Healed)
    assert not isinstance(healjson.validate(json.dumps({":]": "x"}), schema), Healed)
