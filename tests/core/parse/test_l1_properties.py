"""L1's guarantees as properties over generated replies: no invented values, linear work, one
parse per attempt.

The work check counts the characters L1's passes examine (`healjson._core.parse.meter`), not
wall time, so it is exact on any machine: a pass that re-scans the reply once per candidate, or
re-parses a prefix per step, makes the count grow faster than the reply and fails it.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from pydantic import BaseModel

import healjson
from healjson import Degraded, Healer, HealPolicy, Reason
from healjson._core.parse import meter
from healjson.testing import ScriptedModel
from pinned import pinned


class Item(BaseModel):
    id: int
    name: str


class Order(BaseModel):
    items: list[Item]
    status: Literal["open", "closed"]


# --- never invent --------------------------------------------------------------------------------

_NO_JSON_SYNTAX = st.text(
    alphabet=st.characters(
        codec="utf-8",
        exclude_characters="{}[]\"'`\u201c\u201d\u2018\u2019",
        exclude_categories=("Cs",),
    ),
    max_size=300,
)


@pinned()
@given(text=_NO_JSON_SYNTAX, finish_reason=st.sampled_from([None, "stop", "length"]))
def test_text_with_no_json_looking_span_never_yields_a_value(
    text: str, finish_reason: str | None
) -> None:
    """No brackets and no quotes: no object or list target gets a value, nor does an untyped
    parse (unless the whole reply is itself a JSON scalar such as `42`)."""
    for target in (Item, Order, list[Item]):
        assert not healjson.parse(text, target, finish_reason=finish_reason).valid
        assert not healjson.validate(text, target, finish_reason=finish_reason).ok
    try:
        json.loads(text)
    except ValueError:
        assert not healjson.parse(text, finish_reason=finish_reason).ok


@pinned()
@given(
    text=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40),
    cut=st.integers(min_value=0, max_value=10_000),
    ascii_only=st.booleans(),
    padding=st.sampled_from(["", "  ", "\n"]),
    target=st.sampled_from([str, int, Literal["ONE", "TWO"], None]),
    finish_reason=st.sampled_from([None, "stop", "length"]),
)
@example(
    text="parcel is late", cut=12, ascii_only=True, padding="", target=str, finish_reason=None
)  # `"parcel is la` was healed as text, the quote included
def test_a_json_string_cut_anywhere_is_a_truncation_never_a_value(
    text: str, cut: int, ascii_only: bool, padding: str, target: Any, finish_reason: str | None
) -> None:
    """An opening quote with no closing one is a cut string: any proper prefix of a JSON string
    (the opening quote kept) is truncated, never read as text, for any target or none."""
    literal = json.dumps(text, ensure_ascii=ascii_only)
    reply = padding + literal[: 1 + cut % (len(literal) - 1)]
    result = healjson.parse(reply, target, finish_reason=finish_reason)
    assert result.truncated
    assert not result.ok
    outcome = healjson.validate(reply, target or str, finish_reason=finish_reason)
    assert isinstance(outcome, Degraded)
    assert Reason.TOKEN_TRUNCATED == outcome.reason


_FRAGMENT_TARGET = Item(id=7, name="seven")


@pinned()
@given(cut=st.integers(min_value=1, max_value=len(_FRAGMENT_TARGET.model_dump_json()) - 1))
def test_a_valid_answer_cut_anywhere_is_never_a_value(cut: int) -> None:
    """Any prefix of a valid answer is a truncation with partial data, never healed."""
    text = _FRAGMENT_TARGET.model_dump_json()[:cut]
    for finish_reason in (None, "length"):
        outcome = healjson.validate(text, Item, finish_reason=finish_reason)
        assert not outcome.ok


# --- linear work ---------------------------------------------------------------------------------

_UNITS = {
    "digits": "9",
    "word": "abc_",
    "object": '{"id": 1, "name": "x"} then ',
    "open_bracket": "[",
    "open_brace": '{"a":',
    "quote": '"',
    "escaped_quote": '\\"',
    "newline": "\n",
    "prose": "it's [1] a {b} c, ",
    "broken_pair": "'k': 'v', // c\n",
    "comment": "/* ",
    "fence": "```json\n",
    "think": '<think>{"id": 2} ',
}
_WRAPS = {
    "bare": "{}",
    "cut_value": '{{"id": 1, "name": "{}',
    "cut_number": '{{"id": {}',
    "cut_then_tail": '{{"id": {}, "more": 12',
    "in_prose": "Sure! {} Hope this helps.",
    "in_fence": "```json\n{}\n```",
    "after_reasoning": '<think>{}</think>\n{{"id": 1, "name": "x"}}',
}
_BUDGET_PER_CHAR = 30
_BUDGET_FIXED = 20_000


@pinned(max_examples=20)
@given(
    unit=st.sampled_from(sorted(_UNITS)),
    wrap=st.sampled_from(sorted(_WRAPS)),
    repeats=st.integers(min_value=1, max_value=6_000),
    finish_reason=st.sampled_from([None, "length"]),
    typed=st.booleans(),
)
def test_l1_work_is_linear_in_the_reply_for_adversarial_shapes(
    unit: str, wrap: str, repeats: int, finish_reason: str | None, typed: bool
) -> None:
    """For every generated shape, the characters examined stay within a constant times the
    reply's length, for `parse` and `validate` alike."""
    text = _WRAPS[wrap].format(_UNITS[unit] * repeats)
    target: Any = Item if typed else None
    with meter.metered() as work:
        healjson.parse(text, target, finish_reason=finish_reason)
    assert work.chars <= _BUDGET_PER_CHAR * len(text) + _BUDGET_FIXED
    with meter.metered() as work:
        healjson.validate(text, Item, finish_reason=finish_reason)
    assert work.chars <= _BUDGET_PER_CHAR * len(text) + _BUDGET_FIXED


def test_the_meter_sees_a_rescan_per_candidate() -> None:
    """The work check can fail: a thousand candidates cost less than the re-scan of the reply
    once per candidate would (the old cut-reply check did exactly that)."""
    text = '{"id": 1, "name": "x"} and ' * 1_000
    with meter.metered() as work:
        healjson.parse(text, Item, finish_reason="length")
    rescans = 64 * len(text)  # one pass over the reply for each of the 64 candidates kept
    assert work.chars < rescans / 4


# --- parse once per attempt ----------------------------------------------------------------------


def test_each_attempt_reads_its_reply_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine keeps L1's result: one L1 run per attempt, failed contracts included."""
    from healjson import Violation, contract
    from healjson._core.judge import check as _check

    calls: list[str] = []
    real = _check.read

    def counting(text: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(text)
        return real(text, *args, **kwargs)

    monkeypatch.setattr(_check, "read", counting)

    @contract(fields=("id",))
    def positive(value: Item) -> Violation | None:
        return Violation("id must be positive") if value.id <= 0 else None

    replies = [
        '{"id": 0, "name": "a"}',
        '```json\n{"id": 0, "name": "a"}\n```',
        '{"id": 2, "name": "a"}',
    ]
    model = ScriptedModel(replies)
    outcome = Healer(Item, contracts=[positive], policy=HealPolicy(max_attempts=3)).run(model, "?")
    assert outcome.ok
    assert replies == calls
    assert ("id",) == outcome.changed_fields


# --- the tolerant reader never invents -------------------------------------------------------

_JSONISH = st.text(alphabet="{}[]:,\"' \nabc123.-_tTnN/$e+()", max_size=60)


@pinned(max_examples=150)
@given(text=_JSONISH)
@example(text="//1\n1")  # a digit inside a comment is not where the value was written
@example(text='["//1", 1]')
@example(text="'\n'")  # a string that is only a raw line break keeps it (it is not layout)
@example(text="[1:]")  # found by this property when it ran random: `1:` was kept as a string
@example(text="[1:, 2]")
@example(text='{"a": :0}')  # a doubled colon: json-repair dropped it
@example(text="[{]")  # an opener with nothing after it read as `{}` (or dropped: `[]`)
@example(text='{"a": [}')
@example(text="[tru, 1]")
@example(text="{,}")  # an empty object with a stray comma is `{}`: the comma is dropped
@example(text="[1 2 3]")
def test_the_tolerant_reader_only_returns_what_the_text_holds(text: str) -> None:
    """Whatever it is given, a value from the tolerant reader accounts for the text: every key
    and scalar is written there, in order (a bare one as a whole token the bare-token rule
    reads as it), with only punctuation and comments between that writes the value's structure
    (`grounded`, the test json-repair's readings must pass too)."""
    from healjson._core.parse.lenient import _GiveUp, _Reader, grounded
    from healjson._core.sentinels import NOTHING

    try:
        value = _Reader(text, partial=False).read()
    except _GiveUp:
        value = NOTHING
    if value is not NOTHING:
        assert grounded(value, text.strip()), (text, value)
