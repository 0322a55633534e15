"""A schema's `pattern` sees `\\w`, `\\d`, `\\s` (negated, in a class or not), `\\b`/`\\B` and
IGNORECASE as Python `re` does, although `regex` (newer Unicode, other sets, other folding)
runs it: the characters where the two engines differ are judged as `re.search` judges them."""

from __future__ import annotations

import re
import warnings

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import healjson
from healjson import Healed
from healjson._core.target.patterns import search
from pinned import pinned

# characters `regex` classifies or folds otherwise than `re` (and plain ones beside them)
ODD = (
    "\u200d\u0301\u0345\x1c\x1f\xb2\xb3\U00010d40\u0131\u0130\u017f\u212a\u00b5\u03bc"
    "\u03c2\uff10\u0661\u00a0\u2028"
)
PLAIN = "aiksIKS_0 -]"
ESCAPES = ("\\w", "\\W", "\\d", "\\D", "\\s", "\\S")
PIECES = [
    *ESCAPES,
    *(f"[{escape}]" for escape in ESCAPES),
    *(f"[^{escape}]" for escape in ESCAPES),
    *(f"[a{escape}-]" for escape in ESCAPES),
    *(f"[^k{escape}]" for escape in ESCAPES),
    *("\\b", "\\B", "[a-z]", "[^a-z]", "i", "s", "k", "\u0131", "\u017f", "\\x49", "[\\u0130]"),
    *("+", "*", "?", "^", "$", "|", "(", ")", "(?i:", "(?-i:", "\\\\w", "[\\\\s]", "."),
]


def re_verdict(pattern: str, text: str) -> bool | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return re.search(pattern, text) is not None
        except re.error:
            return None


@pinned(max_examples=50)
@given(
    flags=st.sampled_from(["", "(?i)", "(?x)", "(?a)"]),
    pattern=st.lists(st.sampled_from(PIECES), min_size=1, max_size=5).map("".join),
    text=st.text(alphabet=ODD + PLAIN, max_size=6),
)
def test_escapes_and_folding_match_what_re_matches(flags: str, pattern: str, text: str) -> None:
    """With `re`'s sets, boundaries and flags anywhere in a pattern, the verdict is `re`'s."""
    expected = re_verdict(flags + pattern, text)
    assume(expected is not None)
    assert search(flags + pattern, text) is expected, (flags + pattern, text)


@pytest.mark.parametrize(
    ("pattern", "text", "expected"),
    [
        ("^\\w+$", "admin\u200d", False),  # a joiner is no word character in `re`
        ("^\\w+$", "e\u0301", False),  # nor a combining mark
        ("^\\w+$", "x\xb2", True),  # a superscript two is one (str.isalnum())
        ("^\\w{1,8}$", "x\u0301\u0301\u0301", False),
        ("^[^\\s]+$", "a\x1cb", False),  # `re`'s `\s` in a class: str.isspace()
        ("^[\\d]+$", "\U00010d40", False),
        ("^\\d+$", "\U00010d40", False),  # a digit of a newer Unicode than `re`'s
        ("^[A-Za-z]\\b", "a\xb2", False),  # no boundary between two word characters
        ("^\\B$", "", False),  # `re`'s `\B` never matches an empty text
        ("(?a)\\B", "", False),
        ("(?i)^[^a-z]+$", "\u0131", False),  # `re` folds dotless i with i
        ("(?i)^\u0131$", "i", True),
        ("(?i)^\\w$", "\u0345", False),  # case folding adds nothing to `\w`
    ],
)
def test_each_reported_difference_is_judged_as_re_judges_it(
    pattern: str, text: str, expected: bool
) -> None:
    """Each character where `regex` and `re` were seen to disagree gets `re`'s verdict."""
    assert re_verdict(pattern, text) is expected
    assert search(pattern, text) is expected


def test_a_schema_pattern_refuses_a_joiner_in_a_word() -> None:
    """`^\\w+$` in a schema refuses "admin" with a zero-width joiner, as `jsonschema` does."""
    schema = {"type": "string", "pattern": "^\\w+$"}
    assert not isinstance(healjson.validate('"admin\u200d"', schema), Healed)
    assert isinstance(healjson.validate('"x\xb2"', schema), Healed)


def test_pattern_properties_use_re_word_characters() -> None:
    """A `patternProperties` name pattern with `\\w` matches the names `re` matches."""
    schema = {
        "type": "object",
        "patternProperties": {"^\\w+$": {"type": "integer"}},
        "additionalProperties": False,
    }
    assert isinstance(healjson.validate('{"x\xb2": 1}', schema), Healed)
    assert not isinstance(healjson.validate('{"e\u0301": 1}', schema), Healed)
