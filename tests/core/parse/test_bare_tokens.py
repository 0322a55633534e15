"""The bare-token rule: an unquoted token is a value only when the whole token is one.

The rule (`healjson._core.parse.tokens`): a bare token — what a reply writes without quotes
where a value belongs, up to the next comma, bracket, quote, comment or line break — is a
literal spelled whole (`true`, `None`, `NaN`, any case), a number as JSON, Python or JavaScript
writes it (`.25`, `82_461_110`), or a word read as the string it is when no value could have
been meant by it. Punctuation (`-`, `$`), malformed or grouped numbers (`1.`, `1e`, `1..2`,
`1,000`), literals cut short (`tru`, `nul`), values side by side on one line (`1 2 3`) and
values fused with punctuation (`1:`, `true.`) never become data: the reply gets no value and a
syntax diagnostic, so the engine asks again. The same token is refused wherever it stands
(alone in brackets, beside a comma, in an object), on the tolerant reader's path and on
json-repair's (its reading is kept only when `grounded` by the same rule).

The properties here guard "never invent": they run pinned (derandomized) in the default suite,
each counterexample found kept as an `@example`; `HEALJSON_HYPOTHESIS_PROFILE=healjson-thorough`
runs them random with many more examples (`tests/pinned.py`).
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Degraded, Flag, Healed, Source
from healjson._core.parse.lenient import grounded
from healjson._core.parse.tokens import REFUSED, bare_value
from pinned import pinned


class Named(BaseModel):
    a: str
    b: int = 0


class Listed(BaseModel):
    a: list[str]


class Mapped(BaseModel):
    a: dict[str, Any]


# --- the examples ------------------------------------------------------------------------

REFUSED_REPLIES = [
    "[1:, 2]",
    "[1 2 3]",
    '{"a": tru, "b": 1}',
    "[nul, 1]",
    "[-, 1]",
    "[., 1]",
    "[1e, 1]",
    "[1., 1]",
    "[1..2, 1]",
    "[$, 1]",
    '{"a": 1,000}',
    "[1,000]",
    "[{]",
    '{"a": [}',
    "[tru]",
    "[tru, 1]",
    '["x", tru]',
    '{"a": 1 2}',
    '{"a": true false}',
    '{"a": true.}',
    '{"a": see: this}',
    '{"a": 007}',
    '{"a": 1/3}',
    '{"a": (1)}',
    '{"a": Non}',
    '{"a": 12 345}',
    '{"a": 0x10}',
    "[0x1F, 1]",
    '{"a": -0o17}',
    '{"a": 0b101}',
    '{"a": 0xDEAD_BEEF}',
    '{"a": truee}',
    '{"a": Flase, "b": 1}',
    "[nulll, 1]",
    '{"a": "x", "b": ture}',
]


@pytest.mark.parametrize("text", REFUSED_REPLIES)
def test_a_broken_token_gives_no_value(text: str) -> None:
    """Each broken token of the issue (and its kin) gives no value and a syntax diagnostic,
    never a string, number or empty container the model did not write."""
    result = healjson.parse(text)
    assert not result.ok, (text, result.value)
    assert None is result.value
    assert result.error is not None
    assert Source.SYNTAX is result.error.source


@pytest.mark.parametrize(
    ("text", "target"),
    [
        ('{"a": tru, "b": 1}', Named),
        ('{"a": 1:}', Named),
        ('{"a": $}', Named),
        ('{"a": nul}', Named),
        ('{"a": 1..2}', Named),
        ('{"a": [tru, "x"]}', Listed),
        ('{"a": ["x", -]}', Listed),
        ('{"a": [1 2 3]}', Listed),
        ('{"a": {"k": 1:}}', Mapped),
        ('{"a": {"k": 1e, "j": 2}}', Mapped),
        ('{"a": {"k": [{]}}', Mapped),
        ('{"a": {"k": 0x10}}', Mapped),
    ],
)
def test_a_broken_token_is_never_healed_into_a_string_field(text: str, target: Any) -> None:
    """`str`, `list[str]` and `dict[str, Any]` fields, which take any string, no longer heal a
    broken token into one: the reply is degraded as invalid output (the engine asks again)."""
    outcome = healjson.validate(text, target)
    assert isinstance(outcome, Degraded), (text, outcome)
    assert "invalid_output" == outcome.reason


def test_one_rule_wherever_the_token_stands() -> None:
    """`tru` alone in brackets, beside a comma, first or last, in an object: refused alike."""
    for text in ["[tru]", "[tru, 1]", "[1, tru]", '{"a": tru}', '{"a": 1, "b": tru}', "[[tru]]"]:
        assert not healjson.parse(text).ok, text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[1\n2\n3]", [1, 2, 3]),
        ('{"a": 82_461_110}', {"a": 82461110}),
        ("[82_461_110, 1_000.5]", [82461110, 1000.5]),
        ('{"a": .25, "b": +3, "c": -1.5e3}', {"a": 0.25, "b": 3, "c": -1500.0}),
        ('{"a": True, "b": None, "c": undefined}', {"a": True, "b": None, "c": None}),
        ('{"city": New York, "n": 1}', {"city": "New York", "n": 1}),
        ('{"a": Apollo 11, "b": e.g., "c": N/A}', {"a": "Apollo 11", "b": "e.g.", "c": "N/A"}),
        ("{a: x1, b: C++}", {"a": "x1", "b": "C++"}),
        ('{"a": [1, [2, 3}', {"a": [1, [2, 3]]}),
    ],
)  # fmt: skip
def test_a_token_that_is_a_value_as_a_whole_is_read(text: str, expected: Any) -> None:
    """Literals, numbers as JSON, Python or JavaScript write them, words, line breaks between
    values, and a closer closing a container that holds something are read, flagged
    `syntax_repaired`."""
    result = healjson.parse(text)
    assert expected == result.value
    assert Flag.SYNTAX_REPAIRED in result.flags
    assert result.ok


def test_a_nan_literal_is_read_as_written() -> None:
    """`NaN` and `-Infinity` are JavaScript's spellings of floats JSON cannot write."""
    value = healjson.parse('{"a": NaN, "b": -Infinity}').value
    assert value["a"] != value["a"]
    assert float("-inf") == value["b"]


def test_json_repair_is_held_to_the_same_rule() -> None:
    """A reading of json-repair's that keeps a broken token, merges a value past its comma, or
    adds or drops a container is not grounded, so it is never kept."""
    assert not grounded(["1:", 2], "[1:, 2]")
    assert not grounded({"a": "tru", "b": 1}, '{"a": tru, "b": 1}')
    assert not grounded({"a": "1,000"}, '{"a": 1,000}')
    assert not grounded({"a": "ipsum, sic"}, '{"a": ipsum, sic}')
    assert not grounded([], "[{]")
    assert not grounded([{"k": "v"}], '["k": "v"]')
    assert not grounded([1], "[(1)]")
    assert grounded({"city": "New York", "n": 1}, "{city: New York, n: 1}")
    assert grounded({"a": [1, 2]}, '{"a": [1, 2}')


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("true", True),
        ("FALSE", False),
        ("None", None),
        ("0", 0),
        ("-0.5", -0.5),
        ("1E5", 100000.0),
        ("1_000", 1000),
        ("alpha beta", "alpha beta"),
        ("3 apples", "3 apples"),
        ("5kg", "5kg"),
        ("tru", REFUSED),
        ("Fals", REFUSED),
        ("nul", REFUSED),
        ("undef", REFUSED),
        ("no", "no"),
        ("t", "t"),
        ("in", "in"),
        ("1e+", REFUSED),
        ("1__0", REFUSED),
        ("_1", REFUSED),
        ("00", REFUSED),
        ("2024-01-02", REFUSED),
        ("null;", REFUSED),
        ("tru 1", REFUSED),
        ("truee", REFUSED),
        ("FLASE", REFUSED),
        ("nlul", REFUSED),
        ("undefiend", REFUSED),
        ("tree", "tree"),
        ("full", "full"),
        ("noone", "noone"),
        ("treu story", "treu story"),
        ("abc:", REFUSED),
        ("rock 'n'", REFUSED),
    ],
)
def test_the_rule_token_by_token(token: str, expected: Any) -> None:
    """The bare-token rule on single tokens: a value, a word, or refused."""
    got = bare_value(token)
    assert expected is got if expected is REFUSED or expected is None else expected == got
    assert isinstance(got, bool) == isinstance(expected, bool)


# --- the property: broken tokens never become data ---------------------------------------------

# words that are no literal, no piece of one and no number, so a word rendered bare is a word
_WORDS = ("alpha", "beta", "gamma", "lamp", "red", "York", "New", "Ada", "ok", "x1", "e.g.", "C++")
_KEYS = ("id", "name", "city", "tags", "size", "a_b", "Note")
_LITERAL_TEXT = {True: "true", False: "false", None: "null"}
_CUT_LITERALS = ("tru", "Tru", "fal", "fals", "nul", "Nul", "Non", "ni", "undef", "Infin", "Na")


def _slipped(spelled: str, at: int, swap: bool) -> str:
    """`spelled` mistyped by one slip of a key at `at`: two neighbours swapped, or a letter
    doubled (a swap of two equal letters, which changes nothing, doubles instead)."""
    at %= len(spelled)
    if swap and at + 1 < len(spelled) and spelled[at] != spelled[at + 1]:
        return spelled[:at] + spelled[at + 1] + spelled[at] + spelled[at + 2 :]
    return spelled[: at + 1] + spelled[at:]


_LONE_PUNCTUATION = ("-", ".", "$", "..", "...", "?", "*", "+", "--", "\u2026")
_PUNCTUATION_SUFFIXES = (":", ".", ";", "%", "!", "-", "$", "..")
_WORD_SUFFIXES_READ = (".", "!")  # a word with these is still a word: the string as written


@dataclass
class _Piece:
    """A piece of a rendered reply: its text, its kind, and for a scalar its path in the value."""

    text: str
    kind: str  # struct, sep, number, literal, word, quoted; broken once a corruption broke it
    path: tuple[Any, ...] = ()
    broken: bool = False


def _scalars() -> st.SearchStrategy[Any]:
    words = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3).map(" ".join)
    quoted = st.text(st.sampled_from("abc xyz019-_.,:[]{}"), max_size=12)
    return st.one_of(
        st.integers(-(10**9), 10**9),
        st.floats(allow_nan=False, allow_infinity=False, width=64),
        st.sampled_from([True, False, None]),
        words,
        quoted,
    )


def _containers(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Lists and objects of `inner` (a named function: hypothesis reads a lambda's source to
    check it recurses, and misreads this one's, warning in the randomized lane)."""
    return st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(_KEYS), inner, max_size=4)


_VALUES = st.recursive(_scalars(), _containers, max_leaves=10)
_CONTAINERS = st.one_of(
    st.lists(_VALUES, min_size=1, max_size=4),
    st.dictionaries(st.sampled_from(_KEYS), _VALUES, min_size=1, max_size=4),
)


def _render(draw: st.DrawFn, value: Any, path: tuple[Any, ...], out: list[_Piece]) -> None:
    """`value` as pieces: JSON, with words, numbers, literals and keys written bare at random."""
    if isinstance(value, list):
        out.append(_Piece("[", "struct"))
        for index, item in enumerate(value):
            if index:
                out.append(_Piece(", ", "sep"))
            _render(draw, item, (*path, index), out)
        out.append(_Piece("]", "struct"))
    elif isinstance(value, dict):
        out.append(_Piece("{", "struct"))
        for index, (key, item) in enumerate(value.items()):
            if index:
                out.append(_Piece(", ", "sep"))
            bare_key = draw(st.booleans())
            out.append(_Piece((key if bare_key else json.dumps(key)) + ": ", "struct"))
            _render(draw, item, (*path, key), out)
        out.append(_Piece("}", "struct"))
    elif isinstance(value, bool) or value is None:
        spelled = _LITERAL_TEXT[value]
        spelled = (
            draw(st.sampled_from([spelled, spelled.title()])) if value is not None else spelled
        )
        out.append(_Piece(spelled, "literal", path))
    elif isinstance(value, int | float):
        out.append(_Piece(json.dumps(value), "number", path))
    elif value and all(part in _WORDS for part in value.split(" ")) and draw(st.booleans()):
        out.append(_Piece(value, "word", path))
    else:
        out.append(_Piece(json.dumps(value), "quoted", path))


def _set(value: Any, path: tuple[Any, ...], new: Any) -> None:
    for step in path[:-1]:
        value = value[step]
    value[path[-1]] = new


@st.composite
def broken_replies(draw: st.DrawFn) -> tuple[str, Any]:
    """A JSON value rendered with bare tokens and up to three corruptions, and what a principled
    reading gives: the value (the benign corruptions applied to it), or `None` when a corruption
    broke a token (then no value may be given)."""
    value = draw(_CONTAINERS)
    pieces: list[_Piece] = []
    _render(draw, value, (), pieces)
    expected = copy.deepcopy(value)
    for _ in range(draw(st.integers(0, 3))):
        index = draw(st.integers(0, len(pieces) - 1))
        piece = pieces[index]
        how = draw(st.integers(0, 3))
        if piece.kind == "literal":
            if how == 3:  # one slip of a key: `truee`, `Flase`
                piece.text = _slipped(piece.text, draw(st.integers(0, 8)), draw(st.booleans()))
            elif how < 2:
                piece.text = draw(st.sampled_from(_CUT_LITERALS))
            else:
                piece.text += draw(st.sampled_from(_PUNCTUATION_SUFFIXES))
            piece.kind = "broken"
        elif piece.kind == "number":
            digits = piece.text.lstrip("-")
            if how == 0 and digits.isdigit() and len(digits) > 3:  # Python's digit groups
                grouped = f"{int(digits):_}"
                piece.text = piece.text[: len(piece.text) - len(digits)] + grouped
                continue
            if how == 1 and digits.isdigit() and len(digits) > 3:  # any other grouping
                mark = draw(st.sampled_from([",", " ", "."]))
                head, tail = piece.text[:-3], "0" + piece.text[-2:]  # `1,034`: not `[1, 34]`
                piece.text = f"{head}{mark}{tail}" + (".000" if mark == "." else "")
            elif how == 2:
                exponent = ("e", "e+", "E-") if "e" not in piece.text else ("e", "e.")
                piece.text += draw(st.sampled_from(_PUNCTUATION_SUFFIXES + exponent + (".5.",)))
            else:
                piece.text = draw(st.sampled_from(["$", ":", "~"])) + piece.text
            piece.kind = "broken"
        elif piece.kind == "word":
            if how < 2:
                piece.text += draw(st.sampled_from(_WORD_SUFFIXES_READ))
                _set(expected, piece.path, piece.text)
            else:
                piece.text += ":"
                piece.kind = "broken"
        elif piece.kind == "sep":
            before, after = pieces[index - 1], pieces[index + 1]
            if how < 2:
                piece.text, piece.broken = "\n", False  # a comma lost at a line break
            elif before.kind in ("number", "literal") and after.kind in ("number", "literal"):
                piece.text, piece.broken = " ", True  # two values on one line: one token, none
        elif piece.kind == "struct" and piece.text in ("[", ", "):
            lone = draw(st.sampled_from(_LONE_PUNCTUATION))
            if piece.text == "[" and index + 1 < len(pieces) and pieces[index + 1].text != "]":
                piece.text, piece.broken = f"[{lone}, ", True
    reply = "".join(piece.text for piece in pieces)
    broken = any(piece.broken or piece.kind == "broken" for piece in pieces)
    json_looking = '"' in reply or "," in reply or any(p.text.endswith(": ") for p in pieces)
    if not json_looking and any(piece.kind == "word" for piece in pieces):
        broken = True  # `[alpha]`: words in brackets with nothing of JSON are prose, not read
    return reply, None if broken else expected


def _tagged(value: Any) -> Any:
    """A JSON value with booleans and floats tagged, so `True` is not `1` nor `1.0` `1`."""
    if isinstance(value, bool) or value is None:
        return ("literal", value)
    if isinstance(value, float):
        return ("float", value)
    if isinstance(value, dict):
        return {key: _tagged(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_tagged(item) for item in value]
    return value


@pinned(max_examples=150)
@given(case=broken_replies())
@example(case=("[1:, 2]", None))
@example(case=("[1 2 3]", None))
@example(case=("[1\n2\n3]", [1, 2, 3]))
@example(case=('{"a": tru, "b": 1}', None))
@example(case=("[nul, -, ., 1e, 1., 1..2, $]", None))
@example(case=('{"a": 1,000}', None))
@example(case=('{"a": 82_461_110}', {"a": 82461110}))
@example(case=("[{]", None))
@example(case=("[tru]", None))
@example(case=("[tru, 1]", None))
@example(case=('{"id": truee}', None))
@example(case=("[Flase, 1]", None))
@example(
    case=('{Note: ok!, "id": [alpha beta\ntrue]}', {"Note": "ok!", "id": ["alpha beta", True]})
)
def test_broken_tokens_never_become_data(case: tuple[str, Any]) -> None:
    """For any JSON value rendered with bare tokens (unquoted keys, words, numbers, literals)
    and up to three broken-token corruptions (a literal cut short, mistyped by one slip of a
    key or fused with punctuation, a number fused with punctuation, a malformed exponent or
    point, a grouped number, two values on one line, lone punctuation as an item, a word fused
    with a colon), `parse` gives exactly the principled reading — the value, with the
    corruptions that leave a token whole read as written (`ok!`, `1_000`, a comma lost at a
    line break) — and gives no value at all when a token is broken. So no string, number or
    literal it returns is anything but a whole token the reply wrote (or a quoted string),
    read by the rule."""
    reply, expected = case
    result = healjson.parse(reply)
    target = dict[str, Any] if reply.startswith("{") else list[Any]
    outcome = healjson.validate(reply, target)
    if expected is None:
        assert not result.ok, (reply, result.value)
        assert None is result.value
        assert isinstance(outcome, Degraded), (reply, outcome)
    else:
        assert result.ok, (reply, result.error)
        assert _tagged(expected) == _tagged(result.value), reply
        assert isinstance(outcome, Healed), (reply, outcome)
        assert _tagged(expected) == _tagged(outcome.value), reply
