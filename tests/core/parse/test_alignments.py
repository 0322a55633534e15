"""Schema-aligned safe alignments: applied only when exactly one reading fits, each flagged.

Keys in another case or with other separators, a list in a one-key wrapper or the reverse, a
single value for a one-item list or the reverse, a float with a zero fraction for an int, a
number written as a word, JSON encoded in a string field. Each is healed locally in one call;
each ambiguous variant is left for L2 to report.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field

import healjson
from healjson import Degraded, Flag, Healed
from healjson.testing import ScriptedServer, from_schema
from pinned import pinned
from sdk_calls import wrapped_create


class Answer(BaseModel):
    answer: str
    confidence: float


class Camel(BaseModel):
    model_config = ConfigDict(populate_by_name=True)
    answer_text: str = Field(alias="answerText")


class TwoSpellings(BaseModel):
    answer_text: str
    answertext: str = "x"


class Item(BaseModel):
    name: str
    qty: int


class Basket(BaseModel):
    items: list[Item]
    note: str | None = None


class TwoLists(BaseModel):
    left: list[int]
    right: list[int]


class Tagged(BaseModel):
    tags: list[str]
    count: int


class Verdict(BaseModel):
    verdict: Literal["malicious", "benign"]
    confidence: str


class Report(BaseModel):
    summary: Verdict


HEALED = {
    "key_in_another_case": ('{"Answer": "yes", "Confidence": 0.5}', Answer, Flag.KEYS_ALIGNED),
    "key_upper_case": ('{"ANSWER": "yes", "confidence": 0.5}', Answer, Flag.KEYS_ALIGNED),
    "key_with_spaces_for_an_alias": ('{"Answer Text": "yes"}', Camel, Flag.KEYS_ALIGNED),
    "key_snake_for_camel_alias": ('{"ANSWER_TEXT": "yes"}', Camel, Flag.KEYS_ALIGNED),
    "bare_list_for_the_one_list_field": ('[{"name": "a", "qty": 1}]', Basket, Flag.WRAPPED),
    "list_in_a_one_key_wrapper": ('{"items": [{"name": "a", "qty": 1}]}', list[Item], None),
    "single_object_for_a_list": ('{"name": "a", "qty": 1}', list[Item], Flag.LISTED),
    "one_item_list_for_an_object": ('[{"name": "a", "qty": 1}]', Item, Flag.UNLISTED),
    "single_string_for_a_list_field": ('{"tags": "urgent", "count": 2}', Tagged, Flag.LISTED),
    "one_item_lists_for_scalars": ('{"name": ["a"], "qty": [1]}', Item, Flag.UNLISTED),
    "float_with_zero_fraction": ('{"tags": [], "count": 2.0}', Tagged, Flag.COERCED),
    "number_word": ('{"tags": [], "count": "Seven"}', Tagged, Flag.NUMBER_WORD),
    "compound_number_word": ('{"tags": [], "count": "twenty-one"}', Tagged, Flag.NUMBER_WORD),
    "json_encoded_in_a_field": (
        '{"summary": "{\\"verdict\\": \\"malicious\\", \\"confidence\\": \\"high\\"}"}',
        Report,
        Flag.DOUBLE_ENCODED,
    ),
}


@pytest.mark.parametrize(("text", "target", "flag"), HEALED.values(), ids=HEALED.keys())
def test_a_safe_alignment_heals_and_is_flagged(text: str, target: Any, flag: Flag | None) -> None:
    """The alignment validates, in one call, and the trace says which it was."""
    outcome = healjson.validate(text, target)
    assert isinstance(outcome, Healed), outcome
    assert (flag or Flag.UNWRAPPED) in outcome.flags


NOT_APPLIED = {
    "key_two_fields_could_mean": ('{"AnswerText": "yes"}', TwoSpellings),
    "two_keys_claim_one_field": ('{"Answer": "a", "ANSWER": "b", "confidence": 1}', Answer),
    "bare_list_with_two_list_fields": ("[1, 2]", TwoLists),
    "string_holding_a_list_separator": ('{"tags": "a, b", "count": 2}', Tagged),
    "two_item_list_for_a_scalar": ('{"name": ["a", "b"], "qty": 1}', Item),
    "float_with_a_fraction": ('{"tags": [], "count": 2.5}', Tagged),
    "not_a_number_word": ('{"tags": [], "count": "several"}', Tagged),
    "number_word_with_more_words": ('{"tags": [], "count": "about seven"}', Tagged),
}


@pytest.mark.parametrize(("text", "target"), NOT_APPLIED.values(), ids=NOT_APPLIED.keys())
def test_an_ambiguous_alignment_is_not_applied(text: str, target: Any) -> None:
    """When more than one reading could fit (or none exactly), L2 reports the problem."""
    outcome = healjson.validate(text, target)
    assert isinstance(outcome, Degraded)
    assert "schema" == outcome.errors[0].source


def test_the_number_words_cover_zero_to_one_hundred() -> None:
    """Every English cardinal from zero to one hundred reads as its number, nothing else."""
    from healjson._core.parse.align import number_word

    units = "zero one two three four five six seven eight nine ten eleven twelve thirteen "
    units += "fourteen fifteen sixteen seventeen eighteen nineteen"
    words = units.split()
    tens = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
    for tens_word in tens:
        words.append(tens_word)
        words.extend(f"{tens_word}-{unit}" for unit in units.split()[1:10])
    assert list(range(100)) == [number_word(word) for word in words]
    assert 100 == number_word("one hundred")
    assert None is number_word("twenty-ten")
    assert None is number_word("a lot")


_KEY_STYLES = st.sampled_from([str.upper, str.title, str.capitalize, lambda k: f" {k} "])


@pinned()
@given(value=from_schema(Answer), restyle=_KEY_STYLES)
def test_any_key_restyling_heals_to_the_same_value(value: Answer, restyle: Any) -> None:
    """For any valid value, its keys in another case (or padded) heal back to it."""
    data = {restyle(key): item for key, item in value.model_dump().items()}
    outcome = healjson.validate(json.dumps(data), Answer)
    assert isinstance(outcome, Healed)
    assert value == outcome.value


@pinned()
@given(items=st.lists(from_schema(Item), min_size=1, max_size=4))
def test_any_list_heals_in_and_out_of_its_wrapper(items: list[Item]) -> None:
    """A list for `Basket` is wrapped, a `Basket` for `list[Item]` unwrapped: same items."""
    data = [item.model_dump() for item in items]
    wrapped = healjson.validate(json.dumps(data), Basket)
    unwrapped = healjson.validate(json.dumps({"items": data}), list[Item])
    assert items == wrapped.unwrap().items
    assert items == unwrapped.unwrap()


# --- at every depth, composed ----------------------------------------------------------------


class Scored(BaseModel):
    Answer: str
    Confidence: int


class Panel(BaseModel):
    lead: Scored | None
    scores: list[Scored]
    by_name: dict[str, Scored]


SCORED = [{"answer": "a", "confidence": 5}, {"answer": "b", "confidence": 3}]
PANEL = {
    "lead": {"answer": "a", "confidence": 5},
    "scores": SCORED,
    "by_name": {"x": {"answer": "b", "confidence": 3}},
}
AT_DEPTH = {
    "keys_in_every_item": (SCORED, list[Scored], {Flag.KEYS_ALIGNED}),
    "wrapper_and_keys_in_every_item": (
        {"answers": SCORED},
        list[Scored],
        {Flag.UNWRAPPED, Flag.KEYS_ALIGNED},
    ),
    "wrapper_keys_and_a_numeric_string": (
        {"Answers": [{"ANSWER": "a", "confidence": "5"}, {"answer": "b", "Confidence": 3}]},
        list[Scored],
        {Flag.UNWRAPPED, Flag.KEYS_ALIGNED, Flag.COERCED},
    ),
    "optional_model_list_and_dict_values": (PANEL, Panel, {Flag.KEYS_ALIGNED}),
    "nested_wrapper_lone_item_and_number_word": (
        {
            "Lead": [{"answer": "a", "confidence": "five"}],
            "scores": {"items": SCORED},
            "byName": {"x": {"ANSWER": "b", "confidence": 3}},
        },
        Panel,
        {Flag.KEYS_ALIGNED, Flag.UNLISTED, Flag.NUMBER_WORD, Flag.UNWRAPPED},
    ),
}


@pytest.mark.parametrize(("data", "target", "flags"), AT_DEPTH.values(), ids=AT_DEPTH.keys())
def test_alignments_apply_at_every_depth_and_compose(
    data: Any, target: Any, flags: set[Flag]
) -> None:
    """Every item of a list, every nested model, dict value and Optional member is aligned,
    several alignments in one reply; the flags name each one (a list of two or more objects
    with keys in another case was refused)."""
    outcome = healjson.validate(json.dumps(data), target)
    assert isinstance(outcome, Healed), outcome
    assert flags == set(outcome.flags)
    expected = [Scored(Answer="a", Confidence=5), Scored(Answer="b", Confidence=3)]
    if target is Panel:
        assert expected == [outcome.value.lead, outcome.value.by_name["x"]]
        assert expected == outcome.value.scores
    else:
        assert expected == outcome.value


# --- one call over HTTP ---------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async"])
@pytest.mark.parametrize(
    "case", ["key_in_another_case", "bare_list_for_the_one_list_field", "number_word"]
)
def test_wrap_heals_an_alignment_in_one_request(
    scripted_server: ScriptedServer, mode: Literal["sync", "async"], case: str
) -> None:
    """Through the real openai SDK: healed locally, no repair request."""
    text, target, flag = HEALED[case]
    scripted_server.push(text)
    kwargs: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": "user", "content": "Answer."}],
        "response_model": target,
    }
    outcome = wrapped_create(scripted_server, mode, **kwargs)
    assert isinstance(outcome, Healed)
    assert flag in outcome.flags
    assert 1 == len(scripted_server.requests)
