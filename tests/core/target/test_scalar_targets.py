"""Scalar targets (`int`, `float`, `bool`, `str`, Enum, Literal, date): one rule.

A reply that is one JSON value is read as it; any other reply is read as a whole — as written,
or with the markup and punctuation around it dropped (backticks, bold and italic markers,
quotes, a trailing period), for every kind alike — and for each JSON value in it. Prose is read
for no scalar kind: a number, a date, a yes / no or a choice's name in a sentence is not picked
out. Exactly one value from those readings is the answer, flagged; several are an ambiguity,
never resolved silently; none is a diagnostic that names the scalar expected.

The properties guard "never invent" and run pinned (`tests/pinned.py`).
"""

from __future__ import annotations

import datetime
import enum
import json
from typing import Any, Literal

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import healjson
from healjson import Degraded, Flag, Healed
from healjson._core.diagnostic import Source
from healjson._core.parse import meter
from pinned import pinned


class Color(enum.Enum):
    RED = "red"
    DARK_BLUE = "dark blue"
    GREEN = "green"


Size = Literal["small", "medium", "large"]

# words with no digit, no choice name, no JSON punctuation, no number word
_WORDS = ("the", "reply", "here", "is", "what", "you", "asked", "for", "thanks", "note", "value")
prose = st.lists(st.sampled_from(_WORDS), min_size=1, max_size=8).map(" ".join)

values: dict[Any, st.SearchStrategy[Any]] = {
    int: st.integers(-(10**12), 10**12),
    float: st.floats(allow_nan=False, allow_infinity=False, width=64),
    bool: st.booleans(),
    str: st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30),
    Color: st.sampled_from(list(Color)),
    Size: st.sampled_from(["small", "medium", "large"]),
    datetime.date: st.dates(),
}
TARGETS = list(values)
# drawn from inside the tests: built once (a strategy built per draw is validated per draw)
_TARGET = st.sampled_from(TARGETS)
_KEY = st.sampled_from(["answer", "value", "result"])
_LAYOUT = st.sampled_from(["fences", "objects", "fence and object"])


def _json(target: Any, value: Any) -> str:
    data = value.value if isinstance(value, enum.Enum) else value
    return json.dumps(data.isoformat() if isinstance(data, datetime.date) else data)


@st.composite
def targets_and_values(draw: Any) -> tuple[Any, Any]:
    target = draw(_TARGET)
    return target, draw(values[target])


def _wrapped(draw: Any, target: Any, value: Any) -> str:
    """The value's JSON in a wrapper that leaves exactly one reading: as is, fenced, in a
    one-key object, and, for a target no prose fits (any but `str`), with prose around a fence
    or an object."""
    token = _json(target, value)
    key = draw(_KEY)
    wrappers = [token, f"```json\n{token}\n```", json.dumps({key: json.loads(token)})]
    if target is not str:
        before, after = draw(prose), draw(prose)
        wrappers += [
            f"{before}:\n```json\n{token}\n```\n{after}.",
            f"{before}: {json.dumps({key: json.loads(token)})} {after}",
        ]
    return draw(st.sampled_from(wrappers))


def _same(target: Any, got: Any, value: Any) -> bool:
    if target is float:
        return got == value or (got != got and value != value)
    return bool(got == value)


@pinned(max_examples=150)
@given(st.data())
def test_one_reading_heals_with_the_value(data: Any) -> None:
    """A scalar target's value in any wrapping the rule reads (fences, prose, a one-key object)
    heals to exactly that value."""
    target, value = data.draw(targets_and_values())
    text = _wrapped(data.draw, target, value)
    outcome = healjson.validate(text, target)
    assert isinstance(outcome, Healed), (text, outcome)
    assert _same(target, outcome.value, value), (text, outcome.value, value)


@pinned(max_examples=100)
@given(st.data())
def test_a_value_read_from_text_is_the_texts_own(data: Any) -> None:
    """The text as a whole (a choice in any case, a date, a string), as written or without its
    markup: flagged `text_as_value`; never a value the text does not name."""
    target = data.draw(st.sampled_from([Color, Size, datetime.date, str]))
    value = data.draw(values[target])
    name = value.value if isinstance(value, enum.Enum) else value
    spelled = name.isoformat() if isinstance(name, datetime.date) else name
    if target in (Color, Size):
        spelled = data.draw(st.sampled_from([spelled, spelled.upper(), spelled.title()]))
    if target is not str:
        text = data.draw(st.sampled_from(["{}", "**{}**", "`{}`", "{}.", "'{}'"])).format(spelled)
    else:
        text = f"  {spelled}\n"
    if target is str:  # text with no JSON in it (a reply that is JSON is read as its JSON)
        assume(text.strip() and not _is_json(text) and not set(text) & set('{}[]"`~'))
        value = text.strip()
    outcome = healjson.validate(text, target)
    assert isinstance(outcome, Healed), (text, outcome)
    assert outcome.value == value, (text, outcome.value)
    assert Flag.TEXT_AS_VALUE in outcome.flags


# each layer once (three backticks in a row would be a code fence, a reading of its own)
_MARKUP = st.lists(
    st.sampled_from(["**{}**", "*{}*", "__{}__", "`{}`", "'{}'", "{}."]), max_size=3, unique=True
)


def _text_of(value: Any) -> str:
    """The value as a model writes it in text: a number, `true`, a date, a choice's name."""
    data = value.value if isinstance(value, enum.Enum) else value
    if isinstance(data, bool):
        return "true" if data else "false"
    if isinstance(data, datetime.date):
        return data.isoformat()
    return str(data) if isinstance(data, str) else json.dumps(data)


@pytest.mark.parametrize(
    ("text", "target", "expected"),
    [
        ("42.", int, 42),
        ("`42`", int, 42),
        ("**42**", int, 42),
        ("*42*.", int, 42),
        ("'42'", int, 42),
        ("**3.5**", float, 3.5),
        ("`true`.", bool, True),
        ("**High**.", Literal["high", "low"], "high"),
        ("_2024-01-02_", datetime.date, datetime.date(2024, 1, 2)),
        ("`dark blue`", Color, Color.DARK_BLUE),
    ],
)
def test_the_issues_markup_examples_heal(text: str, target: Any, expected: Any) -> None:
    """`42.`, `` `42` `` and `**42**` heal for an int as an Enum's `**High**` does, and so does
    markup around every other scalar kind."""
    outcome = healjson.validate(text, target)
    assert isinstance(outcome, Healed), (text, outcome)
    assert expected == outcome.value


@pinned(max_examples=100)
@given(st.data())
def test_markup_around_the_only_value_is_dropped_for_every_kind(data: Any) -> None:
    """For every scalar kind but `str` (which takes the text as written), the value's text in
    any layers of bold, italic, inline-code or quote markup and with a final period heals to
    the value, flagged `text_as_value` and `syntax_repaired`."""
    target = data.draw(st.sampled_from([t for t in TARGETS if t is not str]))
    value = data.draw(values[target])
    text = _text_of(value)
    for layer in data.draw(_MARKUP):
        text = layer.format(text)
    outcome = healjson.validate(text, target)
    assert isinstance(outcome, Healed), (text, outcome)
    assert _same(target, outcome.value, value), (text, outcome.value, value)
    if text != _text_of(value):
        assert {Flag.TEXT_AS_VALUE, Flag.SYNTAX_REPAIRED} <= set(outcome.flags), text


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@pinned(max_examples=100)
@given(st.data())
def test_two_different_readings_are_never_resolved_silently(data: Any) -> None:
    """Two different scalar readings in one reply are an ambiguity error with every candidate
    kept, never a silent pick."""
    target, first = data.draw(targets_and_values())
    second = data.draw(
        values[target].filter(lambda other: _json(target, other) != _json(target, first))
    )
    one, two = _json(target, first), _json(target, second)
    layout = data.draw(_LAYOUT)
    if layout == "fences":
        text = f"```json\n{one}\n```\nor\n```json\n{two}\n```"
    elif layout == "objects":
        text = f'First {{"a": {one}}} then {{"b": {two}}}'
    else:
        text = f'```json\n{one}\n```\nthough {{"answer": {two}}}'
    result = healjson.parse(text, target)
    outcome = healjson.validate(text, target)
    assert not result.valid, (text, result.instance)
    assert isinstance(outcome, Degraded)
    assert result.error is not None
    assert result.error.source is Source.AMBIGUITY
    assert len(result.candidates) >= 2


@pinned(max_examples=100)
@given(st.data())
def test_a_value_in_prose_is_not_picked_out_for_any_kind(data: Any) -> None:
    """A number in prose may count anything (`page 1 of the report`), a choice's name may be
    denied (`not urgent`): prose is read for no scalar kind, markup or not. The diagnostic names
    the scalar expected."""
    target, value = data.draw(
        st.sampled_from([t for t in TARGETS if t is not str]).flatmap(
            lambda t: st.tuples(st.just(t), values[t])
        )
    )
    token = data.draw(st.sampled_from(["{}", "**{}**", "`{}`"])).format(_text_of(value))
    text = f"{data.draw(prose)} {token} {data.draw(prose)}."
    outcome = healjson.validate(text, target)
    assert isinstance(outcome, Degraded), (text, outcome)
    (diagnostic,) = outcome.errors
    assert diagnostic.constraint.startswith("must be "), diagnostic.constraint
    assert "a value in prose is not read" in diagnostic.constraint
    assert "no JSON object or array" not in diagnostic.constraint


def test_the_answer_is_42_names_the_integer_it_expected() -> None:
    """A sentence around an integer is refused with a constraint naming the integer expected and
    a prescription to reply with the integer alone."""
    outcome = healjson.validate("The answer is 42.", int)
    assert isinstance(outcome, Degraded)
    (diagnostic,) = outcome.errors
    assert diagnostic.constraint.startswith("must be an integer; ")
    assert diagnostic.prescription == "Reply with only an integer: no sentence or label around it."


def test_a_one_key_object_in_prose_for_str_is_two_readings() -> None:
    """For a `str` target, prose holding a one-key object is two readings (the whole text and the
    value), resolved only when `on_ambiguity` picks one."""
    text = 'The output is: {"hello": "world"}'
    result = healjson.parse(text, str)
    assert not result.valid
    assert result.error is not None
    assert result.error.source is Source.AMBIGUITY
    assert (text, "world") == result.candidates
    assert '"world" (a JSON value in the reply)' in result.error.constraint
    assert "(the whole text)" in result.error.constraint
    picked = healjson.parse(text, str, on_ambiguity="last")
    assert "world" == picked.instance
    assert Flag.AMBIGUOUS_CHOICE in picked.flags


def test_the_scalar_expected_is_said_for_each_kind() -> None:
    """The diagnostic of an unreadable scalar says which kind was expected: integer, number,
    boolean, date string, or the enum's choices."""
    said = {
        int: "an integer",
        float: "a number",
        bool: "a boolean (true or false)",
        datetime.date: "a string (date)",
        Size: 'one of "small", "medium", "large"',
        Color: 'one of "red", "dark blue", "green"',
    }
    for target, want in said.items():
        outcome = healjson.validate("I am not sure.", target)
        assert isinstance(outcome, Degraded)
        assert f"must be {want}" in outcome.errors[0].constraint, (target, outcome.errors)


def test_a_choice_named_in_prose_is_not_read() -> None:
    """`I would say Dark Blue, mostly.` and `Priority: high`-style labels give no value, as
    `The answer is 42.` gives none for an int: one rule for every scalar kind."""
    for text, target in [
        ("I would say Dark Blue, mostly.", Color),
        ("Size: large", Size),
        ("The answer is 42.", int),
        ("It is true.", bool),
    ]:
        outcome = healjson.validate(text, target)
        assert isinstance(outcome, Degraded), (text, outcome)
        assert outcome.errors[0].prescription.startswith("Reply with only ")


def test_a_str_keeps_its_markup() -> None:
    """A `str` takes the text as written: its markup is part of it."""
    outcome = healjson.validate("**Paris**.", str)
    assert isinstance(outcome, Healed)
    assert "**Paris**." == outcome.value


def test_reading_a_scalar_is_linear_in_the_reply() -> None:
    """Reading a scalar target costs work linear in the reply's length, for enums, integers,
    strings and booleans."""
    for target, unit in [(Color, "no idea at all, maybe red "), (int, "count 3 and {x} "),
                         (str, '{"a": 1} and '), (bool, "```\ntrue\n``` ")]:  # fmt: skip
        text = unit * 4_000
        with meter.metered() as work:
            healjson.parse(text, target)
        assert work.chars <= 30 * len(text) + 20_000, (target, work.chars / len(text))


def test_a_fence_of_text_is_a_reading_too() -> None:
    """A fence that holds text (not JSON): its text is a reading; with prose around it, the
    whole text is another (a `str` target: ambiguous); alone, it is the reply."""
    assert "hello world" == healjson.parse("```\nhello world\n```", str).instance
    framed = healjson.parse("Sure:\n```\nhello world\n```", str)
    assert framed.error is not None
    assert framed.error.source is Source.AMBIGUITY
    assert "hello world" in framed.candidates
    counted = healjson.validate("The count:\n```\nseven\n```", int)
    assert isinstance(counted, Healed)
    assert counted.value == 7
    assert {Flag.CODE_FENCE, Flag.TEXT_AS_VALUE, Flag.NUMBER_WORD} <= set(counted.flags)
